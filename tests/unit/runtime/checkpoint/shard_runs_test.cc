//===- shard_runs_test.cc - runs of model elements, and their overlaps ----===//
//
// shardRuns against a brute-force enumeration of a shard's elements (its
// local elements in row-major order, each mapped to its model element), and
// runOverlaps against copying a tensor element by element from one random
// layout (boxes split along random dims, replicas, flat padded partitions
// of random world sizes, flat partitions split along a model dim first) to
// another.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/ShardRuns.h"

#include "test_plans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace zerosbp::runtime;
using zerosbp::testing::bruteForceModelIndices;
using zerosbp::testing::product;

namespace {

/// The same, from the runs: checks that runs are in increasing model order,
/// non-empty, inside the shard, and not mergeable with their neighbour.
std::vector<int64_t> modelIndicesOfRuns(const ShardLayout &layout,
                                        const std::vector<DimRange> &ranges) {
  std::vector<ShardRun> runs = shardRuns(layout, ranges);
  int64_t localCount = shardElements(ranges);
  std::vector<int64_t> model(static_cast<size_t>(localCount), -1);
  for (size_t i = 0; i < runs.size(); ++i) {
    const ShardRun &run = runs[i];
    EXPECT_GT(run.length, 0);
    EXPECT_GE(run.local, 0);
    EXPECT_LE(run.local + run.length, localCount);
    if (i > 0) {
      const ShardRun &previous = runs[i - 1];
      EXPECT_LE(previous.model + previous.length, run.model);
      EXPECT_FALSE(previous.model + previous.length == run.model &&
                   previous.local + previous.length == run.local)
          << "runs " << i - 1 << " and " << i << " are not merged";
    }
    for (int64_t k = 0; k < run.length; ++k)
      model[run.local + k] = run.model + k;
  }
  EXPECT_EQ(shardRunCount(layout, ranges), static_cast<int64_t>(runs.size()));
  return model;
}

std::string describe(const ShardLayout &layout,
                     const std::vector<DimRange> &ranges) {
  std::string text = layout.flat ? "flat model (" : "model (";
  if (layout.modelSplit)
    text = "model split on dim " + std::to_string(layout.modelSplit->dim) +
           " in " + std::to_string(layout.modelSplit->parts) + " parts (";
  for (int64_t dim : layout.modelShape)
    text += std::to_string(dim) + ",";
  text += ") ranges";
  for (const DimRange &range : ranges)
    text += " [" + std::to_string(range.first) + "," +
            std::to_string(range.second) + ")";
  return text;
}

ShardLayout boxLayout(std::vector<int64_t> shape) {
  ShardLayout layout;
  layout.modelShape = shape;
  layout.globalShape = std::move(shape);
  return layout;
}

ShardLayout flatLayout(std::vector<int64_t> shape, int64_t padded) {
  ShardLayout layout;
  layout.modelShape = std::move(shape);
  layout.globalShape = {padded};
  layout.flat = true;
  return layout;
}

/// `parts` parts of `shape` along `dim`, each flattened and padded to
/// `padded`: the global tensor is [parts, padded].
ShardLayout splitLayout(std::vector<int64_t> shape, int dim, int64_t parts,
                        int64_t padded) {
  ShardLayout layout;
  layout.modelShape = std::move(shape);
  layout.globalShape = {parts, padded};
  layout.flat = true;
  layout.modelSplit = SplitParts{dim, parts};
  return layout;
}

/// A random divisor of `size` (any of 1..4 when it is 0).
int64_t randomDivisor(int64_t size, std::mt19937 &gen) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= std::max<int64_t>(size, 4); ++d)
    if (size % d == 0)
      divisors.push_back(d);
  return divisors[std::uniform_int_distribution<size_t>(0, divisors.size() -
                                                               1)(gen)];
}

