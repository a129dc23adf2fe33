//===- DeferredTransfers.h - transfer waits left to the next step -*- C++ -*-=//
//
// A transfer whose bytes nothing later in the step touches need not be
// waited for within the step: its wait moves to the next step, right before
// the first instruction that touches those bytes (docs/runtime.md#deferred-
// transfer-waits). The updated parameters an offloaded optimizer copies back
// to the device so arrive while the next forward runs, as ZeRO-Offload's do.
// Both executors plan the same waits here; the numbers do not change.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_DEFERREDTRANSFERS_H
#define ZEROSBP_RUNTIME_EXEC_DEFERREDTRANSFERS_H

#include "runtime/plan/Plan.h"

#include <cstdint>
#include <vector>

namespace zerosbp::runtime {

/// Bytes [begin, end) of one of a plan's arenas.
struct ArenaRange {
  int arena = 0;
  int64_t begin = 0, end = 0;
  bool overlaps(const ArenaRange &other) const {
    return arena == other.arena && begin < other.end && other.begin < end;
  }
};

/// The bytes of value `id` in its arena.
ArenaRange valueRange(const Plan &plan, int id);

struct DeferredTransfers {
  /// By instruction: 1 for a transfer_wait the step does not wait at.
  std::vector<char> deferred;
  /// By instruction: the deferred transfers whose bytes it is the first of
  /// a step to touch; a step waits for them right before it.
  std::vector<std::vector<int>> settleBefore;
  /// By transfer: the bytes it reads and writes.
  std::vector<ArenaRange> source, target;

  /// Whether any wait is deferred.
  bool any() const;
  /// Whether transfer `transfer` reads or writes bytes of `range`.
  bool touches(int transfer, const ArenaRange &range) const;
};

/// The waits of `plan`'s transfers that the instructions `runs` marks (a
/// rank's) can leave to the next step: a transfer_wait after which no
/// instruction of the step reads or writes the bytes its transfer reads or
/// writes, and that an instruction of the next step does. Transfers do not
/// count: they run in start order on the copy stream, after every earlier
/// one.
DeferredTransfers planDeferredTransfers(const Plan &plan,
                                        const std::vector<char> &runs);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_DEFERREDTRANSFERS_H
