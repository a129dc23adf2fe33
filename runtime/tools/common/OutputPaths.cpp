//===- OutputPaths.cpp - outputs that do not overlap ----------------------===//

#include "runtime/tools/common/OutputPaths.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <filesystem>

namespace zerosbp::runtime::tools {
namespace {

namespace fs = std::filesystem;

/// `path` absolute, with the symbolic links of its existing part resolved
/// and `.`, `..` and a trailing slash taken out.
fs::path resolved(const std::string &path) {
  std::error_code error;
  fs::path absolute = fs::absolute(path, error);
  fs::path canonical = fs::weakly_canonical(absolute, error);
  fs::path result = error ? absolute.lexically_normal() : canonical;
  if (!result.has_filename() && result.has_relative_path())
    result = result.parent_path();
  return result;
}

/// Whether `inner` is `outer` or lies below it.
bool within(const fs::path &inner, const fs::path &outer) {
  return std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end())
             .first == outer.end();
}

std::string text(const CommandPath &named) {
  return named.name + " " + *named.path;
}

/// checkApart; `mayHoldOther` lets `other` lie strictly inside `output`.
void checkPair(const CommandPath &output, const CommandPath &other,
               bool mayHoldOther) {
  if (!output.path || !other.path)
    return;
  fs::path a = resolved(*output.path), b = resolved(*other.path);
  bool aInB = within(a, b), bInA = within(b, a);
  if (aInB && bInA)
    throw RuntimeError(text(output) + " and " + text(other) +
                       " are the same path");
  if (aInB)
    throw RuntimeError(text(output) + " is inside " + text(other));
  if (bInA && !mayHoldOther)
    throw RuntimeError(text(other) + " is inside " + text(output));
}

} // namespace

void checkApart(const CommandPath &output, const CommandPath &other) {
  checkPair(output, other, /*mayHoldOther=*/false);
}

void checkOutputsApart(const std::vector<CommandPath> &outputs,
                       const std::vector<CommandPath> &inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j)
      checkApart(outputs[i], outputs[j]);
    for (const CommandPath &input : inputs)
      checkPair(outputs[i], input, outputs[i].writtenInto);
  }
}

} // namespace zerosbp::runtime::tools
