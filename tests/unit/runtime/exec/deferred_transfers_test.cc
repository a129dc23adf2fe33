//===- deferred_transfers_test.cc - transfer waits left to the next step --===//
//
// A hand-written offload plan on one rank: the forward reads the parameter
// w on the device, the gradient goes to host memory, the host adds it to
// its copy of w, and the sum comes back into w:
//
//   [0] g = 2 w                  [3] w.host = w.host + gh   (host memory)
//   [1] transfer g -> gh         [4] transfer w.host -> w
//   [2] wait                     [5] wait
//
// so from w = w.host = 1 each step triples both, and the output g of step k
// is 2 * 3^(k-1). Nothing after [5] touches w or w.host, so its wait goes to
// the next step, before [0], the first instruction to touch w. [2] stays:
// [3] reads gh. A variant that reads w after [5] waits there. The
// executor's outputs and variables equal the hand computation with the
// waits deferred and without, and its trace shows where it waited.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/plan/DeferredTransfers.h"
#include "runtime/exec/RankExecutor.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace zerosbp::runtime {
namespace {

using namespace std::chrono_literals;

// Checksum "00000000": read with verifyChecksum off.
constexpr const char *kOffloadPlan = R"({
  "format": "zerosbp-plan", "version": 2, "function": "offload", "stage": 1,
  "world": 1,
  "placement": {"device": "cpu", "ranks": [0], "hierarchy": [1]},
  "memory": {"arena": 40, "lower_bound": 40, "model_states": 16,
             "peak": {"param": 16, "activation": 24}},
  "arena_bytes": 40,
  "arenas": [{"memory": "device", "bytes": 40},
             {"memory": "host", "bytes": 32, "pinned": false}],
  "buffers": [
    {"offset": 0, "bytes": 16, "live": [0, 5], "role": "param", "arena": 0},
    {"offset": 16, "bytes": 16, "live": [0, 5], "role": "activation", "arena": 0},
    {"offset": 0, "bytes": 16, "live": [1, 3], "role": "grad", "arena": 1},
    {"offset": 16, "bytes": 16, "live": [0, 5], "role": "param", "arena": 1},
    {"offset": 32, "bytes": 8, "live": [0, 5], "role": "activation", "arena": 0}],
  "values": [
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 2, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 3, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 4, "offset": 0, "dtype": "i64", "shape": []},
    {"buffer": 3, "offset": 0, "dtype": "f32", "shape": [4]}],
  "variables": [
    {"name": "w", "value": 0, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false},
    {"name": "w.host", "value": 3, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false}],
  "inputs": [],
  "steps": [5], "outputs": [1],
  "instructions": [
    {"op": "nn.scale", "results": [1], "attrs": {"factor": 2.0},
     "operands": [0]},
    {"op": "transfer_start", "transfer": 0, "from": "device", "to": "host",
     "stream": "copy", "results": [2], "operands": [1]},
    {"op": "transfer_wait", "transfer": 0},
    {"op": "nn.add", "memory": "host", "results": [6], "operands": [3, 2]},
    {"op": "transfer_start", "transfer": 1, "from": "host", "to": "device",
     "stream": "copy", "results": [4], "operands": [6]},
    {"op": "transfer_wait", "transfer": 1}READER],
  "checksum": "00000000"
})";

/// The plan, with `reader` appended to its instructions.
Plan offloadPlan(const std::string &reader = "") {
  std::string text = kOffloadPlan;
  text.replace(text.find("READER"), 6, reader);
  PlanReadOptions options;
  options.verifyChecksum = false; // Written by hand.
  return parsePlan(text, "offload.zplan", options);
}

const std::vector<char> kAllRun(6, 1);

