//===- PipelineOptions.cpp - ZeroConfig from key=value options ------------===//

#include "compiler/config/PipelineOptions.h"

#include "compiler/config/ConfigAccess.h"
#include "compiler/config/ConfigChecks.h"
#include "compiler/config/ConfigField.h"
#include "compiler/config/Diagnostics.h"
#include "compiler/config/ResolveConfig.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cmath>

using namespace zerosbp;

namespace {

constexpr size_t kNumFields = kNumConfigFields;

ConfigField fieldAt(size_t index) { return static_cast<ConfigField>(index); }

/// `'value'`, escaped onto one line.
std::string quote(llvm::StringRef value) {
  std::string result = "'";
  llvm::raw_string_ostream os(result);
  llvm::printEscapedString(value, os);
  os << "'";
  return result;
}

std::optional<int64_t> parseInteger(llvm::StringRef text) {
  int64_t integer;
  if (!text.getAsInteger(10, integer))
    return integer;
  double number;
  if (text.getAsDouble(number) || !std::isfinite(number) ||
      std::trunc(number) != number || number >= 9223372036854775808.0 ||
      number < -9223372036854775808.0)
    return std::nullopt;
  return static_cast<int64_t>(number);
}

std::optional<double> parseNumber(llvm::StringRef text) {
  double number;
  if (text.getAsDouble(number))
    return std::nullopt;
  return number;
}

std::optional<bool> parseBool(llvm::StringRef text) {
  if (text == "true")
    return true;
  if (text == "false")
    return false;
  return std::nullopt;
}

class OptionsParser {
public:
  OptionsParser(LayerKind kind, llvm::StringRef source)
      : layer(kind, source.str(), optionName), config(layer.mutableValues()) {}

  llvm::Expected<ConfigLayer> parse(llvm::StringRef options);

private:
  llvm::Error parsePair(llvm::StringRef pair);
  llvm::Error setField(ConfigField field, llvm::StringRef value);

  ConfigLayer layer;
  ZeroConfig &config;
};

llvm::Expected<ConfigLayer> OptionsParser::parse(llvm::StringRef options) {
  llvm::SmallVector<llvm::StringRef> pairs;
  llvm::SplitString(options, pairs);
  for (llvm::StringRef pair : pairs)
    if (llvm::Error error = parsePair(pair))
      return std::move(error);
  return std::move(layer);
}

llvm::Error OptionsParser::parsePair(llvm::StringRef pair) {
  auto [key, value] = pair.split('=');
  if (key.empty() || key.size() == pair.size())
    return configError("expected 'key=value', got " + quote(pair));

  std::optional<ConfigField> field;
  llvm::SmallVector<llvm::StringRef, kNumFields> names;
  for (size_t index = 0; index < kNumFields; ++index) {
    names.push_back(optionName(fieldAt(index)));
    if (names.back() == key)
      field = fieldAt(index);
  }
  if (!field) {
    std::string shown;
    llvm::raw_string_ostream os(shown);
    llvm::printEscapedString(key, os);
    return configError(unknownKeyMessage(shown, key, names));
  }
  if (layer.gives(*field))
    return configError("duplicate key " + quote(key));
  layer.markGiven(*field);
  return setField(*field, value);
}

llvm::Error OptionsParser::setField(ConfigField field, llvm::StringRef value) {
  auto expected = [&](llvm::StringRef what) {
    return configError(optionName(field) + ": expected " + what + ", got " +
                       quote(value));
  };
  switch (field) {
  case ConfigField::Stage: {
    std::optional<int64_t> integer = parseInteger(value);
    if (!integer)
      return expected("an integer");
    llvm::Expected<ZeroStage> stage = stageOf(*integer, optionName(field));
    if (!stage)
      return stage.takeError();
    config.stage = *stage;
    return llvm::Error::success();
  }
  case ConfigField::Optimizer: {
    std::optional<OptimizerKind> kind = symbolizeOptimizerKind(value);
    if (!kind)
      return expected("sgd, adam or adamw");
    config.optimizer.kind = *kind;
    return llvm::Error::success();
  }
  case ConfigField::Precision: {
    std::optional<Precision> precision = symbolizePrecision(value);
    if (!precision)
      return expected("fp32, fp16 or bf16");
    config.precision.precision = *precision;
    return llvm::Error::success();
  }
  case ConfigField::OffloadOptimizer: {
    std::optional<OffloadDevice> device = symbolizeOffloadDevice(value);
    if (!device)
      return expected("none, cpu or nvme");
    config.zero.offloadOptimizer = *device;
    return llvm::Error::success();
  }
  case ConfigField::OffloadOptimizerNvmePath:
    config.zero.offloadOptimizerNvmePath = value.str();
    return llvm::Error::success();
  case ConfigField::OffloadParam: {
    std::optional<OffloadDevice> device = symbolizeOffloadDevice(value);
    if (!device)
      return expected("none, cpu or nvme");
    config.zero.offloadParam = *device;
    return llvm::Error::success();
  }
  case ConfigField::OffloadParamNvmePath:
    config.zero.offloadParamNvmePath = value.str();
    return llvm::Error::success();
  case ConfigField::PipelineSchedule:
    config.pipelineSchedule = value.str();
    return llvm::Error::success();
  default:
    break;
  }
  if (int64_t *target = optionMember<int64_t>(config, field)) {
    std::optional<int64_t> integer = parseInteger(value);
    if (!integer)
      return expected("an integer");
    *target = *integer;
  } else if (double *target = optionMember<double>(config, field)) {
    std::optional<double> number = parseNumber(value);
    if (!number)
      return expected("a number");
    *target = *number;
  } else if (bool *target = optionMember<bool>(config, field)) {
    std::optional<bool> flag = parseBool(value);
    if (!flag)
      return expected("true or false");
    *target = *flag;
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<ConfigLayer>
zerosbp::readPipelineOptions(llvm::StringRef options, LayerKind kind,
                             llvm::StringRef source) {
  return OptionsParser(kind, source).parse(options);
}

llvm::Expected<ZeroConfig>
zerosbp::parsePipelineOptions(llvm::StringRef options) {
  llvm::Expected<ConfigLayer> layer =
      readPipelineOptions(options, LayerKind::Config, "");
  if (!layer)
    return layer.takeError();
  return resolveConfig({*layer});
}
