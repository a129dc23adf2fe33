//===- GraphConfig.cpp - a Python graph's ZeroConfig ----------------------===//

#include "compiler/config/GraphConfig.h"

#include "compiler/config/ConfigField.h"
#include "compiler/config/DeepSpeedConfig.h"
#include "compiler/config/Diagnostics.h"
#include "compiler/config/EnableZero.h"
#include "compiler/config/PipelineOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <utility>
#include <vector>

using namespace zerosbp;

/// `base` (ZeroConfig::str() pairs) with `overrides` applied: a key given
/// again replaces its value. Changing the optimizer drops the base's
/// hyperparameters and leaving fp16 drops its loss-scaling keys, which would
/// otherwise not apply.
static std::string mergeOptions(llvm::StringRef base,
                                llvm::StringRef overrides) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  auto read = [](llvm::StringRef text) {
    Pairs pairs;
    llvm::SmallVector<llvm::StringRef> words;
    text.split(words, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef word : words) {
      auto [key, value] = word.split('=');
      pairs.emplace_back(key.str(), value.str());
    }
    return pairs;
  };
  auto find = [](Pairs &pairs, llvm::StringRef key) {
    return llvm::find_if(pairs,
                         [&](auto &entry) { return entry.first == key; });
  };
  auto erase = [&](Pairs &pairs, llvm::StringRef key) {
    auto it = find(pairs, key);
    if (it != pairs.end())
      pairs.erase(it);
  };
  Pairs pairs = read(base);
  Pairs updates = read(overrides);
  bool newOptimizer = find(updates, "optimizer") != updates.end();
  auto precision = find(updates, "precision");
  bool leavesFp16 = precision != updates.end() && precision->second != "fp16";
  for (const ConfigOption &option : configOptions())
    if ((newOptimizer && option.group == OptionGroup::Optimizer &&
         option.field != ConfigField::Optimizer) ||
        (leavesFp16 && option.when == OptionWhen::Fp16))
      erase(pairs, option.key);
  for (auto &[key, value] : updates) {
    auto it = find(pairs, key);
    if (it != pairs.end())
      it->second = value;
    else
      pairs.emplace_back(key, value);
  }
  std::string merged;
  for (auto &[key, value] : pairs)
    merged += (merged.empty() ? "" : " ") + key + "=" + value;
  return merged;
}

llvm::Expected<ZeroConfig>
zerosbp::buildGraphConfig(const GraphConfigSpec &spec, int64_t world) {
  ZeroConfig config;
  config.world = world;
  if (!spec.deepspeedJson.empty()) {
    if (spec.zeroSet)
      return configError(
          "enable_zero and set_deepspeed_config exclude each other: the "
          "DeepSpeed config's zero_optimization section sets the stage");
    // DeepSpeed's batch sizes count the data-parallel ranks of a stage.
    auto parsed =
        parseDeepSpeedConfig(spec.deepspeedJson, world, /*modelParallelSize=*/1,
                             std::max<int64_t>(spec.pipelineParallelSize, 1));
    if (!parsed)
      return configError("DeepSpeed config: " +
                         llvm::toString(parsed.takeError()));
    config = *parsed;
  } else if (spec.zeroSet) {
    auto parsed = enableZero(world, spec.zeroMode, spec.stage,
                             spec.shardMinSize, spec.shardRestoreLevel,
                             spec.micsShardSize, spec.hpzPartitionSize);
    if (!parsed)
      return configError("enable_zero: " + llvm::toString(parsed.takeError()));
    config = *parsed;
  }

  std::string overrides;
  auto set = [&](llvm::StringRef key, const llvm::Twine &value) {
    overrides += (overrides.empty() ? "" : " ") + key.str() + "=" + value.str();
  };
  if (!spec.optimizer.empty()) {
    set("optimizer", spec.optimizer);
    set("lr", formatNumber(spec.lr));
    if (spec.optimizer != "sgd") {
      set("beta1", formatNumber(spec.beta1));
      set("beta2", formatNumber(spec.beta2));
      set("eps", formatNumber(spec.eps));
      set("weight-decay", formatNumber(spec.weightDecay));
    }
  }
  if (!spec.precision.empty()) {
    if (config.precision.precision != Precision::FP32 &&
        stringifyPrecision(config.precision.precision) != spec.precision)
      return configError("enable_amp(" + spec.precision +
                         ") contradicts the DeepSpeed "
                         "config's " +
                         stringifyPrecision(config.precision.precision));
    set("precision", spec.precision);
  }
  if (spec.accumulationSteps > 0)
    set("gradient-accumulation-steps", llvm::Twine(spec.accumulationSteps));
  if (spec.clipping >= 0)
    set("gradient-clipping", formatNumber(spec.clipping));
  if (spec.pipelineParallelSize > 0)
    set("pipeline-parallel-size", llvm::Twine(spec.pipelineParallelSize));
  if (!spec.pipelineSchedule.empty())
    set("pipeline-schedule", spec.pipelineSchedule);
  if (!spec.offloadOptimizer.empty()) {
    std::optional<OffloadDevice> device =
        symbolizeOffloadDevice(spec.offloadOptimizer);
    if (!device || *device == OffloadDevice::None)
      return configError("set_offload_optimizer: device must be \"cpu\" or "
                         "\"nvme\", got \"" +
                         spec.offloadOptimizer + "\"");
    config.zero.offloadOptimizer = *device;
    config.zero.offloadOptimizerNvmePath = spec.offloadNvmePath;
    config.zero.offloadOptimizerPinMemory = spec.offloadPinMemory;
    config.zero.offloadOptimizerDelayedUpdate = spec.offloadDelayedUpdate;
    if (spec.offloadBufferCount > 0)
      config.zero.offloadOptimizerBufferCount = spec.offloadBufferCount;
  }
  if (!spec.offloadParam.empty()) {
    std::optional<OffloadDevice> device =
        symbolizeOffloadDevice(spec.offloadParam);
    if (!device || *device == OffloadDevice::None)
      return configError("set_offload_param: device must be \"cpu\" or "
                         "\"nvme\", got \"" +
                         spec.offloadParam + "\"");
    config.zero.offloadParam = *device;
    config.zero.offloadParamNvmePath = spec.offloadParamNvmePath;
  }
  if (!spec.overrides.empty())
    overrides += (overrides.empty() ? "" : " ") + spec.overrides;
  if (overrides.empty()) {
    if (llvm::Error error = config.verify())
      return std::move(error);
    return config;
  }
  // The paths are no pipeline-option text: they may hold spaces.
  std::string nvmePath = config.zero.offloadOptimizerNvmePath;
  std::string paramPath = config.zero.offloadParamNvmePath;
  ZeroConfig plain = config;
  plain.zero.offloadOptimizerNvmePath = nvmePath.empty() ? "" : "-";
  plain.zero.offloadParamNvmePath = paramPath.empty() ? "" : "-";
  auto merged = parsePipelineOptions(mergeOptions(plain.str(), overrides));
  if (!merged)
    return merged.takeError();
  if (merged->zero.offloadOptimizerNvmePath == "-")
    merged->zero.offloadOptimizerNvmePath = nvmePath;
  if (merged->zero.offloadParamNvmePath == "-")
    merged->zero.offloadParamNvmePath = paramPath;
  if (llvm::Error error = merged->verify())
    return std::move(error);
  return *merged;
}
