//===- EnableZero.cpp - ZeroConfig from OneFlow's enable_zero -------------===//

#include "compiler/config/EnableZero.h"

#include "compiler/config/ConfigChecks.h"
#include "compiler/config/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

using namespace zerosbp;

namespace {

llvm::Error outOfRange(ConfigField field, int64_t value, int64_t lo,
                       std::optional<int64_t> hi) {
  if (hi)
    return configError(llvm::formatv("{0}: expected an integer in [{1}, {2}], "
                                     "got {3}",
                                     oneFlowName(field), lo, *hi, value));
  return configError(llvm::formatv("{0}: expected an integer >= {1}, got {2}",
                                   oneFlowName(field), lo, value));
}

} // namespace

llvm::Expected<ZeroConfig>
zerosbp::enableZero(int64_t world, bool mode, int64_t stage,
                    int64_t shardMinSize, int64_t shardRestoreLevel,
                    int64_t micsShardSize, int64_t hpzPartitionSize) {
  if (world < 1)
    return outOfRange(ConfigField::World, world, 1, std::nullopt);
  ZeroConfig config;
  config.world = world;
  if (mode) {
    if (stage < 1 || stage > 3)
      return outOfRange(ConfigField::Stage, stage, 1, 3);
    if (shardMinSize < 1)
      return outOfRange(ConfigField::ShardMinSize, shardMinSize, 1,
                        std::nullopt);
    if (shardRestoreLevel < 0 || shardRestoreLevel > 2)
      return outOfRange(ConfigField::ShardRestoreLevel, shardRestoreLevel, 0,
                        2);
    config.stage = stage;
    config.shardMinSize = shardMinSize;
    config.shardRestoreLevel = shardRestoreLevel;
    config.zero.micsShardSize = micsShardSize;
    config.zero.hpzPartitionSize = hpzPartitionSize;
  }
  config.zero.overlapComm = defaultOverlapComm(config.stage);
  // OneFlow has no persistence threshold: shard_min_size alone keeps small
  // tensors whole, parameters at stage 3 included.
  config.zero.stage3ParamPersistenceThreshold = 0;
  if (llvm::Error error = verifyConfig(config, oneFlowName))
    return std::move(error);
  return config;
}
