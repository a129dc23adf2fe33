//===- EnableZero.h - ZeroConfig from OneFlow's enable_zero -----*- C++ -*-===//
//
// OneFlow's `nn.Graph.config.enable_zero(mode=True, *, stage=2,
// shard_min_size=1024, shard_restore_level=1)`
// (python/oneflow/nn/graph/graph_config.py), with OneFlow's defaults and
// checks: with `mode` false ZeRO is off (stage 0) and the other arguments
// are not looked at; otherwise the stage is 1 to 3 and shard_min_size is at
// least 1. OneFlow does not check shard_restore_level; here it must be 0, 1
// or 2 (see ZeroConfig::shardRestoreLevel for their meaning).
//
// OneFlow adds the optimizer to the graph separately, so the result carries
// ZeroConfig's default optimizer (Adam) and fp32; callers overwrite them.
// overlap_comm follows DeepSpeed's rule (on for stage 3 only), which
// resolveConfig applies.
// stage3_param_persistence_threshold is 0: OneFlow has no such knob, and
// shard_min_size alone decides which parameters stay whole.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_ENABLEZERO_H
#define ZEROSBP_COMPILER_CONFIG_ENABLEZERO_H

#include "compiler/config/ConfigLayer.h"
#include "compiler/config/ZeroConfig.h"

namespace zerosbp {

/// enable_zero's arguments, at OneFlow's defaults; 0 (off) for the two
/// that are not OneFlow's.
struct EnableZeroArguments {
  bool mode = true;
  int64_t stage = 2;
  int64_t shardMinSize = 1024;
  int64_t shardRestoreLevel = 1;
  int64_t micsShardSize = 0;
  int64_t hpzPartitionSize = 0;
};

/// The Config layer of `enable_zero(arguments)`, whose messages `source`
/// prefixes; the arguments' own ranges (OneFlow's) are checked here,
/// without the prefix.
llvm::Expected<ConfigLayer>
readEnableZero(llvm::StringRef source, const EnableZeroArguments &arguments);

/// The config for `enable_zero(mode, stage=stage, shard_min_size=
/// shardMinSize, shard_restore_level=shardRestoreLevel, mics_shard_size=
/// micsShardSize, hpz_partition_size=hpzPartitionSize)` on `world` ranks;
/// the last two are not OneFlow's (MiCS and ZeRO++ hpZ,
/// docs/design.md#hierarchical-zero). Errors name the argument as OneFlow
/// spells it, e.g. `stage: expected an integer in [1, 3], got 0`.
llvm::Expected<ZeroConfig>
enableZero(int64_t world, bool mode = EnableZeroArguments().mode,
           int64_t stage = EnableZeroArguments().stage,
           int64_t shardMinSize = EnableZeroArguments().shardMinSize,
           int64_t shardRestoreLevel = EnableZeroArguments().shardRestoreLevel,
           int64_t micsShardSize = EnableZeroArguments().micsShardSize,
           int64_t hpzPartitionSize = EnableZeroArguments().hpzPartitionSize);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_ENABLEZERO_H
