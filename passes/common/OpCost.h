//===- OpCost.h - what an op costs to run -----------------------*- C++ -*-===//
//
// The planned cost of an op, one rule for every pass that weighs compute
// (zero-remat's report, the pipeline's stage balance and bubble).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_COMMON_OPCOST_H
#define ZEROSBP_PASSES_COMMON_OPCOST_H

#include "mlir/IR/Operation.h"

namespace zerosbp {

/// 2 m n k for a matmul, batched or with an epilogue (k the contracted
/// extent, m n the result's elements), the two products of an attention,
/// else 0.
double matmulFlops(mlir::Operation *op);

} // namespace zerosbp

#endif // ZEROSBP_PASSES_COMMON_OPCOST_H
