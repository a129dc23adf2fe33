//===- pipeline_executor_test.cc - the CPU executor on pipeline stages ----===//
//
// The two-stage plan of tests/unit/runtime/pipeline_test_plan.h on two
// in-process ranks, one per stage: stage 0 computes a = w + x and sends it,
// stage 1 adds v and sends c back, stage 0 adds w; then each stage updates
// its own parameter in place. Every value of one stage shares arena bytes
// with a value of the other, so the outputs of two steps, checked against
// a hand computation, and the variables after them hold only if each rank
// runs its stage's instructions and writes its stage's variables, input
// and step count alone. Also checked per rank: the memory tracker counts
// its stage's buffers, only the sender counts a send_recv's bytes, and the
// trace holds its stage's instructions.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/core/Error.h"
#include "runtime/exec/RankExecutor.h"
#include "runtime/plan/Plan.h"
#include "tests/unit/runtime/comm/rank_threads_test_util.h"
#include "tests/unit/runtime/pipeline_test_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace zerosbp::runtime {
namespace {

using namespace std::chrono_literals;

Plan pipelinePlan(const char *text = zerosbp::testing::kPipelinePlan) {
  PlanReadOptions options;
  options.verifyChecksum = false; // Written by hand.
  return parsePlan(text, "pipeline.zplan", options);
}

/// The model values every variable starts from.
std::vector<double> initialValue(const PlanVariable &variable) {
  static const std::map<std::string, std::vector<double>> values = {
      {"w", {1, 2, 3, 4}},
      {"u", {5, 6, 7, 8}},
      {"v", {10, 20, 30, 40}},
      {"t", {7, 7, 7, 7}}};
  return values.at(variable.name);
}

const std::vector<double> kInput = {0.5, 0.5, 0.5, 0.5};

/// What one rank saw.
struct RankRun {
  std::vector<double> losses;
  std::vector<std::vector<double>> outputs;
  std::map<std::string, std::vector<double>> variables;
  std::string otherStageRead;
  MemoryPeaks peaks;
  CommStats stats;
  StepTrace trace;
};

std::vector<RankRun> runTwoSteps(const Plan &plan) {
  InProcessWorld world(2);
  std::vector<RankRun> runs(2);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(10s);
        RankRun &run = runs[comm.rank()];
        RankExecutor executor(plan, comm.rank(), comm);
        executor.initializeVariables(initialValue);
        executor.setTracing(true);
        for (int64_t step = 1; step <= 2; ++step) {
          executor.writeInput(0, kInput);
          run.losses.push_back(executor.runStep(step));
          run.outputs.push_back(executor.outputValue(0));
        }
        for (size_t v = 0; v < plan.variables.size(); ++v) {
          const PlanVariable &variable = plan.variables[v];
          if (!plan.holds(variable, comm.rank())) {
            try {
              executor.variableShard(static_cast<int>(v));
            } catch (const RuntimeError &error) {
              if (run.otherStageRead.empty())
                run.otherStageRead = error.what();
            }
            continue;
          }
          run.variables[variable.name] =
              executor.variableShard(static_cast<int>(v));
        }
        run.peaks = executor.memoryPeaks();
        run.stats = executor.commStats();
        run.trace = executor.lastStepTrace();
      });
  testing::expectNoErrors(errors);
  return runs;
}

/// How many events of `trace` on `stream` are named `name`.
int countOf(const StepTrace &trace, TraceStream stream,
            const std::string &name) {
  int count = 0;
  for (const TraceEvent &event : trace)
    count += event.stream == stream && event.name == name;
  return count;
}

TEST(PipelineExecutor, EachStageComputesItsPartOfTheStep) {
  Plan plan = pipelinePlan();
  std::vector<RankRun> runs = runTwoSteps(plan);
  // e = (w + x + v) + w: step 1 with w = (1, 2, 3, 4), v = (10, 20, 30,
  // 40); then w halves and v triples, and step 2 uses the new values.
  EXPECT_EQ(runs[0].outputs[0], (std::vector<double>{12.5, 24.5, 36.5, 48.5}));
  EXPECT_EQ(runs[0].outputs[1], (std::vector<double>{31.5, 62.5, 93.5, 124.5}));
  EXPECT_EQ(runs[0].losses, (std::vector<double>{12.5, 31.5}));
  // Stage 1 does not hold the loss: a placeholder, not stage 0's bytes.
  EXPECT_EQ(runs[1].losses, (std::vector<double>{0, 0}));
  EXPECT_EQ(runs[1].outputs[1], std::vector<double>(4, 0.0));
}

