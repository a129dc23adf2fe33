//===- ConfigChecks.h - range and consistency checks ------------*- C++ -*-===//
//
// The checks every front end shares. Messages read
// `<field>: expected <what>, got <value>`, with the field spelled by the
// front end's FieldNamer.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_CONFIGCHECKS_H
#define ZEROSBP_COMPILER_CONFIG_CONFIGCHECKS_H

#include "compiler/config/ConfigField.h"
#include "compiler/config/ZeroConfig.h"

#include <optional>
#include <string>

namespace zerosbp {

/// Whether `option` is used with `config`'s other options (ConfigOptions.def's
/// When: Adam's keys with SGD, fp16's with fp32, offload's without offload
/// are not); `unusedReason` says why not, as pipeline-option text.
bool optionApplies(const ConfigOption &option, const ZeroConfig &config);
std::string unusedReason(OptionWhen when);

/// How the messages of a check name fields: `name(subject, field)` spells
/// `field` in a message about `subject`, and `source(subject)` prefixes
/// that message ("" for none). resolveConfig spells each message as the
/// layer that gave its subject does.
struct FieldNaming {
  llvm::function_ref<llvm::StringRef(ConfigField subject, ConfigField field)>
      name;
  llvm::function_ref<llvm::StringRef(ConfigField subject)> source;
};

/// The first field of `config` that is out of range, or a batch-size
/// mismatch.
llvm::Error verifyConfig(const ZeroConfig &config, const FieldNaming &naming);
/// The same with every field spelled by `name`, without a prefix.
llvm::Error verifyConfig(const ZeroConfig &config, FieldNamer name);

/// DeepSpeed's batch-size resolution (DeepSpeedConfig.
/// _set_batch_related_parameters) for the values a config gave: with all
/// three, train == micro * gas * world must hold; with two (or one, taking
/// gas = 1) the others are derived and must divide exactly; with neither
/// batch size, both stay 0 (the graph decides). Given values must be >= 1.
/// Sets the three fields of `config`; `config.world` must be >= 1.
llvm::Error resolveBatchSizes(ZeroConfig &config,
                              std::optional<int64_t> trainBatchSize,
                              std::optional<int64_t> microBatchSize,
                              std::optional<int64_t> accumulationSteps,
                              FieldNamer name);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_CONFIGCHECKS_H