TEST(DeferredTransfers, TheReturnCopyWaitsAtTheNextForward) {
  Plan plan = offloadPlan();
  DeferredTransfers deferred = planDeferredTransfers(plan, kAllRun);
  ASSERT_EQ(deferred.deferred.size(), 6u);
  EXPECT_TRUE(deferred.any());
  // [2]: the host update reads gh after it.
  EXPECT_EQ(deferred.deferred, (std::vector<char>{0, 0, 0, 0, 0, 1}));
  // [0] reads w, which transfer 1 writes.
  EXPECT_EQ(deferred.settleBefore[0], std::vector<int>{1});
  for (size_t i = 1; i < 6; ++i)
    EXPECT_TRUE(deferred.settleBefore[i].empty()) << i;
  // Transfer 1 reads w.host and writes w; gh is transfer 0's.
  EXPECT_TRUE(deferred.touches(1, valueRange(plan, 0)));
  EXPECT_TRUE(deferred.touches(1, valueRange(plan, 3)));
  EXPECT_FALSE(deferred.touches(1, valueRange(plan, 2)));
  EXPECT_FALSE(deferred.touches(1, valueRange(plan, 1)));
}

TEST(DeferredTransfers, AWaitWithALaterReaderStays) {
  Plan plan = offloadPlan(
      R"(, {"op": "nn.scale", "results": [1], "attrs": {"factor": 1.0},
            "operands": [4]})");
  DeferredTransfers deferred =
      planDeferredTransfers(plan, {1, 1, 1, 1, 1, 1, 1});
  EXPECT_FALSE(deferred.any());
  for (const std::vector<int> &settle : deferred.settleBefore)
    EXPECT_TRUE(settle.empty());
}

TEST(DeferredTransfers, AnotherStagesReaderDoesNotCount) {
  // The reader after the wait is not this rank's (runs 0): the wait goes.
  Plan plan = offloadPlan(
      R"(, {"op": "nn.scale", "results": [1], "attrs": {"factor": 1.0},
            "operands": [4]})");
  DeferredTransfers deferred =
      planDeferredTransfers(plan, {1, 1, 1, 1, 1, 1, 0});
  EXPECT_EQ(deferred.deferred, (std::vector<char>{0, 0, 0, 0, 0, 1, 0}));
}

struct StepsRun {
  std::vector<double> outputs; // Element 0 of each step's g.
  std::vector<double> w, host;
  StepTrace trace; // Of the last step.
};

StepsRun runSteps(const Plan &plan, bool defer, int steps) {
  InProcessWorld world(1);
  StepsRun run;
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(10s);
        RankExecutor executor(plan, 0, comm);
        DeviceOptions options;
        options.deferTransferWaits = defer;
        executor.setDeviceOptions(options);
        executor.initializeVariables(
            [](const PlanVariable &) { return std::vector<double>(4, 1.0); });
        executor.setTracing(true);
        for (int step = 1; step <= steps; ++step) {
          executor.runStep(step);
          run.outputs.push_back(executor.outputValue(0)[0]);
        }
        // Read right after the last step, whose copy back was not waited.
        run.w = executor.variableShard(0);
        run.host = executor.variableShard(1);
        run.trace = executor.lastStepTrace();
      });
  for (const std::exception_ptr &error : errors)
    if (error)
      std::rethrow_exception(error);
  return run;
}

TEST(DeferredTransfers, TheCpuExecutorComputesTheSameEitherWay) {
  Plan plan = offloadPlan();
  for (bool defer : {true, false}) {
    StepsRun run = runSteps(plan, defer, 4);
    ASSERT_EQ(run.outputs.size(), 4u);
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(run.outputs[k], 2 * std::pow(3.0, k)) << defer << " " << k;
    EXPECT_EQ(run.w, std::vector<double>(4, 81.0)) << defer;
    EXPECT_EQ(run.host, std::vector<double>(4, 81.0)) << defer;
    // Deferred, the step waits for the last one's copy before its first
    // instruction and not after its own; otherwise the other way round.
    ASSERT_FALSE(run.trace.empty());
    std::vector<std::string> ops;
    for (const TraceEvent &event : run.trace)
      if (event.stream == TraceStream::Compute)
        ops.push_back(event.name);
    std::vector<std::string> expected =
        defer ? std::vector<std::string>{"transfer_wait", "nn.scale",
                                         "transfer_wait", "nn.add"}
              : std::vector<std::string>{"nn.scale", "transfer_wait", "nn.add",
                                         "transfer_wait"};
    EXPECT_EQ(ops, expected) << defer;
  }
}

} // namespace
} // namespace zerosbp::runtime