TEST(ShardRuns, BoxOfA3DTensor) {
  ShardLayout layout = boxLayout({4, 5, 6});
  std::vector<DimRange> box = {{1, 3}, {0, 5}, {2, 4}};
  std::vector<ShardRun> runs = shardRuns(layout, box);
  // Two of every row of six: ten runs of two.
  ASSERT_EQ(runs.size(), 10u);
  EXPECT_EQ(runs[0].model, 1 * 30 + 0 * 6 + 2);
  EXPECT_EQ(runs[0].length, 2);
  EXPECT_EQ(runs[9].model, 2 * 30 + 4 * 6 + 2);
  EXPECT_EQ(runs[9].local, 18);
  EXPECT_EQ(shardRunCount(layout, box), 10);
  EXPECT_EQ(modelIndicesOfRuns(layout, box),
            bruteForceModelIndices(layout, box));

  // Trailing whole dims merge into one run per index of the dims before.
  std::vector<DimRange> slab = {{1, 3}, {0, 5}, {0, 6}};
  runs = shardRuns(layout, slab);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model, 30);
  EXPECT_EQ(runs[0].local, 0);
  EXPECT_EQ(runs[0].length, 60);
  std::vector<DimRange> rows = {{1, 3}, {2, 4}, {0, 6}};
  runs = shardRuns(layout, rows);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].model, 2 * 30 + 2 * 6);
  EXPECT_EQ(runs[1].local, 12);
  EXPECT_EQ(runs[1].length, 12);
  EXPECT_EQ(modelIndicesOfRuns(layout, rows),
            bruteForceModelIndices(layout, rows));

  // The whole tensor, a scalar, and an empty box.
  runs = shardRuns(layout, {{0, 4}, {0, 5}, {0, 6}});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].length, 120);
  runs = shardRuns(boxLayout({}), {});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].length, 1);
  EXPECT_TRUE(shardRuns(layout, {{1, 3}, {2, 2}, {0, 6}}).empty());
  EXPECT_EQ(shardElements({{1, 3}, {2, 2}, {0, 6}}), 0);
  EXPECT_EQ(shardElements({{1, 3}, {0, 5}, {2, 4}}), 20);
}

TEST(ShardRuns, FlatPartitionsLeavePaddingOut) {
  // 10 model elements padded to 12 over 4 ranks: 3 each.
  ShardLayout layout = flatLayout({2, 5}, 12);
  std::vector<ShardRun> runs = shardRuns(layout, {{3, 6}});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model, 3);
  EXPECT_EQ(runs[0].local, 0);
  EXPECT_EQ(runs[0].length, 3);
  runs = shardRuns(layout, {{9, 12}});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model, 9);
  EXPECT_EQ(runs[0].length, 1);
  // All padding: no runs (16 = 4 x 4, the last rank holds 12..16).
  EXPECT_TRUE(shardRuns(flatLayout({2, 5}, 16), {{12, 16}}).empty());
  EXPECT_TRUE(shardRuns(layout, {{4, 4}}).empty());
}

TEST(ShardRuns, ModelSplitAlongColumns) {
  // 4x6 split on dim 1 in two parts of 4x3 (12 elements), padded to 14;
  // each row's columns split in two for the data axis.
  ShardLayout layout = splitLayout({4, 6}, 1, 2, 14);
  std::vector<ShardRun> runs = shardRuns(layout, {{0, 1}, {0, 7}});
  // Part 0 is columns 0-2 of every row: model 0-2, 6-8, then 12.
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].model, 0);
  EXPECT_EQ(runs[0].length, 3);
  EXPECT_EQ(runs[1].model, 6);
  EXPECT_EQ(runs[1].local, 3);
  EXPECT_EQ(runs[1].length, 3);
  EXPECT_EQ(runs[2].model, 12);
  EXPECT_EQ(runs[2].local, 6);
  EXPECT_EQ(runs[2].length, 1);
  // Part 1 from its element 7 (row 2, column 4): 16-17, 21-23, then
  // padding at columns 12 and 13.
  runs = shardRuns(layout, {{1, 2}, {7, 14}});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].model, 16);
  EXPECT_EQ(runs[0].local, 0);
  EXPECT_EQ(runs[0].length, 2);
  EXPECT_EQ(runs[1].model, 21);
  EXPECT_EQ(runs[1].local, 2);
  EXPECT_EQ(runs[1].length, 3);
  EXPECT_EQ(shardRunCount(layout, {{1, 2}, {7, 14}}), 2);
  // Both rows: in model order, the parts interleave row by row.
  runs = shardRuns(layout, {{0, 2}, {0, 14}});
  ASSERT_EQ(runs.size(), 8u);
  EXPECT_EQ(runs[1].model, 3);
  EXPECT_EQ(runs[1].local, 14);
  EXPECT_EQ(shardRunCount(layout, {{0, 2}, {0, 14}}), 8);
  for (std::vector<DimRange> ranges : {std::vector<DimRange>{{0, 1}, {0, 7}},
                                       {{1, 2}, {7, 14}},
                                       {{0, 2}, {0, 14}},
                                       {{0, 2}, {5, 9}},
                                       {{1, 2}, {12, 14}}})
    EXPECT_EQ(modelIndicesOfRuns(layout, ranges),
              bruteForceModelIndices(layout, ranges))
        << describe(layout, ranges);
  EXPECT_TRUE(shardRuns(layout, {{1, 2}, {12, 14}}).empty());
  // One whole block of both rows (no padding): one run.
  ShardLayout unpadded = splitLayout({4, 6}, 1, 2, 12);
  runs = shardRuns(unpadded, {{0, 2}, {3, 6}});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model, 6);
  EXPECT_EQ(runs[0].length, 6);
  EXPECT_EQ(shardRunCount(unpadded, {{0, 2}, {3, 6}}), 1);
  // One part: the plain flat layout, in one run.
  runs = shardRuns(splitLayout({4, 6}, 1, 1, 30), {{0, 1}, {5, 30}});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model, 5);
  EXPECT_EQ(runs[0].length, 19);
}

