//===- Collectives.h - a plan's collective_start, executed ------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_EXEC_COLLECTIVES_H
#define ZEROSBP_RUNTIME_EXEC_COLLECTIVES_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/Tensor.h"
#include "runtime/plan/Plan.h"

#include <vector>

namespace zerosbp::runtime {

/// The memory a collective packs its parts in and out of: host memory on
/// the CPU, device memory and stream-ordered copies on a GPU (where the
/// copies and the communicator's calls are enqueued on one stream).
class CollectiveMemory {
public:
  virtual ~CollectiveMemory() = default;
  /// Copies `bytes` from `src` to `dst` (equal or disjoint ranges).
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  /// Copies `rows` rows of `rowBytes`, `srcPitch` and `dstPitch` bytes apart.
  virtual void copyRows(void *dst, size_t dstPitch, const void *src,
                        size_t srcPitch, size_t rowBytes, size_t rows) = 0;
  /// Sets `bytes` bytes at `dst` to zero.
  virtual void zero(void *dst, size_t bytes) = 0;
  /// Scratch bytes that stay valid until release(), which the collective
  /// calls once its last use of them has been issued.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *scratch) = 0;
};

/// Host memory: memcpy and malloc.
CollectiveMemory &hostCollectiveMemory();

/// Runs one (possibly bucketed) collective: each segment follows the rule of
/// its kind on its own (docs/plan-format.md). `staging` is the planned
/// staging buffer or null. A send_recv sends operand 0 from the group
/// member of its source stage and receives it into result 0 on the member
/// of its target stage (the group is the pipeline axis's, indexed by
/// stage); only those two ranks run it.
void runCollective(const Instruction &instruction,
                   const std::vector<TensorRef> &operands,
                   const std::vector<TensorRef> &results, void *staging,
                   CommGroup &group, Communicator &comm,
                   CollectiveMemory &memory = hostCollectiveMemory());

/// sbp.to_partial: this rank's share of a partial sum over `grid_axis`:
/// the operand on coordinate 0 and zeros elsewhere, or with `split_axis`
/// the operand placed at the rank's block of that dim, zeros around it.
void runToPartial(const Instruction &instruction, const Plan &plan, int rank,
                  const TensorRef &operand, const TensorRef &result,
                  CollectiveMemory &memory = hostCollectiveMemory());

/// shard.all_slice: this rank's balanced part of `slice_axis`, indexed by
/// its coordinates on `grid_axes`.
void runAllSlice(const Instruction &instruction, const Plan &plan, int rank,
                 const TensorRef &operand, const TensorRef &result,
                 CollectiveMemory &memory = hostCollectiveMemory());

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_COLLECTIVES_H
