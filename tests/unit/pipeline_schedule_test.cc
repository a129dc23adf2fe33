//===- pipeline_schedule_test.cc - schedules and their planned step -------===//

#include "passes/pipeline/PipelineSchedule.h"

#include <gtest/gtest.h>

using namespace zerosbp::pipeline;

namespace {

/// A chain of `stages` balanced stages of `chunks` model chunks each
/// (virtual stage c = model * stages + stage): a forward through the whole
/// stack costs 1 and a backward 2, shared evenly by the virtual stages.
/// F(m) on virtual stage c waits for F(m) on c - 1, B(m) for B(m) on c + 1.
struct Chain {
  std::map<StageChunk, double> cost;
  std::map<StageChunk, std::set<StageChunk>> waitsFor;
  Chain(int64_t stages, int64_t microBatches, int64_t chunks = 1) {
    int64_t virtualStages = stages * chunks;
    auto at = [&](int64_t c, Phase phase, int64_t m) {
      return StageChunk{c % stages, {phase, m, c / stages}};
    };
    for (int64_t c = 0; c < virtualStages; ++c)
      for (int64_t m = 0; m < microBatches; ++m) {
        cost[at(c, Phase::Forward, m)] = 1.0 / chunks;
        cost[at(c, Phase::Backward, m)] = 2.0 / chunks;
        if (c > 0)
          waitsFor[at(c, Phase::Forward, m)].insert(
              at(c - 1, Phase::Forward, m));
        if (c + 1 < virtualStages)
          waitsFor[at(c, Phase::Backward, m)].insert(
              at(c + 1, Phase::Backward, m));
      }
  }
};

Schedule oneF1B(int64_t stages, int64_t micro, int64_t chunks = 1) {
  return {stages, micro, chunks, /*gpipe=*/false};
}

TEST(PipelineSchedule, OneForwardOneBackward) {
  // Stage 0 of 3 with 4 micro-batches: two forwards ahead, then 1F1B.
  llvm::SmallVector<Chunk> expected = {
      {Phase::Forward, 0},  {Phase::Forward, 1}, {Phase::Forward, 2},
      {Phase::Backward, 0}, {Phase::Forward, 3}, {Phase::Backward, 1},
      {Phase::Backward, 2}, {Phase::Backward, 3}};
  EXPECT_EQ(scheduleOf(0, oneF1B(3, 4)), expected);
  // The last stage alternates from the start.
  llvm::SmallVector<Chunk> last = {{Phase::Forward, 0},
                                   {Phase::Backward, 0},
                                   {Phase::Forward, 1},
                                   {Phase::Backward, 1}};
  EXPECT_EQ(scheduleOf(2, oneF1B(3, 2)), last);
}

TEST(PipelineSchedule, GPipe) {
  llvm::SmallVector<Chunk> expected = {{Phase::Forward, 0},
                                       {Phase::Forward, 1},
                                       {Phase::Backward, 0},
                                       {Phase::Backward, 1}};
  EXPECT_EQ(scheduleOf(1, {3, 2, 1, /*gpipe=*/true}), expected);
}

// On balanced stages the step is M + P - 1 chunk pairs: the bubble is
// (P - 1)/(M + P - 1) for both schedules.
TEST(PipelineSchedule, BalancedBubble) {
  for (bool gpipe : {false, true})
    for (auto [stages, micro] :
         {std::pair<int64_t, int64_t>{2, 2}, {4, 8}, {8, 16}, {3, 1}}) {
      Chain chain(stages, micro);
      auto [planned, stalled] =
          planStep({stages, micro, 1, gpipe}, chain.cost, chain.waitsFor);
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
  auto [planned, stalled] = planStep(oneF1B(2, 1), chain.cost, chain.waitsFor);
  EXPECT_FALSE(planned.has_value());
  EXPECT_EQ(stalled.first, 0);
  EXPECT_EQ(stalled.second, (Chunk{Phase::Forward, 0}));
}

// Megatron's interleaved order on stage 0 of 2 with 2 model chunks and 4
// micro-batches: micro-batches in pairs through chunk 0, then chunk 1;
// (2 - 1) * 2 + (2 - 1) * 2 = 4 forwards ahead; backwards from chunk 1.
TEST(PipelineSchedule, Interleaved) {
  auto f = [](int64_t m, int64_t model) {
    return Chunk{Phase::Forward, m, model};
  };
  auto b = [](int64_t m, int64_t model) {
    return Chunk{Phase::Backward, m, model};
  };
  llvm::SmallVector<Chunk> expected = {
      f(0, 0), f(1, 0), f(0, 1), f(1, 1), f(2, 0), b(0, 1), f(3, 0), b(1, 1),
      f(2, 1), b(0, 0), f(3, 1), b(1, 0), b(2, 1), b(3, 1), b(2, 0), b(3, 0)};
  EXPECT_EQ(scheduleOf(0, oneF1B(2, 4, 2)), expected);
  // As many micro-batches as stages: every forward runs first.
  llvm::SmallVector<Chunk> warm = scheduleOf(1, oneF1B(2, 2, 2));
  ASSERT_EQ(warm.size(), 8u);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(warm[i].phase, Phase::Forward) << i;
  // Each stage runs every chunk once.
  for (int64_t stage = 0; stage < 4; ++stage) {
    llvm::SmallVector<Chunk> order = scheduleOf(stage, oneF1B(4, 8, 3));
    std::set<Chunk> distinct(order.begin(), order.end());
    EXPECT_EQ(order.size(), 2u * 8 * 3);
    EXPECT_EQ(distinct.size(), order.size());
  }
}

// Interleaving v model chunks shrinks the bubble v times: on balanced
// stages the step is M + (P - 1)/v forward-backward pairs, the bubble
// (P - 1)/(v M + P - 1).
TEST(PipelineSchedule, InterleavedBubble) {
  for (auto [stages, micro, chunks] :
       {std::tuple<int64_t, int64_t, int64_t>{2, 4, 2},
        {4, 8, 2},
        {4, 16, 4},
        {8, 16, 3},
        {4, 4, 6}}) {
    Chain chain(stages, micro, chunks);
    auto [planned, stalled] =
        planStep(oneF1B(stages, micro, chunks), chain.cost, chain.waitsFor);
    ASSERT_TRUE(planned.has_value())
        << stages << " stages, " << micro << " micro-batches, " << chunks
        << " chunks: stalls on stage " << stalled.first;
    double pairs = micro + static_cast<double>(stages - 1) / chunks;
    EXPECT_NEAR(planned->step, 3.0 * pairs, 1e-9)
        << stages << " stages, " << micro << " micro-batches, " << chunks
        << " chunks";
    EXPECT_NEAR(planned->bubble(),
                static_cast<double>(stages - 1) / (chunks * micro + stages - 1),
                1e-12);
  }
}

} // namespace