TEST(PipelineExecutor, EachRankWritesItsStagesValuesOnly) {
  Plan plan = pipelinePlan();
  std::vector<RankRun> runs = runTwoSteps(plan);
  // u shares bytes with stage 1's step count and t with stage 0's input:
  // they keep their values only if no rank writes the other's.
  EXPECT_EQ(runs[0].variables["w"], (std::vector<double>{0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(runs[0].variables["u"], (std::vector<double>{5, 6, 7, 8}));
  EXPECT_EQ(runs[1].variables["v"], (std::vector<double>{90, 180, 270, 360}));
  EXPECT_EQ(runs[1].variables["t"], (std::vector<double>{7, 7, 7, 7}));
  EXPECT_EQ(runs[0].variables.size(), 2u);
  EXPECT_EQ(runs[1].variables.size(), 2u);
  EXPECT_EQ(runs[0].otherStageRead,
            "rank 0 (pipeline stage 0) does not hold variable 'v' of stage 1");
  EXPECT_EQ(runs[1].otherStageRead,
            "rank 1 (pipeline stage 1) does not hold variable 'w' of stage 0");
}

TEST(PipelineExecutor, MemoryBytesAndTraceAreEachStagesOwn) {
  Plan plan = pipelinePlan();
  std::vector<RankRun> runs = runTwoSteps(plan);
  // Stage 0: w, u and x (48 bytes) and a (16); stage 1: v, t and the
  // step (40), b and c (32).
  EXPECT_EQ(runs[0].peaks.total, 64);
  EXPECT_EQ(runs[1].peaks.total, 72);
  EXPECT_EQ(runs[0].peaks.byRole[static_cast<int>(Role::Param)], 32);
  EXPECT_EQ(runs[1].peaks.byRole[static_cast<int>(Role::Param)], 32);
  EXPECT_EQ(runs[0].peaks.byRole[static_cast<int>(Role::Input)], 16);
  EXPECT_EQ(runs[1].peaks.byRole[static_cast<int>(Role::Input)], 0);
  EXPECT_EQ(runs[0].peaks.modelStates, 32);
  // Each rank sends one 16-byte message a step, on the pipeline axis, and
  // takes part in two (its send and its receive).
  for (const RankRun &run : runs) {
    EXPECT_EQ(run.stats.sent(CollectiveKind::SendRecv), 2 * 16);
    EXPECT_EQ(run.stats.bytesSentOnAxis[0], 2 * 16);
    EXPECT_EQ(run.stats.called(CollectiveKind::SendRecv), 2 * 2);
  }
  const StepTrace &first = runs[0].trace, &second = runs[1].trace;
  EXPECT_EQ(countOf(first, TraceStream::Compute, "nn.add"), 2);
  EXPECT_EQ(countOf(first, TraceStream::Compute, "nn.scale"), 1);
  EXPECT_EQ(countOf(second, TraceStream::Compute, "nn.add"), 1);
  EXPECT_EQ(countOf(second, TraceStream::Compute, "nn.scale"), 1);
  for (const StepTrace *trace : {&first, &second}) {
    EXPECT_EQ(countOf(*trace, TraceStream::Compute, "collective_wait"), 2);
    EXPECT_EQ(countOf(*trace, TraceStream::Comm, "send_recv"), 2);
  }
  EXPECT_EQ(first.size(), 7u);
  EXPECT_EQ(second.size(), 6u);
}

/// The names of `trace`'s events on `stream`, in the order the stream ran
/// them (each stream's events are recorded in that order).
std::vector<std::string> namesOn(const StepTrace &trace, TraceStream stream) {
  std::vector<std::string> names;
  double last = -1;
  for (const TraceEvent &event : trace) {
    if (event.stream != stream)
      continue;
    EXPECT_GE(event.beginUs, last) << event.name;
    last = event.beginUs;
    names.push_back(event.name + (event.bucket >= 0
                                      ? " " + std::to_string(event.bucket)
                                      : std::string()));
  }
  return names;
}

TEST(PipelineExecutor, SendRecvHalvesRunOnTheirOwnStage) {
  // Each message in two halves: stage 0's send half right after a, stage
  // 1's receive half after its own k = v + t, which needs nothing from
  // stage 0. e = 2w + x + v + t.
  Plan plan = pipelinePlan(zerosbp::testing::kSplitPipelinePlan);
  std::vector<RankRun> runs = runTwoSteps(plan);
  EXPECT_EQ(runs[0].outputs[0], (std::vector<double>{19.5, 31.5, 43.5, 55.5}));
  EXPECT_EQ(runs[0].outputs[1],
            (std::vector<double>{38.5, 69.5, 100.5, 131.5}));
  EXPECT_EQ(runs[0].losses, (std::vector<double>{19.5, 38.5}));
  EXPECT_EQ(runs[1].losses, (std::vector<double>{0, 0}));
  // Every stage's values share bytes with the other's: each rank ran its
  // own half of every message and nothing of the other stage's.
  EXPECT_EQ(runs[0].variables["w"], (std::vector<double>{0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(runs[0].variables["u"], (std::vector<double>{5, 6, 7, 8}));
  EXPECT_EQ(runs[1].variables["v"], (std::vector<double>{90, 180, 270, 360}));
  EXPECT_EQ(runs[1].variables["t"], (std::vector<double>{7, 7, 7, 7}));
  // A half is one call: the sender's counts its 16 bytes, the receiver's
  // none.
  for (const RankRun &run : runs) {
    EXPECT_EQ(run.stats.sent(CollectiveKind::SendRecv), 2 * 16);
    EXPECT_EQ(run.stats.bytesSentOnAxis[0], 2 * 16);
    EXPECT_EQ(run.stats.called(CollectiveKind::SendRecv), 2 * 2);
  }
  // Each rank starts and waits for its own halves only, in its order:
  // stage 1 computes k before it waits for a's message.
  EXPECT_EQ(
      namesOn(runs[0].trace, TraceStream::Compute),
      (std::vector<std::string>{"nn.add", "collective_wait 0",
                                "collective_wait 3", "nn.add", "nn.scale"}));
  EXPECT_EQ(namesOn(runs[1].trace, TraceStream::Compute),
            (std::vector<std::string>{"nn.add", "collective_wait 1", "nn.add",
                                      "collective_wait 2", "nn.scale"}));
  EXPECT_EQ(namesOn(runs[0].trace, TraceStream::Comm),
            (std::vector<std::string>{"send_recv 0", "send_recv 3"}));
  EXPECT_EQ(namesOn(runs[1].trace, TraceStream::Comm),
            (std::vector<std::string>{"send_recv 1", "send_recv 2"}));
}

TEST(PipelineExecutor, ASendHalfDoesNotWaitForItsReceiver) {
  // Stage 1's rank begins each step 300 ms after stage 0's has sent: stage
  // 0's send half and its wait still end at once, long before stage 1
  // could have received; only its receive half waits.
  Plan plan = pipelinePlan(zerosbp::testing::kSplitPipelinePlan);
  InProcessWorld world(2);
  std::vector<StepTrace> traces(2);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(10s);
        RankExecutor executor(plan, comm.rank(), comm);
        executor.initializeVariables(initialValue);
        executor.setTracing(true);
        executor.writeInput(0, kInput);
        if (comm.rank() == 1)
          std::this_thread::sleep_for(300ms);
        executor.runStep(1);
        traces[comm.rank()] = executor.lastStepTrace();
      });
  ASSERT_FALSE(errors[0]);
  ASSERT_FALSE(errors[1]);
  const TraceEvent *sendWait = nullptr, *receiveWait = nullptr;
  for (const TraceEvent &event : traces[0])
    if (event.stream == TraceStream::Compute && event.name == "collective_wait")
      (event.bucket == 0 ? sendWait : receiveWait) = &event;
  ASSERT_TRUE(sendWait && receiveWait);
  // The receive waits for stage 1 (at least the 300 ms, less what stage 0
  // spent before it); the send half's wait ends within a fraction of that.
  EXPECT_GT(receiveWait->endUs - receiveWait->beginUs, 200e3);
  EXPECT_LT(sendWait->endUs, 100e3);
}

TEST(PipelineExecutor, AStageThatNeverSendsTimesOutTheOther) {
  // Stage 0's rank stops after one step; stage 1's next receive waits for
  // it no longer than the timeout, and names it.
  Plan plan = pipelinePlan();
  InProcessWorld world(2);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(200ms);
        RankExecutor executor(plan, comm.rank(), comm);
        executor.initializeVariables(initialValue);
        executor.writeInput(0, kInput);
        executor.runStep(1);
        if (comm.rank() == 1)
          executor.runStep(2);
      });
  EXPECT_FALSE(errors[0]);
  ASSERT_TRUE(errors[1]);
  try {
    std::rethrow_exception(errors[1]);
  } catch (const RuntimeError &error) {
    EXPECT_EQ(std::string(error.what()),
              "timed out after 200 ms waiting for rank 0 in send_recv");
  }
}

} // namespace
} // namespace zerosbp::runtime
