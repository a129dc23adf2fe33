//===- rank_attrs_test.cc - each rank's offsets for nn.dropout ------------===//
//
// rankAttrs adds `shard_offsets` to instructions with `split_dims`, by the
// balanced nested splits of docs/plan-format.md "Shards", and refuses
// attributes that do not describe the operand's block.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/exec/RankAttrs.h"

#include <gtest/gtest.h>

using namespace zerosbp::runtime;

namespace {

/// A plan with one nn.dropout instruction whose operand has `local` shape.
Plan dropoutPlan(std::vector<int64_t> hierarchy, std::vector<int64_t> local,
                 std::vector<int64_t> global, std::vector<int64_t> splitDims) {
  Plan plan;
  plan.source = "test.zplan";
  plan.hierarchy = std::move(hierarchy);
  int64_t world = 1;
  for (int64_t size : plan.hierarchy)
    world *= size;
  plan.world = static_cast<int>(world);
  PlanValue value;
  value.shape = std::move(local);
  plan.values = {value, value};
  Instruction instruction;
  instruction.op = "nn.dropout";
  instruction.operands = {0};
  instruction.results = {1};
  instruction.attrs.set("p", 0.5);
  instruction.attrs.set("global_shape", std::move(global));
  instruction.attrs.set("split_dims", std::move(splitDims));
  Instruction other;
  other.op = "nn.relu";
  other.operands = {0};
  other.results = {1};
  plan.instructions = {other, instruction};
  return plan;
}

std::vector<int64_t> offsetsOf(const Plan &plan, int rank) {
  std::vector<AttrMap> attrs = rankAttrs(plan, rank);
  EXPECT_EQ(attrs.size(), 2u);
  EXPECT_FALSE(attrs[0].has("shard_offsets"));
  EXPECT_EQ(attrs[1].getFloat("p"), 0.5);
  return attrs[1].getInts("shard_offsets");
}

TEST(RankAttrs, RowSplitOverFourRanks) {
  Plan plan = dropoutPlan({4}, {2, 5}, {8, 5}, {0});
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(offsetsOf(plan, rank), (std::vector<int64_t>{2 * rank, 0}));
}

TEST(RankAttrs, BroadcastAndPartialStartAtZero) {
  Plan plan = dropoutPlan({2, 2}, {8, 5}, {8, 5}, {-1, -1});
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(offsetsOf(plan, rank), (std::vector<int64_t>{0, 0}));
}

// A 2x2 grid: axis 0 splits rows, axis 1 columns (of 7: 4 then 3).
TEST(RankAttrs, GridSplitsTwoDims) {
  const std::vector<int64_t> locals[] = {{3, 4}, {3, 3}, {3, 4}, {3, 3}};
  const std::vector<int64_t> offsets[] = {{0, 0}, {0, 4}, {3, 0}, {3, 4}};
  for (int rank = 0; rank < 4; ++rank) {
    Plan plan = dropoutPlan({2, 2}, locals[rank], {6, 7}, {0, 1});
    EXPECT_EQ(offsetsOf(plan, rank), offsets[rank]) << rank;
  }
}

// Both axes split dim 0 of 9: axis 0 gives 5 and 4 rows, axis 1 halves
// each part again, larger parts first.
TEST(RankAttrs, NestedSplitsOfOneDim) {
  const int64_t rows[] = {3, 2, 2, 2};
  const int64_t begins[] = {0, 3, 5, 7};
  for (int rank = 0; rank < 4; ++rank) {
    Plan plan = dropoutPlan({2, 2}, {rows[rank]}, {9}, {0, 0});
    EXPECT_EQ(offsetsOf(plan, rank), (std::vector<int64_t>{begins[rank]}))
        << rank;
  }
}

TEST(RankAttrs, RefusesABlockThatDoesNotMatch) {
  Plan plan = dropoutPlan({4}, {3, 5}, {8, 5}, {0});
  try {
    rankAttrs(plan, 1);
    FAIL() << "no error";
  } catch (const RuntimeError &error) {
    EXPECT_EQ(std::string(error.what()),
              "test.zplan: instructions[1] (nn.dropout): rank 1 holds [3, 5], "
              "not its block [2, 5] of [8, 5]");
  }
  Plan axes = dropoutPlan({4}, {2, 5}, {8, 5}, {0, -1});
  EXPECT_THROW(rankAttrs(axes, 0), RuntimeError);
  Plan dim = dropoutPlan({4}, {2, 5}, {8, 5}, {2});
  EXPECT_THROW(rankAttrs(dim, 0), RuntimeError);
}

} // namespace
