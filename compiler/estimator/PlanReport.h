//===- PlanReport.h - what the local-view passes planned --------*- C++ -*-===//
//
// Read off a planned function (zero-bucketing, zero-schedule,
// zero-memory-plan): the buckets, how much communication has compute to
// hide behind, and the arena with its peaks by role. zero-compile adds it
// to its report.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_ESTIMATOR_PLANREPORT_H
#define ZEROSBP_COMPILER_ESTIMATOR_PLANREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <string>
#include <vector>

namespace zerosbp {

struct PlanReport {
  /// Bucket sizes in elements (full-size side), by collective kind, in
  /// issue order.
  std::map<std::string, std::vector<int64_t>> buckets;
  /// Bytes one rank sends per step, and the part of it whose collective has
  /// compute scheduled between its start and its wait.
  double commBytes = 0;
  double overlappedBytes = 0;
  /// commBytes by collective kind: what the runtime sends, after stage 3's
  /// reuse of forward-gathered parameters in the backward.
  std::map<std::string, double> commBytesByKind;
  /// commBytes by the hierarchy axis its collectives run over: on a
  /// [nodes, m] placement, axis 0 across nodes and axis 1 within them.
  std::vector<double> commBytesByAxis;
  /// The arena (the planned peak per rank), the lower bound (most bytes
  /// live at once) and the peaks by role.
  int64_t arenaBytes = 0;
  int64_t lowerBoundBytes = 0;
  int64_t modelStateBytes = 0;
  std::map<std::string, int64_t> peakBytesByRole;

  int64_t bucketCount() const;
  llvm::json::Object toJson() const;
};

/// The report of a function that went through zero-memory-plan.
mlir::FailureOr<PlanReport> analyzePlan(mlir::func::FuncOp func);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_ESTIMATOR_PLANREPORT_H
