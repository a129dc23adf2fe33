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

std::vector<ShardRun> shardRuns(const ShardLayout &layout,
                                const std::vector<DimRange> &ranges) {
  std::vector<ShardRun> runs;
  int64_t modelCount = numElements(layout.modelShape);
  if (shardElements(ranges) == 0)
    return runs;
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
  if (layout.flat || shardElements(ranges) == 0)
    return 1;
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
  return layout;
}

} // namespace zerosbp::runtime
