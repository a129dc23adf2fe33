//===- plan_text.h - plan JSON for the reader's tests ------------*- C++
//-*-===//
//
// Edits of a plan's text and what the reader says of them: each edit is
// sealed with its checksum, as zero-compile writes it, so that the check
// behind the checksum is reached.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_PLAN_PLAN_TEXT_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_PLAN_PLAN_TEXT_H

#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace zerosbp::testing {

/// `text` with its checksum filled in, as zero-compile writes it.
inline std::string sealed(std::string text) {
  size_t quote = text.rfind("\"00000000\"");
  if (quote == std::string::npos)
    return text;
  char digits[9];
  std::snprintf(digits, sizeof(digits), "%08x",
                runtime::planChecksum(text, quote + 1));
  return text.replace(quote + 1, 8, digits);
}

/// `text` with the first occurrence of `from` replaced by `to`.
inline std::string replacedIn(std::string text, const std::string &from,
                              const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos)
    return text;
  return text.replace(at, from.size(), to);
}

/// What the reader says of `text`, sealed; "(no error)" if it reads.
inline std::string errorOf(const std::string &text) {
  try {
    runtime::parsePlan(sealed(text), "model.zplan");
  } catch (const runtime::RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

} // namespace zerosbp::testing

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_PLAN_PLAN_TEXT_H
