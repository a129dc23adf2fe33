//===- ShardRuns.cpp - which model elements a shard holds -----------------===//

#include "runtime/exec/ShardRuns.h"

#include "runtime/exec/Distribution.h"

#include <algorithm>

namespace zerosbp::runtime {

int64_t shardElements(const std::vector<DimRange> &ranges) {
  int64_t count = 1;
  for (const DimRange &range : ranges)
    count *= range.second - range.first;
  return count;
}

namespace {

/// A model-split flat layout's rows: each part of the model tensor is
/// `blocks` blocks of `chunk` consecutive model elements (one per index of
/// the dims before the split one), and block o of part t starts at model
/// element (o * parts + t) * chunk.
struct SplitRows {
  int64_t parts = 1;
  int64_t blocks = 1;
  int64_t chunk = 1;
  int64_t partElements() const { return blocks * chunk; }
};

SplitRows splitRowsOf(const ShardLayout &layout) {
  const SplitParts &split = *layout.modelSplit;
  const std::vector<int64_t> &shape = layout.modelShape;
  SplitRows rows;
  rows.parts = split.parts;
  rows.chunk = shape[split.dim] / split.parts;
  for (int d = 0; d < split.dim; ++d)
    rows.blocks *= shape[d];
  for (size_t d = split.dim + 1; d < shape.size(); ++d)
    rows.chunk *= shape[d];
  return rows;
}

/// Rows [t0, t1) and columns [c0, c1) of a model-split flat layout, block
/// by block and, within a block, row by row: increasing model order.
std::vector<ShardRun> splitRuns(const ShardLayout &layout,
                                const std::vector<DimRange> &ranges) {
  SplitRows rows = splitRowsOf(layout);
  auto [t0, t1] = ranges[0];
  auto [c0, c1] = ranges[1];
  int64_t end = std::min(c1, rows.partElements()); // Columns past: padding.
  std::vector<ShardRun> runs;
  if (t0 >= t1 || c0 >= end)
    return runs;
  for (int64_t o = c0 / rows.chunk; o * rows.chunk < end; ++o) {
    int64_t begin = std::max(c0, o * rows.chunk);
    int64_t stop = std::min(end, (o + 1) * rows.chunk);
    int64_t inBlock = begin - o * rows.chunk;
    for (int64_t t = t0; t < t1; ++t) {
      ShardRun run = {(o * rows.parts + t) * rows.chunk + inBlock,
                      (t - t0) * (c1 - c0) + begin - c0, stop - begin};
      ShardRun *last = runs.empty() ? nullptr : &runs.back();
      if (last && last->model + last->length == run.model &&
          last->local + last->length == run.local)
        last->length += run.length;
      else
        runs.push_back(run);
    }
  }
  return runs;
}

/// splitRuns(...).size() in closed form: a run per row and block, except
/// where the merges in splitRuns join them.
int64_t splitRunCount(const ShardLayout &layout,
                      const std::vector<DimRange> &ranges) {
  SplitRows rows = splitRowsOf(layout);
  auto [t0, t1] = ranges[0];
  auto [c0, c1] = ranges[1];
  int64_t end = std::min(c1, rows.partElements());
  if (t0 >= t1 || c0 >= end)
    return 0;
  // One part: its blocks follow each other in the model and in the shard.
  if (rows.parts == 1)
    return 1;
  // Exactly one whole block: the rows' blocks follow each other.
  if (c1 - c0 == rows.chunk && c0 % rows.chunk == 0 && c1 == end)
    return 1;
  int64_t blocks = (end - 1) / rows.chunk - c0 / rows.chunk + 1;
  return (t1 - t0) * blocks;
}

} // namespace

std::vector<ShardRun> shardRuns(const ShardLayout &layout,
                                const std::vector<DimRange> &ranges) {
  std::vector<ShardRun> runs;
  int64_t modelCount = numElements(layout.modelShape);
  if (shardElements(ranges) == 0)
    return runs;
  if (layout.modelSplit)
    return splitRuns(layout, ranges);
  if (layout.flat) {
    // One range of the padded flat tensor; what lies past the model is
    // padding.
    int64_t begin = ranges.front().first;
    int64_t end = std::min(ranges.front().second, modelCount);
    if (end > begin)
      runs.push_back({begin, 0, end - begin});
    return runs;
  }
  // A box: dims after the last partial one are whole, so each index of
  // the dims before it starts one run of consecutive model elements.
  int rank = static_cast<int>(ranges.size());
  int partial = rank - 1;
  while (partial >= 0 && ranges[partial].first == 0 &&
         ranges[partial].second == layout.globalShape[partial])
    --partial;
  if (partial < 0)
    return {{0, 0, modelCount}};
  std::vector<int64_t> strides(rank, 1);
  for (int d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * layout.globalShape[d];
  int64_t runLength =
      (ranges[partial].second - ranges[partial].first) * strides[partial];
  std::vector<int64_t> index(partial);
  for (int d = 0; d < partial; ++d)
    index[d] = ranges[d].first;
  int64_t local = 0;
  while (true) {
    int64_t model = ranges[partial].first * strides[partial];
    for (int d = 0; d < partial; ++d)
      model += index[d] * strides[d];
    runs.push_back({model, local, runLength});
    local += runLength;
    // The next run: advance the outer dims like an odometer.
    int d = partial - 1;
    for (; d >= 0; --d) {
      if (++index[d] < ranges[d].second)
        break;
      index[d] = ranges[d].first;
    }
    if (d < 0)
      break;
  }
  return runs;
}

int64_t shardRunCount(const ShardLayout &layout,
                      const std::vector<DimRange> &ranges) {
  if (shardElements(ranges) == 0)
    return 0;
  if (layout.modelSplit)
    return splitRunCount(layout, ranges);
  if (layout.flat) {
    int64_t end =
        std::min(ranges.front().second, numElements(layout.modelShape));
    return end > ranges.front().first ? 1 : 0;
  }
  int partial = static_cast<int>(ranges.size()) - 1;
  while (partial >= 0 && ranges[partial].first == 0 &&
         ranges[partial].second == layout.globalShape[partial])
    --partial;
  int64_t count = 1;
  for (int d = 0; d < partial; ++d)
    count *= ranges[d].second - ranges[d].first;
  return count;
}

std::vector<RunOverlap> runOverlaps(const std::vector<ShardRun> &source,
                                    const std::vector<ShardRun> &target) {
  std::vector<RunOverlap> overlaps;
  size_t s = 0, t = 0;
  while (s < source.size() && t < target.size()) {
    const ShardRun &a = source[s];
    const ShardRun &b = target[t];
    int64_t begin = std::max(a.model, b.model);
    int64_t end = std::min(a.model + a.length, b.model + b.length);
    if (begin < end)
      overlaps.push_back({a.local + (begin - a.model),
                          b.local + (begin - b.model), end - begin});
    if (a.model + a.length <= b.model + b.length)
      ++s;
    else
      ++t;
  }
  return overlaps;
}

ShardLayout layoutOf(const PlanVariable &variable) {
  ShardLayout layout;
  layout.modelShape = variable.modelShape();
  layout.globalShape = variable.globalShape;
  layout.flat = variable.logicalShape.has_value();
  // The reader checked that the rows are the model axis' parts.
  if (variable.modelSplit && !variable.globalShape.empty())
    layout.modelSplit =
        SplitParts{variable.modelSplit->dim, variable.globalShape.front()};
  return layout;
}

} // namespace zerosbp::runtime
