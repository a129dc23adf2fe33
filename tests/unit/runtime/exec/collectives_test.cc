//===- collectives_test.cc - plan collectives and shard placement ---------===//
//
// The executor's collectives on shapes the integration tests do not reach
// (split and gathered axes other than the leading one, all-to-all,
// multi-segment buckets, shard.all_slice and sbp.to_partial on a 2-D grid)
// against results worked out here, and shardOf/placeShard against
// hand-written shards.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/core/Error.h"
#include "runtime/exec/Collectives.h"
#include "runtime/exec/Distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <thread>

using namespace zerosbp::runtime;

namespace {

TensorRef view(std::vector<float> &data, std::vector<int64_t> shape) {
  TensorRef ref;
  ref.data = data.data();
  ref.dtype = DType::F32;
  ref.shape = std::move(shape);
  return ref;
}

Instruction collective(CollectiveKind kind, int segments) {
  Instruction instruction;
  instruction.kind = InstructionKind::CollectiveStart;
  instruction.collective = kind;
  instruction.bucket = 0;
  for (int i = 0; i < segments; ++i)
    instruction.segments.push_back(Segment());
  return instruction;
}

/// Runs `body(rank, comm, group)` on `n` threads.
template <typename Body> void onRanks(int n, Body body) {
  InProcessWorld world(n);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank)
    threads.emplace_back([&, rank] {
      Communicator &comm = world.communicator(rank);
      std::vector<int> all(n);
      std::iota(all.begin(), all.end(), 0);
      CommGroup &group = comm.createGroup(all);
      body(rank, comm, group);
    });
  for (std::thread &thread : threads)
    thread.join();
}

TEST(Collectives, ReduceScatterAlongTheSecondAxis) {
  // Rank r holds x[i][j] = 10 r + 4 i + j, shape 2x4; the sum over 2 ranks
  // is 10 + 8 i + 2 j, and rank r keeps columns [2r, 2r + 2).
  Instruction instruction = collective(CollectiveKind::ReduceScatter, 1);
  instruction.scatterAxis = 1;
  onRanks(2, [&](int rank, Communicator &comm, CommGroup &group) {
    std::vector<float> in(8), out(4);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        in[4 * i + j] = 10 * rank + 4 * i + j;
    runCollective(instruction, {view(in, {2, 4})}, {view(out, {2, 2})}, nullptr,
                  group, comm);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        EXPECT_EQ(out[2 * i + j], 10 + 8 * i + 2 * (2 * rank + j));
  });
}

TEST(Collectives, AllGatherAlongTheSecondAxis) {
  Instruction instruction = collective(CollectiveKind::AllGather, 1);
  instruction.gatherAxis = 1;
  onRanks(3, [&](int rank, Communicator &comm, CommGroup &group) {
    std::vector<float> in = {float(rank), float(10 + rank)}; // 2x1
    std::vector<float> out(6);
    runCollective(instruction, {view(in, {2, 1})}, {view(out, {2, 3})}, nullptr,
                  group, comm);
    EXPECT_EQ(out, (std::vector<float>{0, 1, 2, 10, 11, 12}));
  });
}

TEST(Collectives, BucketsOfSeveralSegments) {
  // Segments of 4 and 2 elements: rank r gets its part of each.
  Instruction scatter = collective(CollectiveKind::ReduceScatter, 2);
  scatter.scatterAxis = 0;
  Instruction gather = collective(CollectiveKind::AllGather, 2);
  gather.gatherAxis = 0;
  onRanks(2, [&](int rank, Communicator &comm, CommGroup &group) {
    std::vector<float> a = {1, 2, 3, 4}, b = {5, 6};
    for (float &x : a)
      x *= rank + 1;
    for (float &x : b)
      x *= rank + 1;
    std::vector<float> partA(2), partB(1);
    runCollective(scatter, {view(a, {4}), view(b, {2})},
                  {view(partA, {2}), view(partB, {1})}, nullptr, group, comm);
    // (1 + 2) times the original values.
    EXPECT_EQ(partA,
              (std::vector<float>{3.f * (1 + 2 * rank), 3.f * (2 + 2 * rank)}));
    EXPECT_EQ(partB, (std::vector<float>{3.f * (5 + rank)}));
    std::vector<float> fullA(4), fullB(2);
    runCollective(gather, {view(partA, {2}), view(partB, {1})},
                  {view(fullA, {4}), view(fullB, {2})}, nullptr, group, comm);
    EXPECT_EQ(fullA, (std::vector<float>{3, 6, 9, 12}));
    EXPECT_EQ(fullB, (std::vector<float>{15, 18}));
  });
}

