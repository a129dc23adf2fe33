//===- GraphConfig.cpp - a Python graph's ZeroConfig ----------------------===//

#include "compiler/config/GraphConfig.h"

#include "compiler/config/ConfigLayer.h"
#include "compiler/config/DeepSpeedConfig.h"
#include "compiler/config/Diagnostics.h"
#include "compiler/config/EnableZero.h"
#include "compiler/config/PipelineOptions.h"
#include "compiler/config/ResolveConfig.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <vector>

using namespace zerosbp;

namespace {

/// enable_zero's arguments besides `mode`, by their Python names.
constexpr ConfigField kEnableZeroFields[] = {
    ConfigField::Stage, ConfigField::ShardMinSize,
    ConfigField::ShardRestoreLevel, ConfigField::MicsShardSize,
    ConfigField::HpzPartitionSize};

std::optional<ConfigField> fieldOfPythonName(llvm::StringRef name) {
  for (const ConfigOption &option : configOptions())
    if (!option.python.empty() && option.python == name)
      return option.field;
  return std::nullopt;
}

/// Gives `field` the Python value `value` in `layer`.
llvm::Error giveSetting(ConfigLayer &layer, ConfigField field,
                        const GraphConfigSpec::Value &value) {
  auto wrongType = [&](llvm::StringRef expected) {
    return configError(pythonName(field) + ": expected " + expected);
  };
  const int64_t *integer = std::get_if<int64_t>(&value);
  const double *number = std::get_if<double>(&value);
  const bool *flag = std::get_if<bool>(&value);
  const std::string *text = std::get_if<std::string>(&value);
  switch (configOption(field).type) {
  case OptionType::Integer:
    if (!integer)
      return wrongType("an int");
    layer.give(field, *integer);
    return llvm::Error::success();
  case OptionType::Stage: {
    if (!integer)
      return wrongType("an int");
    llvm::Expected<ZeroStage> stage = stageOf(*integer, pythonName(field));
    if (!stage)
      return stage.takeError();
    layer.give(field, *stage);
    return llvm::Error::success();
  }
  case OptionType::Number:
    if (!integer && !number)
      return wrongType("a number");
    layer.give(field, number ? *number : static_cast<double>(*integer));
    return llvm::Error::success();
  case OptionType::Bool:
    if (!flag)
      return wrongType("True or False");
    layer.give(field, *flag);
    return llvm::Error::success();
  case OptionType::Text:
    if (!text)
      return wrongType("a string");
    layer.give(field, *text);
    return llvm::Error::success();
  case OptionType::Optimizer:
    if (std::optional<OptimizerKind> kind =
            text ? symbolizeOptimizerKind(*text) : std::nullopt) {
      layer.give(field, *kind);
      return llvm::Error::success();
    }
    return wrongType("sgd, adam or adamw");
  case OptionType::Precision:
    if (std::optional<Precision> precision =
            text ? symbolizePrecision(*text) : std::nullopt) {
      layer.give(field, *precision);
      return llvm::Error::success();
    }
    return wrongType("fp32, fp16 or bf16");
  case OptionType::Offload:
    if (std::optional<OffloadDevice> device =
            text ? symbolizeOffloadDevice(*text) : std::nullopt) {
      layer.give(field, *device);
      return llvm::Error::success();
    }
    return wrongType("\"cpu\" or \"nvme\"");
  }
  llvm_unreachable("unknown OptionType");
}

} // namespace

llvm::Expected<ZeroConfig>
zerosbp::buildGraphConfig(const GraphConfigSpec &spec, int64_t world) {
  std::vector<ConfigLayer> layers;
  if (!spec.deepspeedJson.empty()) {
    if (spec.zeroSet)
      return configError(
          "enable_zero and set_deepspeed_config exclude each other: the "
          "DeepSpeed config's zero_optimization section sets the stage");
    auto config = readDeepSpeedConfig(spec.deepspeedJson, "DeepSpeed config");
    if (!config)
      return configError("DeepSpeed config: " +
                         llvm::toString(config.takeError()));
    layers.push_back(std::move(*config));
  }

  ConfigLayer settings(LayerKind::Setting, "", pythonName);
  settings.give(ConfigField::World, world);
  // enable_zero's arguments at OneFlow's defaults, unless given.
  int64_t zeroArguments[] = {2, 1024, 1, 0, 0};
  for (const auto &[name, value] : spec.settings) {
    std::optional<ConfigField> field = fieldOfPythonName(name);
    if (!field)
      return configError("unknown config field '" + name + "'");
    const ConfigField *argument = llvm::find(kEnableZeroFields, *field);
    if (argument != std::end(kEnableZeroFields)) {
      const int64_t *integer = std::get_if<int64_t>(&value);
      if (!spec.zeroSet || !integer)
        return configError("enable_zero: " + name + ": expected an int");
      zeroArguments[argument - std::begin(kEnableZeroFields)] = *integer;
      continue;
    }
    if (llvm::Error error = giveSetting(settings, *field, value))
      return std::move(error);
  }
  if (spec.zeroSet) {
    auto zero = readEnableZero("enable_zero", spec.zeroMode, zeroArguments[0],
                               zeroArguments[1], zeroArguments[2],
                               zeroArguments[3], zeroArguments[4]);
    if (!zero)
      return configError("enable_zero: " + llvm::toString(zero.takeError()));
    layers.push_back(std::move(*zero));
  }
  layers.push_back(std::move(settings));
  if (!spec.overrides.empty()) {
    auto overrides =
        readPipelineOptions(spec.overrides, LayerKind::Override, "");
    if (!overrides)
      return overrides.takeError();
    layers.push_back(std::move(*overrides));
  }
  return resolveConfig(layers);
}
