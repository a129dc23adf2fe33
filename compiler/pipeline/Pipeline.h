//===- Pipeline.h - the ZeRO pass pipeline from a config --------*- C++ -*-===//

#ifndef ZEROSBP_COMPILER_PIPELINE_PIPELINE_H
#define ZEROSBP_COMPILER_PIPELINE_PIPELINE_H

#include "compiler/config/ZeroConfig.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace zerosbp {

/// The global-view passes in order: their names and the options each gets.
struct PipelineStep {
  std::string pass;
  std::string options;

  /// The step in textual pass-pipeline syntax: `zero-stage{stage=2 ...}`.
  std::string textual() const {
    return options.empty() ? pass : pass + "{" + options + "}";
  }
};

/// The steps `config` asks for, or an error naming the config key that the
/// compiler cannot honour yet (shard_restore_level 0).
/// What a graph is compiled for: a training step (the loss, its backward
/// and the updates) or inference (the forward's outputs only).
enum class GraphKind { Training, Inference };

llvm::Expected<std::vector<PipelineStep>>
globalPipelineSteps(const ZeroConfig &config,
                    GraphKind kind = GraphKind::Training);

/// Adds the global-view pipeline for `config` to `pm`, a pass manager on
/// `builtin.module`.
llvm::Error buildGlobalPipeline(mlir::OpPassManager &pm,
                                const ZeroConfig &config);

/// The local-view passes for `config`, run after zero-partition:
/// zero-bucketing, zero-schedule, zero-memory-plan and its checker.
std::vector<PipelineStep> localPipelineSteps(const ZeroConfig &config);

/// zero-export-plan writing the plan to `planFile` with `config` stored in
/// it.
std::unique_ptr<mlir::Pass> createPlanExport(const ZeroConfig &config,
                                             llvm::StringRef planFile);

/// Adds zero-partition (the SPMD program of every rank), the local-view
/// passes and, when `planFile` is not empty, zero-export-plan writing the
/// plan there with `config` stored in it.
llvm::Error buildLocalPipeline(mlir::OpPassManager &pm,
                               const ZeroConfig &config,
                               llvm::StringRef planFile);

/// Registers `--zero-pipeline='stage=2 world=4 ...'` (parsePipelineOptions
/// syntax) for zero-opt.
void registerZeroPipeline();

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_PIPELINE_PIPELINE_H
