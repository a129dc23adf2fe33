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
    return configError("expected 'key=value', got " + quoted(pair));

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
    return configError("duplicate key " + quoted(key));
  layer.markGiven(*field);
  return setField(*field, value);
}

llvm::Error OptionsParser::setField(ConfigField field, llvm::StringRef value) {
  if (isNamedValue(field))
    return giveNamedValue(layer, field, value);
  auto expected = [&](llvm::StringRef what) {
    return configError(optionName(field) + ": expected " + what + ", got " +
                       quoted(value));
  };
  if (ZeroStage *target = optionMember<ZeroStage>(config, field)) {
    std::optional<int64_t> integer = parseInteger(value);
    if (!integer)
      return expected("an integer");
    llvm::Expected<ZeroStage> stage = stageOf(*integer, optionName(field));
    if (!stage)
      return stage.takeError();
    *target = *stage;
  } else if (int64_t *target = optionMember<int64_t>(config, field)) {
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
