//===- Diagnostics.h - one-line config errors -------------------*- C++ -*-===//
//
// Helpers shared by the config front ends: the error type, the closest-key
// suggestion and number formatting for messages.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_DIAGNOSTICS_H
#define ZEROSBP_COMPILER_CONFIG_DIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace zerosbp {

/// A config error carrying `message`, which is one line.
llvm::Error configError(const llvm::Twine &message);

/// `unknown key '<path>'`, with "; did you mean '<candidate>'?" when one of
/// `known` is close to `key` (case-insensitive edit distance at most a third
/// of the key's length).
std::string unknownKeyMessage(llvm::StringRef path, llvm::StringRef key,
                              llvm::ArrayRef<llvm::StringRef> known);

/// `message` prefixed by `source` and ": " (the config file, "--pipeline",
/// "enable_zero"); `message` alone when `source` is empty.
std::string withSource(llvm::StringRef source, const llvm::Twine &message);

/// `'value'`, escaped onto one line.
std::string quoted(llvm::StringRef value);

/// `value` as an integer when it is one, else in the shortest form that
/// reads back exactly ("0.001", "1e-08", "inf").
std::string formatNumber(double value);

/// Collects the first error of a parse; later ones are dropped, so a parser
/// can keep reading and report where it first went wrong.
class DiagnosticSink {
public:
  void error(const llvm::Twine &message) {
    if (!first)
      first = message.str();
  }
  void take(llvm::Error error);
  bool failed() const { return first.has_value(); }
  /// The first error, or success.
  llvm::Error takeError();

private:
  std::optional<std::string> first;
};

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_DIAGNOSTICS_H
