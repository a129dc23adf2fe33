//===- ZeroConfig.h - the compiler's ZeRO configuration ---------*- C++ -*-===//
//
// Everything the pass pipeline needs to know about one training job: the
// data-parallel world, the ZeRO stage and its knobs, the optimizer, the
// precision and the batch sizes. Every front end (a DeepSpeed JSON config,
// OneFlow's `enable_zero`, the `key=value` string of `zero-opt
// --zero-pipeline`, zero-compile's flags, a Python graph's config methods)
// reads what it was given into a layer, and resolveConfig
// (ResolveConfig.h) merges the layers and verifies the result once.
//
// Defaults are DeepSpeed's unless a comment says otherwise; each names its
// source. "DeepSpeedZeroConfig" is deepspeed/runtime/zero/config.py,
// "DeepSpeedFP16Config" is deepspeed/runtime/precision_config.py, "FusedAdam"
// is deepspeed/ops/adam/fused_adam.py and "config-json" is DeepSpeed's
// docs/_pages/config-json.md.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_ZEROCONFIG_H
#define ZEROSBP_COMPILER_CONFIG_ZEROCONFIG_H

#include "passes/common/TrainingEnums.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zerosbp {

// The members and defaults of each struct are ConfigOptions.def's rows of
// its group, with their sources there.

struct OptimizerConfig {
#define ZERO_OPTIMIZER_OPTION(Field, Type, Member, Default, ...)               \
  Type Member = Default;
#include "compiler/config/ConfigOptions.def"

  bool operator==(const OptimizerConfig &other) const;
  bool operator!=(const OptimizerConfig &other) const {
    return !(*this == other);
  }
};

/// DeepSpeed's `fp16` / `bf16` sections. The loss-scaling fields are used
/// only with Precision::FP16.
struct PrecisionConfig {
#define ZERO_PRECISION_OPTION(Field, Type, Member, Default, ...)               \
  Type Member = Default;
#include "compiler/config/ConfigOptions.def"

  bool operator==(const PrecisionConfig &other) const;
  bool operator!=(const PrecisionConfig &other) const {
    return !(*this == other);
  }
};

/// DeepSpeed's `zero_optimization` knobs other than `stage`. Sizes count
/// elements, not bytes. `offload_optimizer` and `offload_param` are fields
/// here too (their device, NVMe path and buffers: ConfigOptions.def).
struct ZeroKnobs {
#define ZERO_KNOB_OPTION(Field, Type, Member, Default, ...)                    \
  Type Member = Default;
#include "compiler/config/ConfigOptions.def"

  bool operator==(const ZeroKnobs &other) const;
  bool operator!=(const ZeroKnobs &other) const { return !(*this == other); }
};

/// overlap_comm where a config does not say: on at stage 3 only
/// (DeepSpeedZeroConfig.overlap_comm_valid), for every front end.
inline bool defaultOverlapComm(ZeroStage stage) {
  return stage == ZeroStage::Parameters;
}

struct ZeroConfig {
#define ZERO_CONFIG_OPTION(Field, Type, Member, Default, ...)                  \
  Type Member = Default;
#include "compiler/config/ConfigOptions.def"

  OptimizerConfig optimizer;
  PrecisionConfig precision;
  ZeroKnobs zero;

  /// The data-parallel ranks, that the batch sizes count: the world over
  /// the model axes (verify() checks that they divide it).
  int64_t dataParallelSize() const {
    int64_t model = modelParallelSize * pipelineParallelSize;
    return model > 0 && world % model == 0 ? world / model : world;
  }

  /// The ranks of one pipeline stage: the world without the pipeline axis.
  int64_t stageWorld() const {
    return pipelineParallelSize > 0 && world % pipelineParallelSize == 0
               ? world / pipelineParallelSize
               : world;
  }

  /// The config as `key=value` pairs in the syntax parsePipelineOptions
  /// reads back; keys that do not apply (betas for SGD, loss scaling without
  /// fp16, batch sizes not given) are left out.
  std::string str() const;

  /// The config in DeepSpeed's layout, plus a `zerosbp` object holding
  /// `world`, `shard_min_size` and `shard_restore_level`. Without that
  /// object it is a DeepSpeed config that parseDeepSpeedConfig accepts.
  llvm::json::Value toJson() const;

  /// Checks every field's range and the batch-size rule; the error names
  /// the field by its parsePipelineOptions key.
  llvm::Error verify() const;

  bool operator==(const ZeroConfig &other) const;
  bool operator!=(const ZeroConfig &other) const { return !(*this == other); }
};

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_ZEROCONFIG_H
