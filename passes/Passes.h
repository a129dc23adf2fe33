//===- Passes.h - ZeroSBP passes --------------------------------*- C++ -*-===//

#ifndef ZEROSBP_PASSES_PASSES_H
#define ZEROSBP_PASSES_PASSES_H

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/sbp/IR/SbpDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "passes/common/TrainingEnums.h"

namespace zerosbp {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace zerosbp

#endif // ZEROSBP_PASSES_PASSES_H
