//===- SbpInterfaces.h - legal SBP signatures of an op ----------*- C++ -*-===//

#ifndef ZEROSBP_DIALECTS_SBP_IR_SBPINTERFACES_H
#define ZEROSBP_DIALECTS_SBP_IR_SBPINTERFACES_H

#include "dialects/sbp/IR/SbpDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::sbp {

/// One way an op can run on one hierarchy axis: the SBP of each operand and
/// each result, in order.
struct SbpSignature {
  llvm::SmallVector<SbpAttr, 4> operands;
  llvm::SmallVector<SbpAttr, 2> results;

  bool operator==(const SbpSignature &other) const {
    return operands == other.operands && results == other.results;
  }
  /// `(S(0), B) -> S(0)`.
  std::string str() const;
};

/// Checks that an op implementing SbpOpInterface, whose operand and result
/// types all carry `#sbp.global`, shares one placement and uses a legal
/// signature on every hierarchy axis. Ops with unannotated tensors pass:
/// SBP propagation has not run yet.
LogicalResult verifySbpSignature(Operation *op);

} // namespace mlir::sbp

#include "dialects/sbp/IR/SbpInterfaces.h.inc"

#endif // ZEROSBP_DIALECTS_SBP_IR_SBPINTERFACES_H
