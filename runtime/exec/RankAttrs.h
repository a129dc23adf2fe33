//===- RankAttrs.h - instruction attributes as one rank sees them -*- C++ -*-=//
//
// A plan is SPMD: its instructions hold no rank. An op whose result depends
// on where the rank's block lies in the global tensor (nn.dropout, whose
// mask follows global indices; nn.embedding and nn.embedding_grad on a
// table split by vocabulary) carries `global_shape` and `split_dims`, and
// each executor adds the rank's `shard_offsets` before the first step
// (docs/plan-format.md, "nn.dropout", "nn.embedding").
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_RANKATTRS_H
#define ZEROSBP_RUNTIME_EXEC_RANKATTRS_H

#include "runtime/core/AttrMap.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <vector>

namespace zerosbp::runtime {

/// Where `rank`'s block of `globalShape` begins when hierarchy axis `a`
/// splits dim `splitDims[a]` (-1: not split), by the rule of
/// docs/plan-format.md "Shards"; `blockShape` receives its extent.
std::vector<int64_t> shardOffsets(const Plan &plan, int rank,
                                  const std::vector<int64_t> &globalShape,
                                  const std::vector<int64_t> &splitDims,
                                  std::vector<int64_t> &blockShape);

/// The attributes of every instruction of `plan` on `rank`: the plan's, and
/// `shard_offsets` where an instruction has `split_dims`, for its operand 0,
/// or its result 0 with `"split_of": "result"`. Throws RuntimeError naming
/// the instruction when its attributes do not describe that value's block.
std::vector<AttrMap> rankAttrs(const Plan &plan, int rank);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_RANKATTRS_H
