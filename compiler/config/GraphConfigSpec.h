//===- GraphConfigSpec.h - a graph's config as its front end set it -*- C++
//-*-===//
//
// What the Python nn.Graph's config methods (enable_zero,
// set_deepspeed_config, enable_amp, add_optimizer, ...) set, in plain C++
// types: the pybind11 module, built with RTTI, includes it while LLVM and
// MLIR are built without. buildGraphConfig (GraphConfig.h) resolves it into
// a ZeroConfig.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_GRAPHCONFIGSPEC_H
#define ZEROSBP_COMPILER_CONFIG_GRAPHCONFIGSPEC_H

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace zerosbp {

/// How the graph is configured, as the Python config methods set it.
struct GraphConfigSpec {
  /// A config field's value as Python gave it; an enum (optimizer,
  /// precision, offload device) by its name.
  using Value = std::variant<int64_t, double, bool, std::string>;

  /// A DeepSpeed JSON config; empty when none was given.
  std::string deepspeedJson;
  /// Whether enable_zero was called, and its `mode`; its other arguments
  /// are settings.
  bool zeroSet = false;
  bool zeroMode = true;
  /// The fields the config methods set, by their Python names
  /// (ConfigOptions.def's Python column): enable_zero's arguments,
  /// add_optimizer's, enable_amp's and the setters'.
  std::vector<std::pair<std::string, Value>> settings;
  /// set_pipeline_options' `key=value` pairs (zero-opt --zero-pipeline
  /// syntax), applied last.
  std::string overrides;
  /// set_activation_memory_budget: bytes of planned activations per rank
  /// that the checkpointed modules must fit (the fewest are kept); 0: none.
  int64_t activationMemoryBudget = 0;
};

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_GRAPHCONFIGSPEC_H
