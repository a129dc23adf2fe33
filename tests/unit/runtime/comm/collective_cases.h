//===- collective_cases.h - collectives and expectations --------*- C++ -*-===//
//
// Deterministic inputs for every rank of a group and the results a
// collective must produce, computed here independently of the backends
// (element by element, in rank order, f32 accumulation for f32/f16/bf16 and
// one rounding at the end). Shared by the in-process gtest and the MPI check
// binary.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_COMM_COLLECTIVE_CASES_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_COMM_COLLECTIVE_CASES_H

#include "runtime/comm/Communicator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zerosbp::runtime::testing {

using Bytes = std::vector<uint8_t>;

struct CollectiveCase {
  CollectiveKind kind;
  DType type;
  int64_t count; // the `count` argument of the call
  ReduceOp op;

  std::string name() const;
  bool reduces() const {
    return kind == CollectiveKind::AllReduce ||
           kind == CollectiveKind::ReduceScatter;
  }
};

/// Every kind, with Sum and Max for the reductions, over `types` and
/// `counts`.
std::vector<CollectiveCase> makeCases(const std::vector<DType> &types,
                                      const std::vector<int64_t> &counts);

/// Elements in the input and in the output of one rank.
int64_t inputElements(const CollectiveCase &c, int groupSize);
int64_t outputElements(const CollectiveCase &c, int groupSize);

/// The input of group index `index`: values of mixed sign and magnitude,
/// determined by (`seed`, `index`).
Bytes makeInput(const CollectiveCase &c, int groupSize, int index,
                uint64_t seed);

/// What group index `index` must hold after the collective, given every
/// rank's makeInput.
Bytes expectedOutput(const CollectiveCase &c, int groupSize, int index,
                     uint64_t seed);

/// Bytes group index `index` sends (docs/ir.md#boxing, counted exactly for
/// uneven all-reduce chunks).
int64_t expectedBytesSent(const CollectiveCase &c, int groupSize, int index);

/// Runs the collective on `input` and returns the output bytes.
Bytes runCase(Communicator &comm, CommGroup &group, const CollectiveCase &c,
              const Bytes &input);

/// The first differing element, as text; empty when equal.
std::string firstDifference(const CollectiveCase &c, const Bytes &actual,
                            const Bytes &expected);

} // namespace zerosbp::runtime::testing

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_COMM_COLLECTIVE_CASES_H
