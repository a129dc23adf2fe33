//===- ConfigAccess.h - a ZeroConfig member by its field --------*- C++ -*-===//
//
// Generic code over ConfigOptions.def (the pipeline-option parser, the
// DeepSpeed reader, str(), operator==, the checks) reaches each option's
// member through these, so that no front end lists the members again.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_CONFIGACCESS_H
#define ZEROSBP_COMPILER_CONFIG_CONFIGACCESS_H

#include "compiler/config/ConfigField.h"
#include "compiler/config/ZeroConfig.h"

#include "llvm/Support/ErrorHandling.h"

#include <string>
#include <type_traits>

namespace zerosbp {

namespace detail {
inline ZeroConfig &groupConfig(ZeroConfig &config) { return config; }
inline OptimizerConfig &groupOptimizer(ZeroConfig &config) {
  return config.optimizer;
}
inline PrecisionConfig &groupPrecision(ZeroConfig &config) {
  return config.precision;
}
inline ZeroKnobs &groupKnobs(ZeroConfig &config) { return config.zero; }

inline void *memberAddress(ZeroConfig &config, ConfigField field) {
  switch (field) {
#define ZERO_OPTION(Group, Field, Type, Member, ...)                           \
  case ConfigField::Field:                                                     \
    return &group##Group(config).Member;
#include "compiler/config/ConfigOptions.def"
  }
  llvm_unreachable("unknown ConfigField");
}

template <typename T> constexpr OptionType optionType() {
  if constexpr (std::is_same_v<T, int64_t>)
    return OptionType::Integer;
  else if constexpr (std::is_same_v<T, ZeroStage>)
    return OptionType::Stage;
  else if constexpr (std::is_same_v<T, double>)
    return OptionType::Number;
  else if constexpr (std::is_same_v<T, bool>)
    return OptionType::Bool;
  else if constexpr (std::is_same_v<T, OptimizerKind>)
    return OptionType::Optimizer;
  else if constexpr (std::is_same_v<T, OffloadDevice>)
    return OptionType::Offload;
  else if constexpr (std::is_same_v<T, std::string>)
    return OptionType::Text;
  else
    return OptionType::Precision;
}
} // namespace detail

/// The member of `config` that `field` names, or null unless its type is T.
template <typename T> T *optionMember(ZeroConfig &config, ConfigField field) {
  if (configOption(field).type != detail::optionType<T>())
    return nullptr;
  return static_cast<T *>(detail::memberAddress(config, field));
}
template <typename T>
const T *optionMember(const ZeroConfig &config, ConfigField field) {
  return optionMember<T>(const_cast<ZeroConfig &>(config), field);
}

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_CONFIGACCESS_H
