//===- ConfigLayer.cpp - what one front door gave -------------------------===//

#include "compiler/config/ConfigLayer.h"

#include "compiler/config/Diagnostics.h"

using namespace zerosbp;

llvm::Expected<ZeroStage> zerosbp::stageOf(int64_t number,
                                           llvm::StringRef name) {
  if (std::optional<ZeroStage> stage = symbolizeZeroStage(number))
    return *stage;
  return configError(name + ": expected an integer in [0, 3], got " +
                     llvm::Twine(number));
}

bool zerosbp::isNamedValue(ConfigField field) {
  switch (configOption(field).type) {
  case OptionType::Optimizer:
  case OptionType::Precision:
  case OptionType::Offload:
  case OptionType::Text:
    return true;
  default:
    return false;
  }
}

llvm::Error zerosbp::giveNamedValue(ConfigLayer &layer, ConfigField field,
                                    llvm::StringRef text) {
  auto expected = [&](llvm::StringRef what) {
    return configError(layer.nameOf(field) + ": expected " + what + ", got " +
                       quoted(text));
  };
  switch (configOption(field).type) {
  case OptionType::Optimizer:
    if (std::optional<OptimizerKind> kind = symbolizeOptimizerKind(text)) {
      layer.give(field, *kind);
      return llvm::Error::success();
    }
    return expected("sgd, adam or adamw");
  case OptionType::Precision:
    if (std::optional<Precision> precision = symbolizePrecision(text)) {
      layer.give(field, *precision);
      return llvm::Error::success();
    }
    return expected("fp32, fp16 or bf16");
  case OptionType::Offload:
    if (std::optional<OffloadDevice> device = symbolizeOffloadDevice(text)) {
      layer.give(field, *device);
      return llvm::Error::success();
    }
    return expected("none, cpu or nvme");
  case OptionType::Text:
    layer.give(field, text.str());
    return llvm::Error::success();
  default:
    llvm_unreachable("not a field written as text");
  }
}

namespace {

/// Calls `visit` with `field`'s member in `config` and the same member in
/// `other`, typed.
template <typename Config, typename Other, typename Visit>
auto withMembers(Config &config, Other &other, ConfigField field, Visit visit) {
  switch (configOption(field).type) {
  case OptionType::Integer:
    return visit(*optionMember<int64_t>(config, field),
                 *optionMember<int64_t>(other, field));
  case OptionType::Stage:
    return visit(*optionMember<ZeroStage>(config, field),
                 *optionMember<ZeroStage>(other, field));
  case OptionType::Number:
    return visit(*optionMember<double>(config, field),
                 *optionMember<double>(other, field));
  case OptionType::Bool:
    return visit(*optionMember<bool>(config, field),
                 *optionMember<bool>(other, field));
  case OptionType::Optimizer:
    return visit(*optionMember<OptimizerKind>(config, field),
                 *optionMember<OptimizerKind>(other, field));
  case OptionType::Precision:
    return visit(*optionMember<Precision>(config, field),
                 *optionMember<Precision>(other, field));
  case OptionType::Offload:
    return visit(*optionMember<OffloadDevice>(config, field),
                 *optionMember<OffloadDevice>(other, field));
  case OptionType::Text:
    return visit(*optionMember<std::string>(config, field),
                 *optionMember<std::string>(other, field));
  }
  llvm_unreachable("unknown OptionType");
}

} // namespace

void zerosbp::copyField(ZeroConfig &to, const ZeroConfig &from,
                        ConfigField field) {
  withMembers(to, from, field,
              [](auto &target, const auto &source) { target = source; });
}

bool zerosbp::sameField(const ZeroConfig &a, const ZeroConfig &b,
                        ConfigField field) {
  return withMembers(a, b, field, [](const auto &left, const auto &right) {
    return left == right;
  });
}

std::string zerosbp::fieldText(const ZeroConfig &config, ConfigField field) {
  if (const int64_t *value = optionMember<int64_t>(config, field))
    return std::to_string(*value);
  if (const ZeroStage *stage = optionMember<ZeroStage>(config, field))
    return std::to_string(stageNumber(*stage));
  if (const double *value = optionMember<double>(config, field))
    return formatNumber(*value);
  if (const bool *value = optionMember<bool>(config, field))
    return *value ? "true" : "false";
  if (const OptimizerKind *kind = optionMember<OptimizerKind>(config, field))
    return stringifyOptimizerKind(*kind).str();
  if (const OffloadDevice *device = optionMember<OffloadDevice>(config, field))
    return stringifyOffloadDevice(*device).str();
  if (const std::string *text = optionMember<std::string>(config, field))
    return *text;
  return stringifyPrecision(*optionMember<Precision>(config, field)).str();
}
