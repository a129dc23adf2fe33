//===- ZeroPipelineHelp.h - zero-pipeline's keys for --help -----*- C++ -*-===//
//
// The keys of `--zero-pipeline='stage=2 world=4 ...'` as pass options, one
// per row of compiler/config/ConfigOptions.def, so that `zero-opt --help`
// lists them with their help. They never hold values: the pipeline's text is
// read by parsePipelineOptions, whose checks and messages every front end
// shares.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_PIPELINE_ZEROPIPELINEHELP_H
#define ZEROSBP_COMPILER_PIPELINE_ZEROPIPELINEHELP_H

#include "compiler/config/ZeroConfig.h"
#include "mlir/Pass/PassOptions.h"

#include <string>
#include <type_traits>

namespace zerosbp {

class ZeroPipelineHelp : public mlir::detail::PassOptions {
  /// Enums are shown as text, the stage as its number.
  template <typename T>
  using HelpType =
      std::conditional_t<std::is_same_v<T, ZeroStage>, int64_t,
                         std::conditional_t<std::is_same_v<T, int64_t> ||
                                                std::is_same_v<T, double> ||
                                                std::is_same_v<T, bool>,
                                            T, std::string>>;

public:
#define ZERO_OPTION(Group, Field, Type, Member, Default, Key, DeepSpeed,       \
                    Python, Check, Lo, Hi, When, Help)                         \
  Option<HelpType<Type>> Field##Option{*this, Key, llvm::cl::desc(Help)};
#include "compiler/config/ConfigOptions.def"
};

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_PIPELINE_ZEROPIPELINEHELP_H