TEST(Collectives, AllReduceBucketInPlaceAndThroughStaging) {
  Instruction instruction = collective(CollectiveKind::AllReduce, 2);
  instruction.segments[0] = {0, 2};
  instruction.segments[1] = {2, 3};
  onRanks(3, [&](int rank, Communicator &comm, CommGroup &group) {
    // Contiguous, results in place.
    std::vector<float> flat = {1, 2, 3, 4, 5};
    for (float &x : flat)
      x += rank;
    TensorRef first = view(flat, {2});
    TensorRef second = view(flat, {3});
    second.data = flat.data() + 2;
    runCollective(instruction, {first, second}, {first, second}, nullptr, group,
                  comm);
    EXPECT_EQ(flat, (std::vector<float>{6, 9, 12, 15, 18}));
    // Apart, through a staging buffer, into other results.
    std::vector<float> a = {1, 1}, b = {2, 2, 2}, ra(2), rb(3), staging(5);
    runCollective(instruction, {view(a, {2}), view(b, {3})},
                  {view(ra, {2}), view(rb, {3})}, staging.data(), group, comm);
    EXPECT_EQ(ra, (std::vector<float>{3, 3}));
    EXPECT_EQ(rb, (std::vector<float>{6, 6, 6}));
    EXPECT_EQ(a, (std::vector<float>{1, 1})) << "operands stay unchanged";
  });
}

TEST(Collectives, AllToAllSwapsTheSplitAxis) {
  // 2 ranks; each holds a 2x2 block; all-to-all from S(1) to S(0) turns
  // rank r's columns into rows.
  Instruction instruction = collective(CollectiveKind::AllToAll, 1);
  instruction.scatterAxis = 0;
  instruction.gatherAxis = 1;
  onRanks(2, [&](int rank, Communicator &comm, CommGroup &group) {
    // Rank r holds rows of column block r of M = [[0 1 2 3] [4 5 6 7]]:
    // rank 0: [[0 1] [4 5]], rank 1: [[2 3] [6 7]].
    std::vector<float> in = {float(2 * rank), float(2 * rank + 1),
                             float(4 + 2 * rank), float(5 + 2 * rank)};
    std::vector<float> out(4);
    runCollective(instruction, {view(in, {2, 2})}, {view(out, {1, 4})}, nullptr,
                  group, comm);
    // Row `rank` of M.
    EXPECT_EQ(out,
              (std::vector<float>{float(4 * rank), float(4 * rank + 1),
                                  float(4 * rank + 2), float(4 * rank + 3)}));
  });
}

TEST(AllSlice, PartsOfAGridAxis) {
  Plan plan;
  plan.world = 4;
  plan.hierarchy = {2, 2};
  Instruction instruction;
  instruction.attrs.set("slice_axis", int64_t(1));
  instruction.attrs.set("grid_axes", std::vector<int64_t>{1});
  std::vector<float> in = {0, 1, 2, 10, 11, 12}; // 2x3
  // Rank 3 is at (1, 1): the second part of 3 columns in 2 is column 2.
  std::vector<float> out(2);
  runAllSlice(instruction, plan, 3, view(in, {2, 3}), view(out, {2, 1}));
  EXPECT_EQ(out, (std::vector<float>{2, 12}));
  // Rank 2 is at (1, 0): columns 0 and 1 (larger parts first).
  std::vector<float> first(4);
  runAllSlice(instruction, plan, 2, view(in, {2, 3}), view(first, {2, 2}));
  EXPECT_EQ(first, (std::vector<float>{0, 1, 10, 11}));
}

TEST(ToPartial, FromBroadcastTheFirstCoordinateKeepsTheValue) {
  Plan plan;
  plan.world = 4;
  plan.hierarchy = {2, 2};
  Instruction instruction;
  instruction.attrs.set("grid_axis", int64_t(1));
  std::vector<float> in = {1, 2, 3};
  // Ranks 0 and 2 are at coordinate 0 of axis 1; 1 and 3 hold zeros, so
  // the sum over the axis is the value once.
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<float> out(3, -1);
    runToPartial(instruction, plan, rank, view(in, {3}), view(out, {3}));
    EXPECT_EQ(out, rank % 2 == 0 ? in : std::vector<float>(3, 0)) << rank;
  }
}

TEST(ToPartial, FromSplitThePartAtItsBlock) {
  Plan plan;
  plan.world = 4;
  plan.hierarchy = {2, 2};
  Instruction instruction;
  instruction.attrs.set("grid_axis", int64_t(0));
  instruction.attrs.set("split_axis", int64_t(1));
  // Three columns over the 2 ranks of axis 0: 2 and 1, larger first. Rank
  // 3 is at (1, 1): its column goes to column 2.
  std::vector<float> last = {5, 15}; // 2x1
  std::vector<float> out(6, -1);
  runToPartial(instruction, plan, 3, view(last, {2, 1}), view(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{0, 0, 5, 0, 0, 15}));
  std::vector<float> first = {1, 2, 11, 12}; // 2x2
  runToPartial(instruction, plan, 1, view(first, {2, 2}), view(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<float>{1, 2, 0, 11, 12, 0}));
  // A part of the wrong size is refused.
  EXPECT_THROW(runToPartial(instruction, plan, 3, view(first, {2, 2}),
                            view(out, {2, 3})),
               RuntimeError);
}

