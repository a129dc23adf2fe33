//===- GraphConfigSpec.h - a graph's config as its front end set it -*- C++
//-*-===//
//
// What the Python nn.Graph's config methods (enable_zero,
// set_deepspeed_config, enable_amp, add_optimizer, ...) set, in plain C++
// types: the pybind11 module, built with RTTI, includes it while LLVM and
// MLIR are built without. buildGraphConfig (GraphConfig.h) turns it into a
// ZeroConfig.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_GRAPHCONFIGSPEC_H
#define ZEROSBP_COMPILER_CONFIG_GRAPHCONFIGSPEC_H

#include <cstdint>
#include <string>

namespace zerosbp {

/// How the graph is configured, as the Python config methods set it.
struct GraphConfigSpec {
  /// A DeepSpeed JSON config; empty when none was given.
  std::string deepspeedJson;
  /// OneFlow's enable_zero(mode, stage, shard_min_size, shard_restore_level)
  /// when `zeroSet`.
  bool zeroSet = false;
  bool zeroMode = true;
  int64_t stage = 2;
  int64_t shardMinSize = 1024;
  int64_t shardRestoreLevel = 1;
  /// MiCS's group size, an argument enable_zero adds to OneFlow's; 0: flat.
  int64_t micsShardSize = 0;
  /// ZeRO++ hpZ's group size, another argument added to OneFlow's; 0: off.
  int64_t hpzPartitionSize = 0;
  /// The optimizer added with add_optimizer: sgd, adam or adamw; empty keeps
  /// the DeepSpeed config's.
  std::string optimizer;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  /// enable_amp: fp16 or bf16; empty when not called.
  std::string precision;
  /// set_gradient_accumulation_steps; 0 when not called.
  int64_t accumulationSteps = 0;
  /// set_gradient_clipping; negative when not called.
  double clipping = -1;
  /// set_pipeline_parallel_size: the pipeline stages; 0 when not called.
  int64_t pipelineParallelSize = 0;
  /// set_pipeline_schedule: 1f1b or gpipe; empty when not called.
  std::string pipelineSchedule;
  /// Further `key=value` pairs (zero-opt --zero-pipeline syntax) applied
  /// last, e.g. "overlap-comm=true reduce-bucket-size=1000".
  std::string overrides;
  /// set_activation_memory_budget: bytes of planned activations per rank
  /// that the checkpointed modules must fit (the fewest are kept); 0: none.
  int64_t activationMemoryBudget = 0;
  /// set_offload_optimizer: "cpu" or "nvme"; empty when not called. The
  /// path goes into the config as it is (it may hold spaces); buffer count
  /// 0 keeps the default.
  std::string offloadOptimizer;
  std::string offloadNvmePath;
  bool offloadPinMemory = false;
  int64_t offloadBufferCount = 0;
  /// ZeRO-Offload's one-step delayed parameter update.
  bool offloadDelayedUpdate = false;
  /// set_offload_param: "cpu" or "nvme"; empty when not called.
  std::string offloadParam;
  std::string offloadParamNvmePath;
};

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_GRAPHCONFIGSPEC_H