TEST(ShardRuns, ModelSplitAlongRows) {
  // 4x6 split on dim 0: part t is rows 2t and 2t+1, 12 consecutive model
  // elements.
  ShardLayout layout = splitLayout({4, 6}, 0, 2, 14);
  std::vector<ShardRun> runs = shardRuns(layout, {{1, 2}, {7, 14}});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model, 19);
  EXPECT_EQ(runs[0].local, 0);
  EXPECT_EQ(runs[0].length, 5);
  runs = shardRuns(layout, {{0, 2}, {0, 7}});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].model, 12);
  EXPECT_EQ(runs[1].local, 7);
  EXPECT_EQ(runs[1].length, 7);
  for (std::vector<DimRange> ranges : {std::vector<DimRange>{{0, 1}, {0, 7}},
                                       {{1, 2}, {7, 14}},
                                       {{0, 2}, {0, 14}},
                                       {{0, 2}, {3, 12}}})
    EXPECT_EQ(modelIndicesOfRuns(layout, ranges),
              bruteForceModelIndices(layout, ranges))
        << describe(layout, ranges);
}

TEST(ShardRuns, MatchesBruteForceOnRandomBoxesAndRanges) {
  std::mt19937 generator(7);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(generator);
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<int64_t> shape(static_cast<size_t>(uniform(0, 4)));
    for (int64_t &dim : shape)
      dim = uniform(trial % 7 == 0 ? 0 : 1, 6);
    int kind = static_cast<int>(uniform(0, 5));
    ShardLayout layout = kind == 0
                             ? flatLayout(shape, product(shape) + uniform(0, 5))
                             : boxLayout(shape);
    if (kind == 1 && !shape.empty()) {
      int dim = static_cast<int>(uniform(0, shape.size() - 1));
      int64_t parts = randomDivisor(shape[dim], generator);
      layout = splitLayout(shape, dim, parts,
                           product(shape) / parts + uniform(0, 5));
    }
    std::vector<DimRange> ranges;
    for (int64_t dim : layout.globalShape) {
      int64_t a = uniform(0, dim), b = uniform(0, dim);
      if (uniform(0, 2) == 0)
        a = 0, b = dim; // Whole dims are common and merge runs.
      ranges.emplace_back(std::min(a, b), std::max(a, b));
    }
    EXPECT_EQ(modelIndicesOfRuns(layout, ranges),
              bruteForceModelIndices(layout, ranges))
        << describe(layout, ranges);
    if (HasFailure())
      break;
  }
}

