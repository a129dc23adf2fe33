//===- pipeline_schedule_test.cc - 1F1B, GPipe and their planned step -----===//

#include "passes/pipeline/PipelineSchedule.h"

#include <gtest/gtest.h>

using namespace zerosbp::pipeline;

namespace {

/// A chain of `stages` balanced stages: a forward costs 1 and a backward
/// 2; F(m) on stage s waits for F(m) on s - 1, B(m) for B(m) on s + 1.
struct Chain {
  std::map<StageChunk, double> cost;
  std::map<StageChunk, std::set<StageChunk>> waitsFor;
  Chain(int64_t stages, int64_t microBatches) {
    for (int64_t s = 0; s < stages; ++s)
      for (int64_t m = 0; m < microBatches; ++m) {
        cost[{s, {Phase::Forward, m}}] = 1;
        cost[{s, {Phase::Backward, m}}] = 2;
        if (s > 0)
          waitsFor[{s, {Phase::Forward, m}}].insert(
              {s - 1, {Phase::Forward, m}});
        if (s + 1 < stages)
          waitsFor[{s, {Phase::Backward, m}}].insert(
              {s + 1, {Phase::Backward, m}});
      }
  }
};

TEST(PipelineSchedule, OneForwardOneBackward) {
  // Stage 0 of 3 with 4 micro-batches: two forwards ahead, then 1F1B.
  llvm::SmallVector<Chunk> expected = {
      {Phase::Forward, 0},  {Phase::Forward, 1}, {Phase::Forward, 2},
      {Phase::Backward, 0}, {Phase::Forward, 3}, {Phase::Backward, 1},
      {Phase::Backward, 2}, {Phase::Backward, 3}};
  EXPECT_EQ(scheduleOf(0, 3, 4, /*gpipe=*/false), expected);
  // The last stage alternates from the start.
  llvm::SmallVector<Chunk> last = {{Phase::Forward, 0},
                                   {Phase::Backward, 0},
                                   {Phase::Forward, 1},
                                   {Phase::Backward, 1}};
  EXPECT_EQ(scheduleOf(2, 3, 2, /*gpipe=*/false), last);
}

TEST(PipelineSchedule, GPipe) {
  llvm::SmallVector<Chunk> expected = {{Phase::Forward, 0},
                                       {Phase::Forward, 1},
                                       {Phase::Backward, 0},
                                       {Phase::Backward, 1}};
  EXPECT_EQ(scheduleOf(1, 3, 2, /*gpipe=*/true), expected);
}

// On balanced stages the step is M + P - 1 chunk pairs: the bubble is
// (P - 1)/(M + P - 1) for both schedules.
TEST(PipelineSchedule, BalancedBubble) {
  for (bool gpipe : {false, true})
    for (auto [stages, micro] :
         {std::pair<int64_t, int64_t>{2, 2}, {4, 8}, {8, 16}, {3, 1}}) {
      Chain chain(stages, micro);
      auto [planned, stalled] =
          planStep(stages, micro, gpipe, chain.cost, chain.waitsFor);
      ASSERT_TRUE(planned.has_value());
      EXPECT_DOUBLE_EQ(planned->step, 3.0 * (micro + stages - 1))
          << stages << " stages, " << micro << " micro-batches";
      EXPECT_NEAR(planned->bubble(),
                  static_cast<double>(stages - 1) / (micro + stages - 1),
                  1e-12);
    }
}

// A backward that waits for a later stage's forward never runs: the plan
// names where it stalls instead of looping.
TEST(PipelineSchedule, StallIsReported) {
  Chain chain(2, 1);
  chain.waitsFor[{0, {Phase::Forward, 0}}].insert({1, {Phase::Backward, 0}});
  auto [planned, stalled] =
      planStep(2, 1, /*gpipe=*/false, chain.cost, chain.waitsFor);
  EXPECT_FALSE(planned.has_value());
  EXPECT_EQ(stalled.first, 0);
  EXPECT_EQ(stalled.second, (Chunk{Phase::Forward, 0}));
}

} // namespace
