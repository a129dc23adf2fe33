//===- MultiTensorPlan.h - the CUDA executor's multi-tensor launches -*- C++
//-*-//
//
// Where in a plan the CUDA executor launches several instructions as one
// multi-tensor kernel (MultiTensor.h), and in which order it then runs a
// segment's instructions. Host code: it reads the plan and the addresses
// the executor gives the buffers, never the device, so that tests check it
// on real plans without a GPU (tests/gpu/cuda_multi_tensor_plan_test).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_MULTITENSORPLAN_H
#define ZEROSBP_RUNTIME_CUDA_MULTITENSORPLAN_H

#include "runtime/core/AttrMap.h"
#include "runtime/exec/PreparedProgram.h"
#include "runtime/plan/Plan.h"

#include <cstddef>
#include <vector>

namespace zerosbp::runtime {

/// Whether the CUDA executor may run instruction `index` of `plan` in
/// another order among its neighbours: in the optimizer phase, a kernel on
/// the device, a shard.all_slice or a copy, between which the executor does
/// nothing else (no event of a collective or transfer, no host function).
/// Not a kernel that checks ids or labels on the device (its failure must
/// come first as it would op by op), nor, with `checkGradients`, an update,
/// whose gradient the host checks right before it.
bool movableInSegment(const Plan &plan,
                      const std::vector<PreparedInstruction> &prepared,
                      size_t index, bool checkGradients);

/// A maximal run [begin, end) of consecutive movable instructions and its
/// launches, in the order they run; each lists its instructions in plan
/// order, and one of two or more is a multi-tensor launch
/// (gpu::scheduleSegment: every dependency through memory is kept).
struct MultiTensorSegment {
  size_t begin = 0;
  size_t end = 0;
  std::vector<std::vector<size_t>> launches;
};

/// The segments of `plan` in which some launch merges instructions (the
/// others run in plan order, one by one), for the buffers at `addresses`
/// and each instruction's `prepared` tensors and `attrs` (rankAttrs). Only
/// the instructions the rank runs (`runs`, instructionsRunBy; empty: all)
/// are members; another pipeline stage's, which it skips, do not end a
/// segment.
std::vector<MultiTensorSegment>
planMultiTensorSegments(const Plan &plan,
                        const std::vector<unsigned char *> &addresses,
                        const std::vector<PreparedInstruction> &prepared,
                        const std::vector<AttrMap> &attrs, bool checkGradients,
                        const std::vector<char> &runs = {});

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_MULTITENSORPLAN_H
