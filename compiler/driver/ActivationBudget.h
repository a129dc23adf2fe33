//===- ActivationBudget.h - checkpoints chosen for a memory budget -*- C++
//-*-===//
//
// The activation memory budget (docs/design.md#activation-checkpointing):
// of a graph's checkpointable segments (`zero.checkpoint = N`), keep the
// fewest, in segment order, for which the planned activation peak per rank
// fits the budget; the rest are not checkpointed. The choice compiles
// copies of the module without a plan file.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_DRIVER_ACTIVATIONBUDGET_H
#define ZEROSBP_COMPILER_DRIVER_ACTIVATIONBUDGET_H

#include "compiler/driver/CompileDriver.h"

namespace zerosbp {

/// Chooses the segments of `module` to checkpoint for `budget` bytes of
/// planned activations per rank, drops the marks of the others from
/// `module`, and returns the report of the choice: the budget, the
/// segments kept, the planned peak with them and with none, and the number
/// of compiles.
llvm::Expected<llvm::json::Object>
chooseCheckpointsForBudget(mlir::ModuleOp module, const ZeroConfig &config,
                           int64_t budget);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_DRIVER_ACTIVATIONBUDGET_H
