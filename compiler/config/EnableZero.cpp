//===- EnableZero.cpp - ZeroConfig from OneFlow's enable_zero -------------===//

#include "compiler/config/EnableZero.h"

#include "compiler/config/ConfigChecks.h"
#include "compiler/config/Diagnostics.h"
#include "compiler/config/ResolveConfig.h"

#include "llvm/Support/FormatVariadic.h"

using namespace zerosbp;

namespace {

llvm::Error outOfRange(ConfigField field, int64_t value, int64_t lo,
                       std::optional<int64_t> hi) {
  if (hi)
    return configError(llvm::formatv("{0}: expected an integer in [{1}, {2}], "
                                     "got {3}",
                                     pythonName(field), lo, *hi, value));
  return configError(llvm::formatv("{0}: expected an integer >= {1}, got {2}",
                                   pythonName(field), lo, value));
}

} // namespace

llvm::Expected<ConfigLayer>
zerosbp::readEnableZero(llvm::StringRef source,
                        const EnableZeroArguments &arguments) {
  ConfigLayer layer(LayerKind::Config, source.str(), pythonName);
  // OneFlow has no persistence threshold: shard_min_size alone keeps small
  // tensors whole, parameters at stage 3 included.
  layer.give(ConfigField::Stage3ParamPersistenceThreshold, int64_t{0});
  if (!arguments.mode) {
    layer.give(ConfigField::Stage, ZeroStage::DataParallel);
    return std::move(layer);
  }
  if (arguments.stage < 1 || arguments.stage > 3)
    return outOfRange(ConfigField::Stage, arguments.stage, 1, 3);
  if (arguments.shardMinSize < 1)
    return outOfRange(ConfigField::ShardMinSize, arguments.shardMinSize, 1,
                      std::nullopt);
  layer.give(ConfigField::Stage, *symbolizeZeroStage(arguments.stage));
  layer.give(ConfigField::ShardMinSize, arguments.shardMinSize);
  layer.give(ConfigField::ShardRestoreLevel, arguments.shardRestoreLevel);
  layer.give(ConfigField::MicsShardSize, arguments.micsShardSize);
  layer.give(ConfigField::HpzPartitionSize, arguments.hpzPartitionSize);
  return std::move(layer);
}

llvm::Expected<ZeroConfig>
zerosbp::enableZero(int64_t world, bool mode, int64_t stage,
                    int64_t shardMinSize, int64_t shardRestoreLevel,
                    int64_t micsShardSize, int64_t hpzPartitionSize) {
  if (world < 1)
    return outOfRange(ConfigField::World, world, 1, std::nullopt);
  llvm::Expected<ConfigLayer> zero =
      readEnableZero("", {mode, stage, shardMinSize, shardRestoreLevel,
                          micsShardSize, hpzPartitionSize});
  if (!zero)
    return zero.takeError();
  ConfigLayer ranks(LayerKind::Setting, "", pythonName);
  ranks.give(ConfigField::World, world);
  return resolveConfig({*zero, ranks});
}
