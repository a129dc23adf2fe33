//===- CommandLine.h - the runtime tools' command lines ---------*- C++ -*-===//
//
// zero-run and zero-sim define their flags with ABSL_FLAG and parse them
// here: `--name value` or `--name=value`, dashes for the underscores of the
// flag's name, integers and choices checked on the text as given so that an
// error quotes it, and `--help` listing the tool's own flags. Every error is
// one RuntimeError line followed by the usage.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TOOLS_COMMON_COMMANDLINE_H
#define ZEROSBP_RUNTIME_TOOLS_COMMON_COMMANDLINE_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime::tools {

/// An integer flag's accepted range (plain decimal text only).
struct IntegerRange {
  const char *flag;
  int64_t min, max;
};

/// A string flag's accepted values.
struct Choice {
  const char *flag;
  std::vector<std::string> values;
};

struct CommandLineSpec {
  std::string usage;
  /// The tool's source file (`__FILE__`): only the flags it defines are
  /// the tool's to take and to list.
  std::string flagFile;
  std::vector<IntegerRange> integers;
  std::vector<Choice> choices;
  /// Short spellings, {"-n", "ranks"}.
  std::vector<std::pair<std::string, std::string>> shortNames;
};

/// Sets the flags `argv` names and returns the other arguments in order.
/// Prints the help and exits 0 on --help or -h. Throws RuntimeError on an
/// unknown flag, a missing or malformed value.
std::vector<std::string> parseCommandLine(int argc, char **argv,
                                          const CommandLineSpec &spec);

/// parseCommandLine for a tool that takes one plan file: returns its path;
/// throws on none or more than one.
std::string parsePlanCommandLine(int argc, char **argv,
                                 const CommandLineSpec &spec);

/// Throws RuntimeError with `message`, then the usage on the next line.
[[noreturn]] void usageError(const CommandLineSpec &spec,
                             const std::string &message);

} // namespace zerosbp::runtime::tools

#endif // ZEROSBP_RUNTIME_TOOLS_COMMON_COMMANDLINE_H
