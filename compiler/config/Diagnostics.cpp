//===- Diagnostics.cpp - one-line config errors ---------------------------===//

#include "compiler/config/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>
#include <cmath>

using namespace zerosbp;

llvm::Error zerosbp::configError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string zerosbp::unknownKeyMessage(llvm::StringRef path,
                                       llvm::StringRef key,
                                       llvm::ArrayRef<llvm::StringRef> known) {
  std::string message = ("unknown key '" + path + "'").str();
  std::string lowered = key.lower();
  unsigned limit = std::max<unsigned>(1, key.size() / 3);
  std::optional<llvm::StringRef> best;
  unsigned bestDistance = limit + 1;
  for (llvm::StringRef candidate : known) {
    unsigned distance =
        llvm::StringRef(lowered).edit_distance(candidate.lower(),
                                               /*AllowReplacements=*/true,
                                               /*MaxEditDistance=*/limit + 1);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best)
    message += ("; did you mean '" + *best + "'?").str();
  return message;
}

std::string zerosbp::withSource(llvm::StringRef source,
                                const llvm::Twine &message) {
  if (source.empty())
    return message.str();
  return (source + ": " + message).str();
}

std::string zerosbp::quoted(llvm::StringRef value) {
  std::string result = "'";
  llvm::raw_string_ostream os(result);
  llvm::printEscapedString(value, os);
  os << "'";
  return result;
}

std::string zerosbp::formatNumber(double value) {
  if (std::isfinite(value) && value == std::trunc(value) &&
      std::fabs(value) < 9.2e18)
    return std::to_string(static_cast<int64_t>(value));
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

void DiagnosticSink::take(llvm::Error error) {
  if (!error)
    return;
  std::string message = llvm::toString(std::move(error));
  this->error(message);
}

llvm::Error DiagnosticSink::takeError() {
  if (!first)
    return llvm::Error::success();
  llvm::Error error = configError(*first);
  first.reset();
  return error;
}
