//===- OutputPaths.h - outputs that do not overlap --------------*- C++ -*-===//
//
// A tool that replaces a directory as a whole (zero-run --save) removes
// whatever else is inside it, and one that writes a file over an input
// destroys what it reads. So every output must be apart from every other
// output and from every input: not the same path, not inside it, not
// containing it, after symbolic links are resolved. The tools check this
// before they read or write anything
// (docs/runtime.md#files-are-whole-or-absent).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TOOLS_COMMON_OUTPUTPATHS_H
#define ZEROSBP_RUNTIME_TOOLS_COMMON_OUTPUTPATHS_H

#include <optional>
#include <string>
#include <vector>

namespace zerosbp::runtime::tools {

/// A path a command line names, with what names it ("--save", "the plan");
/// an unset path takes no part in the checks.
struct CommandPath {
  std::string name;
  std::optional<std::string> path;
  /// An output directory that is written into and never replaced or
  /// emptied (a checkpoint directory): inputs may lie inside it.
  bool writtenInto = false;
};

/// Throws a one-line RuntimeError naming both when `output` and `other`
/// are the same path or one is inside the other:
///   "--save ck and --checkpoint-dir ck are the same path"
///   "--trace out/trace.json is inside --save out"
void checkApart(const CommandPath &output, const CommandPath &other);

/// checkApart for every two outputs, and every output and input but an
/// input inside an output that is written into.
void checkOutputsApart(const std::vector<CommandPath> &outputs,
                       const std::vector<CommandPath> &inputs);

} // namespace zerosbp::runtime::tools

#endif // ZEROSBP_RUNTIME_TOOLS_COMMON_OUTPUTPATHS_H
