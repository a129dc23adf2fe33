//===- ShardRuns.h - which model elements a shard holds ---------*- C++ -*-===//
//
// A shard of a variable is a block of its global tensor (`shards[rank]`):
// for a ZeRO partition, a range of the model tensor flattened and padded at
// the end; for a ZeRO partition of a tensor-parallel variable, rows of
// [parts, N] (each an equal part of the model tensor along one dim,
// flattened and padded) and a range of their columns; otherwise a box of
// the model tensor itself. All are described here as runs of consecutive
// model elements (row-major) and where they sit in the shard, so that a
// shard saved under one layout (world size, stage) can be copied into a
// shard of another, run against run, without ever building the whole
// tensor. It is the one place of these rules: loading checkpoints and
// moving values between model tensors and ranks (Distribution.h) use it.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_SHARDRUNS_H
#define ZEROSBP_RUNTIME_EXEC_SHARDRUNS_H

#include "runtime/plan/Plan.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace zerosbp::runtime {

/// A flat layout split along a model dim first: the global tensor is
/// [parts, N], and row t is the model tensor's part t of `parts` equal
/// parts along dim `dim` (every other dim whole), flattened and zero-padded
/// to N.
struct SplitParts {
  int dim = 0;
  int64_t parts = 1;
  bool operator==(const SplitParts &other) const {
    return dim == other.dim && parts == other.parts;
  }
};

/// How a variable's global tensor maps onto its model tensor.
struct ShardLayout {
  std::vector<int64_t> modelShape;
  std::vector<int64_t> globalShape;
  /// The global tensor is the model tensor flattened and zero-padded.
  bool flat = false;
  /// With `flat`: the parts of a model split, one per row.
  std::optional<SplitParts> modelSplit;
};

/// `length` model elements starting at model element `model` (row-major
/// index), held at element `local` of the shard onwards.
struct ShardRun {
  int64_t model = 0;
  int64_t local = 0;
  int64_t length = 0;
};

/// The runs of the shard `ranges` (one [begin, end) per global dim), in
/// increasing model order, adjacent runs merged; padding is left out.
std::vector<ShardRun> shardRuns(const ShardLayout &layout,
                                const std::vector<DimRange> &ranges);

/// How many runs shardRuns returns, computed without making them (in time
/// independent of the shard's size).
int64_t shardRunCount(const ShardLayout &layout,
                      const std::vector<DimRange> &ranges);

/// Elements of the shard `ranges`: the product of their extents.
int64_t shardElements(const std::vector<DimRange> &ranges);

/// Where a source shard and a target shard hold the same model elements:
/// `length` elements from source element `source` go to target element
/// `target`. Both run lists must be in increasing model order.
struct RunOverlap {
  int64_t source = 0;
  int64_t target = 0;
  int64_t length = 0;
};
std::vector<RunOverlap> runOverlaps(const std::vector<ShardRun> &source,
                                    const std::vector<ShardRun> &target);

/// The layout of a plan variable.
ShardLayout layoutOf(const PlanVariable &variable);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_SHARDRUNS_H
