//===- loop_executor_test.cc - a looped plan runs as its unrolled twin ----===//
//
// The looped plan of loop_test_plan.h and the same step unrolled by hand,
// each on two in-process CPU ranks (one per stage) for two steps: the
// losses, outputs, variables and the memory the ranks measured agree bit
// for bit, for 1 to 4 micro-batches. Each micro-batch reads its own row of
// x and draws its own dropout mask, and the backward of each reads the a
// of its own forward from its slot, so a copy that named another
// micro-batch's value or buffer, or numbered a mask wrongly, would differ.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/core/Error.h"
#include "runtime/exec/RankExecutor.h"
#include "runtime/plan/Plan.h"
#include "tests/unit/runtime/comm/rank_threads_test_util.h"
#include "tests/unit/runtime/plan/loop_test_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace zerosbp::runtime {
namespace {

using namespace std::chrono_literals;

Plan readByHand(const std::string &text) {
  PlanReadOptions options;
  options.verifyChecksum = false; // Written by hand.
  return parsePlan(text, "loop.zplan", options);
}

struct RankRun {
  std::vector<double> losses;
  std::vector<std::vector<double>> outputs;
  std::map<std::string, std::vector<double>> variables;
  int64_t peak = 0;
};

std::vector<RankRun> runTwoSteps(const Plan &plan, int micro) {
  InProcessWorld world(2);
  std::vector<RankRun> runs(2);
  std::vector<double> input;
  for (int m = 0; m < micro; ++m)
    for (int k = 0; k < 4; ++k)
      input.push_back(0.25 * (m + 1) - 0.125 * k);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(10s);
        RankRun &run = runs[comm.rank()];
        RankExecutor executor(plan, comm.rank(), comm);
        executor.initializeVariables([](const PlanVariable &variable) {
          return variable.name == "w" ? std::vector<double>{1, 2, 3, 4}
                                      : std::vector<double>{-1, 0.5, 2, 3};
        });
        for (int64_t step = 1; step <= 2; ++step) {
          if (comm.rank() == 0)
            executor.writeInput(0, input);
          run.losses.push_back(executor.runStep(step));
          run.outputs.push_back(executor.outputValue(0));
        }
        for (size_t v = 0; v < plan.variables.size(); ++v)
          if (plan.holds(plan.variables[v], comm.rank()))
            run.variables[plan.variables[v].name] =
                executor.variableShard(static_cast<int>(v));
        run.peak = executor.memoryPeaks().total;
      });
  testing::expectNoErrors(errors);
  return runs;
}

TEST(LoopExecutor, RunsAsThePlanUnrolledByHand) {
  for (int micro = 1; micro <= 4; ++micro) {
    SCOPED_TRACE(std::to_string(micro) + " micro-batches");
    std::vector<RankRun> looped =
        runTwoSteps(readByHand(zerosbp::testing::loopedPlan(micro)), micro);
    std::vector<RankRun> unrolled =
        runTwoSteps(readByHand(zerosbp::testing::unrolledPlan(micro)), micro);
    for (int rank = 0; rank < 2; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      EXPECT_EQ(looped[rank].losses, unrolled[rank].losses);
      EXPECT_EQ(looped[rank].outputs, unrolled[rank].outputs);
      EXPECT_EQ(looped[rank].variables, unrolled[rank].variables);
      EXPECT_EQ(looped[rank].peak, unrolled[rank].peak);
    }
    // The step computed something: a total over the micro-batches that
    // moved w.
    ASSERT_EQ(looped[0].outputs.size(), 2u);
    EXPECT_NE(looped[0].outputs[0], std::vector<double>(4, 0.0));
    EXPECT_NE(looped[0].variables["w"], (std::vector<double>{1, 2, 3, 4}));
  }
}

TEST(LoopExecutor, MicroBatchesDrawTheirOwnMasks) {
  // Two micro-batches of the same row: with one mask for both, the total
  // would be twice one micro-batch's.
  Plan plan = readByHand(zerosbp::testing::loopedPlan(2));
  InProcessWorld world(2);
  std::vector<double> output;
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(10s);
        RankExecutor executor(plan, comm.rank(), comm);
        executor.initializeVariables(
            [](const PlanVariable &) { return std::vector<double>(4, 1.0); });
        if (comm.rank() == 0)
          executor.writeInput(0, std::vector<double>(8, 1.0));
        executor.runStep(1);
        if (comm.rank() == 0)
          output = executor.outputValue(0);
      });
  for (const std::exception_ptr &error : errors)
    EXPECT_FALSE(error);
  // Per micro-batch and element: 0.5 * f * a with a = 2 and f = d + 1, d
  // either 0 or 2 * b = 4: 2 or 10. Some element differs between the two
  // masks only if they differ.
  ASSERT_EQ(output.size(), 4u);
  bool mixed = false;
  for (double value : output) {
    EXPECT_TRUE(value == 2 || value == 6 || value == 10) << value;
    mixed = mixed || value == 6;
  }
  EXPECT_TRUE(mixed);
}

} // namespace
} // namespace zerosbp::runtime
