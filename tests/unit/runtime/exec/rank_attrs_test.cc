//===- rank_attrs_test.cc - each rank's offsets for split ops -------------===//
//
// rankAttrs adds `shard_offsets` to instructions with `split_dims`, by the
// balanced nested splits of docs/plan-format.md "Shards", for operand 0 or,
// with `"split_of": "result"`, result 0, and refuses attributes that do not
// describe that value's block.
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

/// nn.embedding_grad of a (vocab, 3) table split by rows on axis 1 of a
/// [1, 2] hierarchy: its result, not its operands, is the split value.
Plan embeddingGradPlan(int64_t localRows, int64_t vocab, const char *splitOf) {
  Plan plan;
  plan.source = "test.zplan";
  plan.hierarchy = {1, 2};
  plan.world = 2;
  PlanValue gradOutput, ids, result;
  gradOutput.shape = {4, 3};
  ids.dtype = DType::I64;
  ids.shape = {4};
  result.shape = {localRows, 3};
  plan.values = {gradOutput, ids, result};
  Instruction instruction;
  instruction.op = "nn.embedding_grad";
  instruction.operands = {0, 1};
  instruction.results = {2};
  instruction.attrs.set("vocab_size", localRows);
  instruction.attrs.set("global_shape", std::vector<int64_t>{vocab, 3});
  instruction.attrs.set("split_dims", std::vector<int64_t>{-1, 0});
  instruction.attrs.set("split_of", std::string(splitOf));
  plan.instructions = {instruction};
  return plan;
}

std::string errorOf(const Plan &plan, int rank) {
  try {
    rankAttrs(plan, rank);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "no error";
}

// 9 rows: rank 0 holds rows [0, 5), rank 1 rows [5, 9).
TEST(RankAttrs, SplitOfResultPlacesTheResult) {
  const int64_t rows[] = {5, 4};
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<AttrMap> attrs =
        rankAttrs(embeddingGradPlan(rows[rank], 9, "result"), rank);
    EXPECT_EQ(attrs[0].getInts("shard_offsets"),
              (std::vector<int64_t>{5 * rank, 0}))
        << rank;
  }
  // The block is the result's, not grad_output's [4, 3].
  EXPECT_EQ(errorOf(embeddingGradPlan(4, 9, "result"), 0),
            "test.zplan: instructions[0] (nn.embedding_grad): rank 0 holds "
            "[4, 3], not its block [5, 3] of [9, 3]");
}

TEST(RankAttrs, RefusesAnUnknownSplitOf) {
  EXPECT_EQ(errorOf(embeddingGradPlan(5, 10, "operand"), 0),
            "test.zplan: instructions[0] (nn.embedding_grad): 'split_of' "
            "must be \"result\", got \"operand\"");
}

} // namespace
