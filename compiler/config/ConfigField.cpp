//===- ConfigField.cpp - the ZeroConfig options, from one table -----------===//

#include "compiler/config/ConfigField.h"

#include "compiler/config/ConfigAccess.h"

using namespace zerosbp;

namespace {

const ConfigOption kOptions[] = {
#define ZERO_OPTION(Group, Field, Type, Member, Default, Key, DeepSpeed,       \
                    Python, Check, Lo, Hi, When, Help)                         \
  {ConfigField::Field,                                                         \
   OptionGroup::Group,                                                         \
   detail::optionType<Type>(),                                                 \
   Key,                                                                        \
   DeepSpeed,                                                                  \
   Python,                                                                     \
   OptionCheck::Check,                                                         \
   Lo,                                                                         \
   Hi,                                                                         \
   OptionWhen::When,                                                           \
   Help},
#include "compiler/config/ConfigOptions.def"
};

} // namespace

llvm::ArrayRef<ConfigOption> zerosbp::configOptions() { return kOptions; }

const ConfigOption &zerosbp::configOption(ConfigField field) {
  return kOptions[static_cast<size_t>(field)];
}

llvm::StringRef zerosbp::optionName(ConfigField field) {
  return configOption(field).key;
}

llvm::StringRef zerosbp::deepSpeedName(ConfigField field) {
  return configOption(field).deepSpeed;
}

llvm::StringRef zerosbp::pythonName(ConfigField field) {
  const ConfigOption &option = configOption(field);
  return option.python.empty() ? option.key : option.python;
}
