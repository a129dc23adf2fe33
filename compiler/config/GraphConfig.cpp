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
#include <utility>
#include <vector>

using namespace zerosbp;

namespace {

/// enable_zero's arguments besides `mode`: their fields, whose Python names
/// they are, and their members.
constexpr std::pair<ConfigField, int64_t EnableZeroArguments::*>
    kEnableZeroFields[] = {
        {ConfigField::Stage, &EnableZeroArguments::stage},
        {ConfigField::ShardMinSize, &EnableZeroArguments::shardMinSize},
        {ConfigField::ShardRestoreLevel,
         &EnableZeroArguments::shardRestoreLevel},
        {ConfigField::MicsShardSize, &EnableZeroArguments::micsShardSize},
        {ConfigField::HpzPartitionSize,
         &EnableZeroArguments::hpzPartitionSize}};

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
  case OptionType::Optimizer:
  case OptionType::Precision:
  case OptionType::Offload:
    if (!text)
      return wrongType("a string");
    return giveNamedValue(layer, field, *text);
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
  EnableZeroArguments zeroArguments;
  zeroArguments.mode = spec.zeroMode;
  for (const auto &[name, value] : spec.settings) {
    std::optional<ConfigField> field = fieldOfPythonName(name);
    if (!field)
      return configError("unknown config field '" + name + "'");
    const auto *argument = llvm::find_if(
        kEnableZeroFields, [&](auto entry) { return entry.first == *field; });
    if (argument != std::end(kEnableZeroFields)) {
      const int64_t *integer = std::get_if<int64_t>(&value);
      if (!spec.zeroSet || !integer)
        return configError("enable_zero: " + name + ": expected an int");
      zeroArguments.*(argument->second) = *integer;
      continue;
    }
    if (llvm::Error error = giveSetting(settings, *field, value))
      return std::move(error);
  }
  if (spec.zeroSet) {
    auto zero = readEnableZero("enable_zero", zeroArguments);
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
