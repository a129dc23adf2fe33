//===- ConfigField.h - the ZeroConfig options, from one table ---*- C++ -*-===//
//
// One enumerator and one descriptor per row of ConfigOptions.def, so that
// each front end handles every option from the same facts: its key, its
// DeepSpeed path, its Python name, its type, its range and when it applies.
// The checks live in one place (ConfigChecks.h); each front end names a
// field its own way (`zero_optimization.stage` in a DeepSpeed config,
// `stage` in pipeline options).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_CONFIGFIELD_H
#define ZEROSBP_COMPILER_CONFIG_CONFIGFIELD_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>

namespace zerosbp {

enum class ConfigField {
#define ZERO_OPTION(Group, Field, ...) Field,
#include "compiler/config/ConfigOptions.def"
};

inline constexpr size_t kNumConfigFields = 0
#define ZERO_OPTION(...) +1
#include "compiler/config/ConfigOptions.def"
    ;

/// The struct that holds an option's member (ConfigOptions.def).
enum class OptionGroup { Config, Optimizer, Precision, Knobs };
/// The type of an option's member.
enum class OptionType {
  Integer,
  Stage,
  Number,
  Bool,
  Optimizer,
  Precision,
  Offload,
  Text
};
/// Its range (ConfigOptions.def).
enum class OptionCheck { None, AtLeast, In, NonNegative, Probability, True };
/// When it is used and printed (ConfigOptions.def).
enum class OptionWhen {
  Always,
  NotSgd,
  PrintedNotSgd,
  Fp16,
  NonZero,
  NotOne,
  Offload,
  Nvme,
  ParamOffload,
  ParamNvme,
  Pipelined,
  QuantizedWeights
};

struct ConfigOption {
  ConfigField field;
  OptionGroup group;
  OptionType type;
  llvm::StringRef key;
  llvm::StringRef deepSpeed;
  llvm::StringRef python;
  OptionCheck check;
  int64_t lo, hi;
  OptionWhen when;
  llvm::StringRef help;
};

/// Every option, in table order (the order of str() and of the checks).
llvm::ArrayRef<ConfigOption> configOptions();
const ConfigOption &configOption(ConfigField field);

/// How a front end spells a field in its error messages.
using FieldNamer = llvm::function_ref<llvm::StringRef(ConfigField)>;

/// The field's key in pipeline options (`shard-min-size`, ...), which
/// ZeroConfig::str() prints.
llvm::StringRef optionName(ConfigField field);
/// The field's DeepSpeed config path (`zero_optimization.stage`, ...).
llvm::StringRef deepSpeedName(ConfigField field);
/// The field's name in a Python graph's config (`enable_zero`'s argument,
/// a config method's field), else its pipeline key.
llvm::StringRef pythonName(ConfigField field);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_CONFIGFIELD_H