TEST(RunOverlaps, HandExamples) {
  std::vector<RunOverlap> overlaps = runOverlaps({{0, 0, 10}}, {{5, 0, 10}});
  ASSERT_EQ(overlaps.size(), 1u);
  EXPECT_EQ(overlaps[0].source, 5);
  EXPECT_EQ(overlaps[0].target, 0);
  EXPECT_EQ(overlaps[0].length, 5);
  // Interleaved runs: rows 0..3 of a 4x4 tensor, split by columns in the
  // source and by rows in the target.
  std::vector<ShardRun> left = {{0, 0, 2}, {4, 2, 2}, {8, 4, 2}, {12, 6, 2}};
  std::vector<ShardRun> bottom = {{8, 0, 8}};
  overlaps = runOverlaps(left, bottom);
  ASSERT_EQ(overlaps.size(), 2u);
  EXPECT_EQ(overlaps[0].source, 4);
  EXPECT_EQ(overlaps[0].target, 0);
  EXPECT_EQ(overlaps[1].source, 6);
  EXPECT_EQ(overlaps[1].target, 4);
  EXPECT_TRUE(runOverlaps(left, {}).empty());
  EXPECT_TRUE(runOverlaps({{0, 0, 4}}, {{4, 0, 4}}).empty());
}

/// A variable laid out over some ranks: its layout and every rank's shard.
struct RandomLayout {
  ShardLayout layout;
  std::vector<std::vector<DimRange>> shards;
};

/// Cut [0, size) into `parts` contiguous ranges at random points (some may
/// be empty).
std::vector<DimRange> randomCuts(int64_t size, int parts, std::mt19937 &gen) {
  std::vector<int64_t> cuts = {0, size};
  for (int i = 1; i < parts; ++i)
    cuts.push_back(std::uniform_int_distribution<int64_t>(0, size)(gen));
  std::sort(cuts.begin(), cuts.end());
  std::vector<DimRange> ranges;
  for (size_t i = 0; i + 1 < cuts.size(); ++i)
    ranges.emplace_back(cuts[i], cuts[i + 1]);
  return ranges;
}

RandomLayout randomLayout(const std::vector<int64_t> &shape,
                          std::mt19937 &gen) {
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(gen);
  };
  RandomLayout result;
  int64_t count = product(shape);
  if (uniform(0, 3) == 0) {
    // A ZeRO partition of a tensor-parallel variable: the model split
    // along one dim, each part flattened and padded to a multiple of the
    // data ranks; a row's columns split over them, or (a box layout of
    // the global tensor) a range of columns of every row.
    int dim = static_cast<int>(uniform(0, shape.size() - 1));
    int64_t parts = randomDivisor(shape[dim], gen);
    int64_t data = uniform(1, 4);
    int64_t chunk = (count / parts + data - 1) / data + uniform(0, 1);
    result.layout = splitLayout(shape, dim, parts, chunk * data);
    bool rows = uniform(0, 2) != 0;
    for (int64_t t = 0; t < (rows ? parts : 1); ++t)
      for (int64_t d = 0; d < data; ++d)
        result.shards.push_back({rows ? DimRange{t, t + 1} : DimRange{0, parts},
                                 {d * chunk, (d + 1) * chunk}});
    std::shuffle(result.shards.begin(), result.shards.end(), gen);
    return result;
  }
  if (uniform(0, 2) == 0) {
    // A ZeRO partition: flattened, padded to a multiple of the world size
    // (sometimes more), an equal range per rank.
    int64_t world = uniform(1, 5);
    int64_t chunk = (count + world - 1) / world + uniform(0, 1);
    result.layout = flatLayout(shape, chunk * world);
    for (int64_t rank = 0; rank < world; ++rank)
      result.shards.push_back({{rank * chunk, (rank + 1) * chunk}});
    return result;
  }
  // Boxes: up to two random dims split at random points (a 2-D hierarchy
  // when both), each box held by one or two ranks (replicas).
  result.layout = boxLayout(shape);
  std::vector<std::vector<DimRange>> perDim;
  for (int64_t dim : shape)
    perDim.push_back({{0, dim}});
  for (int split = 0; split < 2 && !shape.empty(); ++split) {
    size_t dim = static_cast<size_t>(uniform(0, shape.size() - 1));
    perDim[dim] = randomCuts(shape[dim], static_cast<int>(uniform(1, 4)), gen);
  }
  std::vector<std::vector<DimRange>> boxes = {{}};
  for (const std::vector<DimRange> &choices : perDim) {
    std::vector<std::vector<DimRange>> next;
    for (const std::vector<DimRange> &box : boxes)
      for (const DimRange &range : choices) {
        next.push_back(box);
        next.back().push_back(range);
      }
    boxes = std::move(next);
  }
  int replicas = static_cast<int>(uniform(1, 2));
  for (int replica = 0; replica < replicas; ++replica)
    for (const std::vector<DimRange> &box : boxes)
      result.shards.push_back(box);
  std::shuffle(result.shards.begin(), result.shards.end(), gen);
  return result;
}

