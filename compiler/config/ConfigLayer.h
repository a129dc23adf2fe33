//===- ConfigLayer.h - what one front door gave -----------------*- C++ -*-===//
//
// A config is resolved from layers (docs/compiler.md#precedence). Each
// front door reads what it was given into one layer: a DeepSpeed JSON, the
// arguments of enable_zero, `key=value` pairs, zero-compile's flags, the
// Python config methods. A layer holds the fields it gave and says so
// field by field; it applies no defaults, resolves no batch sizes and
// checks no ranges: resolveConfig does that once, for the merged config.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_CONFIGLAYER_H
#define ZEROSBP_COMPILER_CONFIG_CONFIGLAYER_H

#include "compiler/config/ConfigAccess.h"
#include "compiler/config/ConfigField.h"
#include "compiler/config/ZeroConfig.h"

#include <bitset>
#include <cassert>
#include <string>
#include <utility>

namespace zerosbp {

/// How a layer meets the layers before it (docs/compiler.md#precedence).
enum class LayerKind {
  /// A whole config: a DeepSpeed JSON, enable_zero's arguments, pipeline
  /// options. A resolve takes at most one.
  Config,
  /// A front door's settings: zero-compile's flags, the Python config
  /// methods. A field the config states must have the same value here.
  Setting,
  /// `key=value` pairs applied last (set_pipeline_options): they replace.
  Override,
};

/// How a layer spells a field: a DeepSpeed path, a pipeline key, a Python
/// name, a flag.
using FieldNameFn = llvm::StringRef (*)(ConfigField);

/// The fields one front door gave, and their values.
class ConfigLayer {
public:
  /// `source` prefixes the messages about the layer's fields ("" for
  /// none): the config file, "enable_zero", "--pipeline". `name` spells
  /// them.
  ConfigLayer(LayerKind kind, std::string source, FieldNameFn name)
      : layerKind(kind), sourceText(std::move(source)), nameFn(name) {}

  LayerKind kind() const { return layerKind; }
  llvm::StringRef source() const { return sourceText; }
  llvm::StringRef nameOf(ConfigField field) const { return nameFn(field); }
  FieldNameFn namer() const { return nameFn; }

  bool gives(ConfigField field) const {
    return given[static_cast<size_t>(field)];
  }

  /// Gives `field` the value `value`, of the field's type.
  template <typename T> void give(ConfigField field, T value) {
    T *member = optionMember<T>(config, field);
    assert(member && "the value must have the field's type");
    *member = std::move(value);
    markGiven(field);
  }

  /// The layer's values: those it gives, ZeroConfig's defaults elsewhere.
  const ZeroConfig &values() const { return config; }
  /// For readers that write a member in place; they mark it given.
  ZeroConfig &mutableValues() { return config; }
  void markGiven(ConfigField field) {
    given[static_cast<size_t>(field)] = true;
  }

private:
  LayerKind layerKind;
  std::string sourceText;
  FieldNameFn nameFn;
  ZeroConfig config;
  std::bitset<kNumConfigFields> given;
};

/// The stage numbered `number`, or every reader's one error for it:
/// `<name>: expected an integer in [0, 3], got 4`.
llvm::Expected<ZeroStage> stageOf(int64_t number, llvm::StringRef name);

/// Whether `field`'s value is written as text: an enum by its name, or a
/// string.
bool isNamedValue(ConfigField field);
/// Gives `field`, an isNamedValue one, the value `text` names, or the one
/// error every reader gives for it: `<name>: expected sgd, adam or adamw,
/// got 'x'`, with the field spelled as `layer` spells it.
llvm::Error giveNamedValue(ConfigLayer &layer, ConfigField field,
                           llvm::StringRef text);

/// Copies `field` from `from` to `to`.
void copyField(ZeroConfig &to, const ZeroConfig &from, ConfigField field);
/// Whether `a` and `b` hold the same value of `field`.
bool sameField(const ZeroConfig &a, const ZeroConfig &b, ConfigField field);
/// `config`'s value of `field` as pipeline-option text.
std::string fieldText(const ZeroConfig &config, ConfigField field);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_CONFIGLAYER_H
