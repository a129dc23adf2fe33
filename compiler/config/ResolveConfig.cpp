//===- ResolveConfig.cpp - one config from the front doors' layers --------===//

#include "compiler/config/ResolveConfig.h"

#include "compiler/config/ConfigChecks.h"
#include "compiler/config/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>

using namespace zerosbp;

namespace {

class Resolver {
public:
  llvm::Expected<ZeroConfig> resolve(llvm::ArrayRef<ConfigLayer> layers);

private:
  llvm::Error apply(const ConfigLayer &layer);
  void drop(ConfigField field);
  llvm::Error checkApplies() const;

  /// The layer whose value `field` holds; null for the default.
  const ConfigLayer *giverOf(ConfigField field) const {
    return givers[static_cast<size_t>(field)];
  }
  /// The layer that spells messages about `field`: its giver, or the
  /// config whose default it kept; a Setting's fields are spelled by key.
  const ConfigLayer *spellerOf(ConfigField field) const {
    const ConfigLayer *layer = giverOf(field) ? giverOf(field) : base;
    return layer && layer->kind() != LayerKind::Setting ? layer : nullptr;
  }
  /// How messages about `field` spell `other`, and their prefix.
  llvm::StringRef nameIn(ConfigField field, ConfigField other) const {
    const ConfigLayer *layer = spellerOf(field);
    return layer ? layer->nameOf(other) : optionName(other);
  }
  llvm::StringRef sourceOf(ConfigField field) const {
    const ConfigLayer *layer = spellerOf(field);
    return layer ? layer->source() : llvm::StringRef();
  }
  llvm::Error fieldError(ConfigField field, const llvm::Twine &problem) const {
    return configError(
        withSource(sourceOf(field), nameIn(field, field) + ": " + problem));
  }

  ZeroConfig config;
  const ZeroConfig defaults;
  std::array<const ConfigLayer *, kNumConfigFields> givers = {};
  const ConfigLayer *base = nullptr;
};

llvm::Expected<ZeroConfig>
Resolver::resolve(llvm::ArrayRef<ConfigLayer> layers) {
  for (const ConfigLayer &layer : layers)
    if (llvm::Error error = apply(layer))
      return std::move(error);

  if (!giverOf(ConfigField::OverlapComm))
    config.zero.overlapComm = defaultOverlapComm(config.stage);
  if (llvm::Error error = checkApplies())
    return std::move(error);
  if (config.world < 1)
    return fieldError(
        ConfigField::World,
        llvm::formatv("expected an integer >= 1, got {0}", config.world));

  auto givenValue = [&](ConfigField field) -> std::optional<int64_t> {
    if (!giverOf(field))
      return std::nullopt;
    return *optionMember<int64_t>(config, field);
  };
  // The batch fields' messages are spelled as the first given one's layer.
  ConfigField batchSubject = ConfigField::TrainBatchSize;
  for (ConfigField field :
       {ConfigField::TrainBatchSize, ConfigField::TrainMicroBatchSizePerGpu,
        ConfigField::GradientAccumulationSteps})
    if (giverOf(field)) {
      batchSubject = field;
      break;
    }
  auto batchName = [&](ConfigField field) {
    return nameIn(batchSubject, field);
  };
  if (llvm::Error error = resolveBatchSizes(
          config, givenValue(ConfigField::TrainBatchSize),
          givenValue(ConfigField::TrainMicroBatchSizePerGpu),
          givenValue(ConfigField::GradientAccumulationSteps), batchName))
    return configError(
        withSource(sourceOf(batchSubject), llvm::toString(std::move(error))));

  auto name = [&](ConfigField subject, ConfigField field) {
    return nameIn(subject, field);
  };
  auto source = [&](ConfigField subject) { return sourceOf(subject); };
  if (llvm::Error error = verifyConfig(config, FieldNaming{name, source}))
    return std::move(error);
  return config;
}

llvm::Error Resolver::apply(const ConfigLayer &layer) {
  if (layer.kind() == LayerKind::Config) {
    if (base)
      return configError(base->source() + " and " + layer.source() +
                         " exclude each other; give one");
    base = &layer;
  }
  const ZeroConfig &values = layer.values();
  // A new optimizer's hyperparameters are the layer's or the defaults, and
  // leaving fp16 leaves its loss scaling: an earlier value would not apply.
  bool newOptimizer = layer.gives(ConfigField::Optimizer);
  bool leavesFp16 = layer.gives(ConfigField::Precision) &&
                    values.precision.precision != Precision::FP16;
  for (const ConfigOption &option : configOptions())
    if (!layer.gives(option.field) &&
        ((newOptimizer && option.group == OptionGroup::Optimizer) ||
         (leavesFp16 && option.when == OptionWhen::Fp16)))
      drop(option.field);

  for (const ConfigOption &option : configOptions()) {
    ConfigField field = option.field;
    if (!layer.gives(field))
      continue;
    const ConfigLayer *giver = giverOf(field);
    if (layer.kind() == LayerKind::Setting && giver &&
        giver->kind() == LayerKind::Config &&
        !sameField(config, values, field)) {
      return configError(withSource(
          giver->source(),
          giver->nameOf(field) + " " + fieldText(config, field) +
              " != " + layer.nameOf(field) + " " + fieldText(values, field)));
    }
    copyField(config, values, field);
    givers[static_cast<size_t>(field)] = &layer;
  }
  return llvm::Error::success();
}

void Resolver::drop(ConfigField field) {
  copyField(config, defaults, field);
  givers[static_cast<size_t>(field)] = nullptr;
}

/// A given field that has no effect with the others (Adam's betas with
/// SGD, loss scaling without fp16, ...) is a mistake, not a no-op.
llvm::Error Resolver::checkApplies() const {
  for (const ConfigOption &option : configOptions())
    if (giverOf(option.field) && !optionApplies(option, config))
      return fieldError(option.field, unusedReason(option.when));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<ZeroConfig>
zerosbp::resolveConfig(llvm::ArrayRef<ConfigLayer> layers) {
  return Resolver().resolve(layers);
}
