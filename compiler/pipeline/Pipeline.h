//===- Pipeline.h - the ZeRO pass pipeline from a config --------*- C++ -*-===//

#ifndef ZEROSBP_COMPILER_PIPELINE_PIPELINE_H
#define ZEROSBP_COMPILER_PIPELINE_PIPELINE_H

#include "compiler/config/ZeroConfig.h"
#include "mlir/Pass/PassManager.h"

namespace zerosbp {

/// What a graph is compiled for: a training step (the loss, its backward
/// and the updates) or inference (the forward's outputs only).
enum class GraphKind { Training, Inference };

/// Checks that this compiler can honour `config`, a resolved config
/// (resolveConfig verified its ranges): the combinations it does not build
/// (shard_restore_level 0, named in the error).
llvm::Error checkPipelineConfig(const ZeroConfig &config);

/// Adds the global-view passes `config` asks for to `pm`, a pass manager on
/// `func.func`, each created from its options struct; or returns
/// checkPipelineConfig's error.
/// `checkpointed`: the graph has activation-checkpointing segments, so
/// zero-remat runs after zero-autodiff.
llvm::Error addGlobalPasses(mlir::OpPassManager &pm, const ZeroConfig &config,
                            GraphKind kind = GraphKind::Training,
                            bool checkpointed = false);

/// Adds the global-view pipeline for `config` to `pm`, a pass manager on
/// `builtin.module`.
llvm::Error buildGlobalPipeline(mlir::OpPassManager &pm,
                                const ZeroConfig &config);

/// Adds the local-view passes for `config`, run after zero-partition, to
/// `pm` on `func.func`: zero-fuse-accumulation (training graphs),
/// zero-bucketing, zero-schedule, zero-memory-plan and its checker.
void addLocalPasses(mlir::OpPassManager &pm, const ZeroConfig &config,
                    GraphKind kind = GraphKind::Training);

/// zero-export-plan writing the plan to `planFile` with `config` stored in
/// it.
std::unique_ptr<mlir::Pass> createPlanExport(const ZeroConfig &config,
                                             llvm::StringRef planFile);

/// Adds zero-partition (the SPMD program of every rank), the local-view
/// passes and, when `planFile` is not empty, zero-export-plan writing the
/// plan there with `config` stored in it.
void buildLocalPipeline(mlir::OpPassManager &pm, const ZeroConfig &config,
                        llvm::StringRef planFile,
                        GraphKind kind = GraphKind::Training);

/// The whole compile of a `kind` graph on `pm` (on `builtin.module`): the
/// global-view passes on functions, then buildLocalPipeline's passes.
llvm::Error buildCompilePipeline(mlir::OpPassManager &pm,
                                 const ZeroConfig &config, GraphKind kind,
                                 llvm::StringRef planFile,
                                 bool checkpointed = false);

/// Registers `--zero-pipeline='stage=2 world=4 ...'` (parsePipelineOptions
/// syntax) for zero-opt.
void registerZeroPipeline();

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_PIPELINE_PIPELINE_H