TEST(RunOverlaps, ReshardsRandomLayoutsElementByElement) {
  std::mt19937 generator(11);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(generator);
  };
  constexpr double kUnwritten = -7;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int64_t> shape(static_cast<size_t>(uniform(1, 3)));
    for (int64_t &dim : shape)
      dim = uniform(1, 7);
    RandomLayout source = randomLayout(shape, generator);
    RandomLayout target = randomLayout(shape, generator);
    // The source shards hold model element m as the value m (padding: -1),
    // filled from the brute-force mapping.
    std::vector<std::vector<double>> sourceData;
    for (const std::vector<DimRange> &shard : source.shards) {
      std::vector<int64_t> model = bruteForceModelIndices(source.layout, shard);
      sourceData.emplace_back(model.begin(), model.end());
    }
    for (const std::vector<DimRange> &shard : target.shards) {
      std::vector<int64_t> expected =
          bruteForceModelIndices(target.layout, shard);
      std::vector<double> data(expected.size(), kUnwritten);
      std::vector<ShardRun> targetRuns = shardRuns(target.layout, shard);
      for (size_t s = 0; s < source.shards.size(); ++s) {
        std::vector<int64_t> sourceModel =
            bruteForceModelIndices(source.layout, source.shards[s]);
        std::vector<RunOverlap> overlaps =
            runOverlaps(shardRuns(source.layout, source.shards[s]), targetRuns);
        // The overlaps are exactly the (source, target) pairs of local
        // elements that hold the same model element.
        std::vector<std::pair<int64_t, int64_t>> pairs, expectedPairs;
        for (const RunOverlap &overlap : overlaps) {
          EXPECT_GT(overlap.length, 0);
          ASSERT_GE(overlap.source, 0);
          ASSERT_LE(overlap.source + overlap.length,
                    static_cast<int64_t>(sourceModel.size()));
          ASSERT_GE(overlap.target, 0);
          ASSERT_LE(overlap.target + overlap.length,
                    static_cast<int64_t>(data.size()));
          for (int64_t k = 0; k < overlap.length; ++k) {
            pairs.emplace_back(overlap.source + k, overlap.target + k);
            data[overlap.target + k] = sourceData[s][overlap.source + k];
          }
        }
        for (size_t i = 0; i < sourceModel.size(); ++i)
          for (size_t j = 0; j < expected.size(); ++j)
            if (sourceModel[i] >= 0 && sourceModel[i] == expected[j])
              expectedPairs.emplace_back(i, j);
        std::sort(pairs.begin(), pairs.end());
        EXPECT_EQ(pairs, expectedPairs);
      }
      // Every model element of the target shard came over; padding was
      // not written.
      for (size_t j = 0; j < expected.size(); ++j)
        EXPECT_EQ(data[j], expected[j] >= 0 ? static_cast<double>(expected[j])
                                            : kUnwritten)
            << "target element " << j << " of "
            << describe(target.layout, shard) << " from "
            << describe(source.layout, source.shards[0]) << " (+"
            << source.shards.size() - 1 << " more)";
    }
    if (HasFailure())
      break;
  }
}

TEST(LayoutOf, ReadsFlatnessFromTheLogicalShape) {
  PlanVariable variable;
  variable.globalShape = {4, 3};
  ShardLayout layout = layoutOf(variable);
  EXPECT_FALSE(layout.flat);
  EXPECT_EQ(layout.modelShape, (std::vector<int64_t>{4, 3}));
  variable.globalShape = {16};
  variable.logicalShape = std::vector<int64_t>{4, 3};
  layout = layoutOf(variable);
  EXPECT_TRUE(layout.flat);
  EXPECT_EQ(layout.modelShape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(layout.globalShape, (std::vector<int64_t>{16}));
  EXPECT_FALSE(layout.modelSplit);
  // Split on model dim 1 over a model axis of 3: the rows are its parts.
  variable.globalShape = {3, 6};
  variable.modelSplit = ModelSplit{1, 1};
  layout = layoutOf(variable);
  EXPECT_TRUE(layout.flat);
  ASSERT_TRUE(layout.modelSplit);
  EXPECT_EQ(layout.modelSplit->dim, 1);
  EXPECT_EQ(layout.modelSplit->parts, 3);
}

} // namespace
