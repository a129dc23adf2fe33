//===- Collectives.h - a plan's collective_start, executed ------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_EXEC_COLLECTIVES_H
#define ZEROSBP_RUNTIME_EXEC_COLLECTIVES_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/Tensor.h"
#include "runtime/plan/Plan.h"

#include <vector>

namespace zerosbp::runtime {

/// Runs one (possibly bucketed) collective: each segment follows the rule of
/// its kind on its own (docs/plan-format.md). `staging` is the planned
/// staging buffer or null.
void runCollective(const Instruction &instruction,
                   const std::vector<TensorRef> &operands,
                   const std::vector<TensorRef> &results, void *staging,
                   CommGroup &group, Communicator &comm);

/// shard.all_slice: this rank's balanced part of `slice_axis`, indexed by
/// its coordinates on `grid_axes`.
void runAllSlice(const Instruction &instruction, const Plan &plan, int rank,
                 const TensorRef &operand, const TensorRef &result);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_COLLECTIVES_H
