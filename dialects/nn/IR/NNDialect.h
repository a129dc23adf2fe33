//===- NNDialect.h - nn dialect ---------------------------------*- C++ -*-===//

#ifndef ZEROSBP_DIALECTS_NN_IR_NNDIALECT_H
#define ZEROSBP_DIALECTS_NN_IR_NNDIALECT_H

#include "dialects/sbp/IR/SbpDialect.h"
#include "mlir/IR/Dialect.h"

#include "dialects/nn/IR/NNDialect.h.inc"
#include "dialects/nn/IR/NNEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/IR/NNAttrs.h.inc"

namespace mlir::nn {

/// A forward op of activation-checkpointing segment N (an i64): zero-remat
/// recomputes the segment in the backward instead of keeping its
/// activations (docs/design.md#activation-checkpointing). Set by the graph
/// builder around a checkpointed module.
inline constexpr llvm::StringLiteral kCheckpointAttr = "zero.checkpoint";

} // namespace mlir::nn

#endif // ZEROSBP_DIALECTS_NN_IR_NNDIALECT_H
