//===- ModelStateReport.h - memory and traffic read off the IR --*- C++ -*-===//
//
// What one rank holds and sends per training step, read off a compiled
// global-view graph (after zero-stage): model-state bytes by role, bytes sent
// per collective kind, collective counts. Needs shapes only.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_ESTIMATOR_MODELSTATEREPORT_H
#define ZEROSBP_COMPILER_ESTIMATOR_MODELSTATEREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <string>

namespace zerosbp {

struct ModelStateReport {
  /// Ψ: elements of the trainable and frozen parameters, unpadded.
  int64_t params = 0;
  int64_t world = 1;
  int64_t stage = 0;
  /// Largest per-rank bytes by role in device memory: "param", "grad",
  /// "master", "opt_state".
  std::map<std::string, int64_t> bytesPerRank;
  /// Per-rank bytes of the variables offloaded, by memory: "host", "nvme".
  std::map<std::string, int64_t> offloadedBytesPerRank;
  /// Bytes one rank sends per step, by collective kind.
  std::map<std::string, double> commBytesPerStep;
  /// Collectives per step, by kind.
  std::map<std::string, int64_t> collectives;
  /// Operations in the graph.
  int64_t ops = 0;

  int64_t modelStateBytes() const;
  double commBytes() const;
  llvm::json::Object toJson() const;
};

/// Reads the report off `func`. Parameters, master weights and optimizer
/// state are the `nn.variable`s of those roles, at their per-rank size.
/// Gradients are counted per optimizer update: at stage 2 and 3 as the
/// shard the update consumes (the full gradient dies at its reduce-scatter),
/// otherwise at the full size held until the update.
mlir::FailureOr<ModelStateReport> analyzeModelStates(mlir::func::FuncOp func);

/// Elements one rank holds of a tensor type: the largest balanced share on
/// split hierarchy axes, everything otherwise.
int64_t perRankElements(mlir::RankedTensorType type);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_ESTIMATOR_MODELSTATEREPORT_H