TEST(Distribution, ShardsOfAFlatPaddedPartition) {
  // A 2x3 model tensor partitioned flat over 4 ranks: padded to 8.
  PlanVariable variable;
  variable.globalShape = {8};
  variable.localShape = {2};
  variable.logicalShape = std::vector<int64_t>{2, 3};
  variable.shards = {{{0, 2}}, {{2, 4}}, {{4, 6}}, {{6, 8}}};
  std::vector<double> model = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(shardOf(variable, 2, model), (std::vector<double>{5, 6}));
  EXPECT_EQ(shardOf(variable, 3, model), (std::vector<double>{0, 0}));
  // Back into the model tensor; the padding is left out.
  std::vector<double> global(8, -1);
  for (int rank = 0; rank < 4; ++rank)
    placeShard(variable, rank, shardOf(variable, rank, model), global);
  EXPECT_EQ(global, (std::vector<double>{1, 2, 3, 4, 5, 6, -1, -1}));
}

/// A 4x6 model tensor split on dim `dim` over the model axis `modelAxis` of
/// a 2x2 hierarchy, each part flattened and padded to 14 (two 7s for the
/// data axis): global [2, 14], a row per part, shards from the SBP.
PlanVariable modelSplitVariable(int modelAxis, int dim) {
  PlanVariable variable;
  variable.globalShape = {2, 14};
  variable.localShape = {1, 7};
  variable.logicalShape = std::vector<int64_t>{4, 6};
  variable.modelSplit = ModelSplit{modelAxis, dim};
  variable.hierarchy = {2, 2};
  variable.sbp = modelAxis == 0 ? std::vector<std::string>{"S(0)", "S(1)"}
                                : std::vector<std::string>{"S(1)", "S(0)"};
  variable.splitDims =
      modelAxis == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 0};
  return variable;
}

TEST(Distribution, ShardsOfAModelSplitPartition) {
  std::vector<double> model(24);
  for (size_t i = 0; i < model.size(); ++i)
    model[i] = static_cast<double>(i + 1); // Distinct, and never 0.
  // Split on columns, model axis 1: rank 0 is (data 0, model 0), the first
  // 7 elements of part 0 (columns 0-2); rank 3 is (1, 1), part 1 (columns
  // 3-5) from its element 7 on, two of them padding.
  PlanVariable columns = modelSplitVariable(1, 1);
  EXPECT_EQ(shardOf(columns, 0, model),
            (std::vector<double>{1, 2, 3, 7, 8, 9, 13}));
  EXPECT_EQ(shardOf(columns, 3, model),
            (std::vector<double>{17, 18, 22, 23, 24, 0, 0}));
  // The same with the model axis first: rank 1 is (model 0, data 1).
  PlanVariable first = modelSplitVariable(0, 1);
  EXPECT_EQ(shardOf(first, 1, model),
            (std::vector<double>{14, 15, 19, 20, 21, 0, 0}));
  // Split on rows: part 1 is rows 2-3, model elements 12-23.
  PlanVariable rows = modelSplitVariable(1, 0);
  EXPECT_EQ(shardOf(rows, 1, model),
            (std::vector<double>{13, 14, 15, 16, 17, 18, 19}));
  for (const PlanVariable *variable : {&columns, &first, &rows}) {
    // Every rank's shard, back in place, is the model tensor; the padding
    // is left out (the last four elements of the global count).
    std::vector<double> global(28, -1);
    for (int rank = 0; rank < 4; ++rank)
      placeShard(*variable, rank, shardOf(*variable, rank, model), global);
    std::vector<double> expected = model;
    expected.resize(28, -1);
    EXPECT_EQ(global, expected);
  }
}

TEST(Distribution, ShardsOfASecondAxisSplit) {
  // A 2x4 tensor split S(1) over 2 ranks.
  DistributedTensor tensor;
  tensor.globalShape = {2, 4};
  tensor.localShape = {2, 2};
  tensor.shards = {{{0, 2}, {0, 2}}, {{0, 2}, {2, 4}}};
  std::vector<double> model = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(shardOf(tensor, 1, model), (std::vector<double>{2, 3, 6, 7}));
}

TEST(Distribution, InitIsTheSameOnEveryRankAndSeeded) {
  PlanVariable variable;
  variable.name = "w";
  variable.globalShape = {1000};
  variable.init = "normal";
  variable.initScale = 0.5;
  std::vector<double> a = initialValues(variable, 7);
  EXPECT_EQ(a, initialValues(variable, 7));
  EXPECT_NE(a, initialValues(variable, 8));
  double mean = 0, square = 0;
  for (double x : a) {
    mean += x / a.size();
    square += x * x / a.size();
  }
  EXPECT_NEAR(mean, 0, 0.05);
  EXPECT_NEAR(std::sqrt(square), 0.5, 0.05);
  variable.init = "uniform";
  for (double x : initialValues(variable, 7))
    EXPECT_LE(std::abs(x), 0.5);
  variable.init = "constant";
  EXPECT_EQ(initialValues(variable, 7)[999], 0.5);
}

} // namespace
