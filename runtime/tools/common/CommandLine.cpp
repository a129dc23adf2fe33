//===- CommandLine.cpp - parsing the runtime tools' flags -----------------===//

#include "runtime/tools/common/CommandLine.h"

#include "runtime/core/Error.h"

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

namespace zerosbp::runtime::tools {
namespace {

int64_t parseInteger(const CommandLineSpec &spec, const std::string &flag,
                     const std::string &text, int64_t min, int64_t max) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > max)
    usageError(spec, flag + ": expected an integer in [" + std::to_string(min) +
                         ", " + std::to_string(max) + "], got '" + text + "'");
  return value;
}

bool isOwnFlag(const CommandLineSpec &spec, const absl::CommandLineFlag &flag) {
  return flag.Filename() == spec.flagFile;
}

std::string dashed(absl::string_view name) {
  std::string text(name.data(), name.size());
  std::replace(text.begin(), text.end(), '_', '-');
  return text;
}

// The flag `option` (`--checkpoint-every`, `-n`) names, or null.
absl::CommandLineFlag *findFlag(const CommandLineSpec &spec,
                                const std::string &option) {
  std::string name;
  for (const auto &[shortName, longName] : spec.shortNames)
    if (option == shortName)
      name = longName;
  if (name.empty()) {
    if (option.rfind("--", 0) != 0 || option.find('_') != std::string::npos)
      return nullptr;
    name = option.substr(2);
  }
  std::replace(name.begin(), name.end(), '-', '_');
  absl::CommandLineFlag *flag = absl::FindCommandLineFlag(name);
  return flag && isOwnFlag(spec, *flag) ? flag : nullptr;
}

void checkValue(const CommandLineSpec &spec, const std::string &option,
                const absl::CommandLineFlag &flag, const std::string &text) {
  for (const IntegerRange &range : spec.integers)
    if (flag.Name() == range.flag) {
      parseInteger(spec, option, text, range.min, range.max);
      return;
    }
  for (const Choice &choice : spec.choices)
    if (flag.Name() == choice.flag) {
      if (std::find(choice.values.begin(), choice.values.end(), text) ==
          choice.values.end()) {
        std::string expected;
        for (size_t i = 0; i < choice.values.size(); ++i)
          expected += (i == 0                          ? ""
                       : i + 1 == choice.values.size() ? " or "
                                                       : ", ") +
                      choice.values[i];
        usageError(spec,
                   option + ": expected " + expected + ", got '" + text + "'");
      }
      return;
    }
  if (flag.IsOfType<bool>()) {
    if (text != "true" && text != "false")
      usageError(spec, option + ": expected true or false, got '" + text + "'");
    return;
  }
  // An empty path would leave the flag unset.
  if (text.empty())
    usageError(spec, option + " needs a value");
}

// Prints `text` from `column` on, wrapped at 80 columns, after `lead`.
void printWrapped(std::ostream &out, const std::string &lead,
                  const std::string &text, size_t column) {
  std::string line =
      lead + std::string(column - std::min(column, lead.size()), ' ');
  bool empty = true;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (!empty && line.size() + 1 + word.size() > 80) {
      out << line << "\n";
      line = std::string(column, ' ');
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  out << line << "\n";
}

void printHelp(const CommandLineSpec &spec, std::ostream &out) {
  std::vector<std::pair<std::string, const absl::CommandLineFlag *>> flags;
  for (const auto &[name, flag] : absl::GetAllFlags())
    if (isOwnFlag(spec, *flag))
      flags.emplace_back("--" + dashed(name), flag);
  std::sort(flags.begin(), flags.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  size_t column = 0;
  for (const auto &[option, flag] : flags)
    column = std::max(column, option.size());
  column += 4;
  out << spec.usage << "\n\nflags (--name value or --name=value):\n";
  for (const auto &[option, flag] : flags) {
    std::string text = flag->Help();
    std::string defaultValue = flag->DefaultValue();
    if (!defaultValue.empty())
      text += " (default: " + defaultValue + ")";
    printWrapped(out, "  " + option, text, column);
  }
}

} // namespace

void usageError(const CommandLineSpec &spec, const std::string &message) {
  throw RuntimeError(message + "\n" + spec.usage);
}

std::vector<std::string> parseCommandLine(int argc, char **argv,
                                          const CommandLineSpec &spec) {
  std::vector<std::string> positional;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string option = args[i];
    std::optional<std::string> value;
    if (option.rfind("--", 0) == 0) {
      size_t equals = option.find('=');
      if (equals != std::string::npos) {
        value = option.substr(equals + 1);
        option.resize(equals);
      }
    }
    if (option == "--help" || option == "-h") {
      printHelp(spec, std::cout);
      std::exit(0);
    }
    if (option.rfind("-", 0) != 0) {
      positional.push_back(option);
      continue;
    }
    absl::CommandLineFlag *flag = findFlag(spec, option);
    if (!flag)
      usageError(spec, "unknown option '" + option + "'");
    std::string text;
    if (value)
      text = *value;
    else if (flag->IsOfType<bool>())
      text = "true";
    else if (i + 1 < args.size())
      text = args[++i];
    else
      usageError(spec, option + " needs a value");
    checkValue(spec, option, *flag, text);
    std::string error;
    if (!flag->ParseFrom(text, &error))
      usageError(spec, option + ": " + error);
  }
  return positional;
}

std::string parsePlanCommandLine(int argc, char **argv,
                                 const CommandLineSpec &spec) {
  std::vector<std::string> positional = parseCommandLine(argc, argv, spec);
  if (positional.size() > 1)
    usageError(spec, "unexpected argument '" + positional[1] + "'");
  if (positional.empty())
    usageError(spec, "no plan file given");
  return positional[0];
}

} // namespace zerosbp::runtime::tools
