//===- Limits.h - bounds shared by the runtime and the API -----*- C++ -*-===//
//
// One definition for limits that several tools and the Python API check, so
// that each refuses the same inputs with the same bound in its message.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CORE_LIMITS_H
#define ZEROSBP_RUNTIME_CORE_LIMITS_H

#include <cstdint>

namespace zerosbp::runtime {

/// The most ranks a run may have: `zero-compile --world`, `zero-run
/// --ranks`, a plan's and a
/// checkpoint manifest's world, and the Python API's placements, graphs and
/// `zerosbp.launch -n` (as `_zerosbp.MAX_RANKS`) all stop here.
constexpr int kMaxRanks = 16384;

/// The most bytes a memory plan addresses: one rank's arena, and so every
/// buffer, offset and tensor in it. Plan files are JSON, whose integers are
/// exact in every reader only up to 2^53 (docs/plan-format.md#conventions):
/// the memory planner refuses more and the plan reader checks it.
constexpr int64_t kMaxPlanBytes = int64_t(1) << 53;

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CORE_LIMITS_H
