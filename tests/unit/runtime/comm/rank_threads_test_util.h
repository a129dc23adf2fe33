//===- rank_threads_test_util.h - in-process ranks in tests -----*- C++ -*-===//
//
// What the in-process communicator tests share: a group of every rank, and
// the errors the ranks' threads threw, reported or read back.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_COMM_RANK_THREADS_TEST_UTIL_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_COMM_RANK_THREADS_TEST_UTIL_H

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

#include <exception>
#include <numeric>
#include <string>
#include <vector>

namespace zerosbp::runtime::testing {

/// Ranks 0 .. size - 1, in order.
inline std::vector<int> allRanks(int size) {
  std::vector<int> ranks(size);
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

/// Reports every rank's exception as a test failure.
inline void expectNoErrors(const std::vector<std::exception_ptr> &errors) {
  for (size_t rank = 0; rank < errors.size(); ++rank) {
    if (!errors[rank])
      continue;
    try {
      std::rethrow_exception(errors[rank]);
    } catch (const std::exception &error) {
      ADD_FAILURE() << "rank " << rank << " threw: " << error.what();
    }
  }
}

/// The message of a rank's RuntimeError ("" for none); another exception's
/// is marked so that a test expecting a RuntimeError's text fails.
inline std::string messageOf(const std::exception_ptr &error) {
  if (!error)
    return "";
  try {
    std::rethrow_exception(error);
  } catch (const RuntimeError &e) {
    return e.what();
  } catch (const std::exception &e) {
    return std::string("not a RuntimeError: ") + e.what();
  }
}

} // namespace zerosbp::runtime::testing

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_COMM_RANK_THREADS_TEST_UTIL_H
