//===- plan_reader_test.cc - the runtime's plan reader --------------------===//
//
// A minimal hand-written plan (one all-reduce over two ranks) that reads,
// and one mutation per check the reader makes, each against its message.
// A plan zero-compile wrote for GPT-2 tiny must read as well.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace zerosbp::runtime;
using ::testing::HasSubstr;

namespace {

const char *const kValidPlan = R"({
  "format": "zerosbp-plan", "version": 1, "function": "f", "stage": 0,
  "world": 2,
  "placement": {"device": "cpu", "ranks": [0, 1], "hierarchy": [2]},
  "memory": {"arena": 128, "lower_bound": 128, "model_states": 64,
             "peak": {"param": 64, "activation": 64}},
  "arena_bytes": 128,
  "buffers": [{"offset": 0, "bytes": 64, "live": [0, 3], "role": "param"},
              {"offset": 64, "bytes": 64, "live": [1, 3], "role": "activation"}],
  "values": [{"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]}],
  "variables": [{"name": "w", "value": 0, "dtype": "f32", "local_shape": [4],
                 "global_shape": [4], "sbp": ["B"],
                 "shards": [[[0, 4]], [[0, 4]]], "role": "param",
                 "init": "ones", "init_scale": 0, "frozen": false}],
  "inputs": [], "steps": [], "outputs": [2],
  "instructions": [
    {"op": "nn.scale", "results": [1], "attrs": {"factor": 2.0},
     "operands": [0]},
    {"op": "collective_start", "kind": "all_reduce", "stream": "comm",
     "bucket": 0, "group_axis": 0, "group_size": 2, "reduce": "sum",
     "results": [2], "segments": [{"offset": 0, "numel": 4}],
     "operands": [1]},
    {"op": "collective_wait", "bucket": 0}]
})";

std::string replaced(const std::string &from, const std::string &to) {
  std::string text = kValidPlan;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string errorOf(const std::string &text) {
  try {
    parsePlan(text, "model.zplan");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(PlanReader, ReadsAValidPlan) {
  Plan plan = parsePlan(kValidPlan, "model.zplan");
  EXPECT_EQ(plan.world, 2);
  EXPECT_EQ(plan.arenaBytes, 128);
  ASSERT_EQ(plan.instructions.size(), 3u);
  EXPECT_EQ(plan.instructions[0].kind, InstructionKind::Kernel);
  EXPECT_DOUBLE_EQ(plan.instructions[0].attrs.getFloat("factor"), 2.0);
  EXPECT_EQ(plan.instructions[1].kind, InstructionKind::CollectiveStart);
  EXPECT_EQ(plan.instructions[1].collective, CollectiveKind::AllReduce);
  EXPECT_EQ(plan.numBuckets, 1);
  EXPECT_EQ(plan.variables[0].init, "ones");
  EXPECT_EQ(plan.memory.peak[static_cast<int>(Role::Param)], 64);
  EXPECT_EQ(plan.groupOf(1, 0), (std::vector<int>{0, 1}));
}

TEST(PlanReader, RejectsForeignAndBrokenFiles) {
  EXPECT_THAT(errorOf("{\"format\": \"onnx\", \"version\": 1}"),
              HasSubstr("model.zplan: not a ZeroSBP plan (format 'onnx'"));
  EXPECT_THAT(errorOf("[1, 2]"), HasSubstr("not a ZeroSBP plan"));
  EXPECT_THAT(errorOf(replaced("\"version\": 1", "\"version\": 2")),
              HasSubstr("plan version 2 is not supported; this runtime reads "
                        "version 1"));
  std::string truncated = kValidPlan;
  truncated.resize(truncated.size() / 2);
  EXPECT_THAT(errorOf(truncated), HasSubstr("model.zplan: not valid JSON"));
  EXPECT_THAT(errorOf(""), HasSubstr("not valid JSON"));
  // A number beyond double's range is nlohmann's out_of_range, not a
  // parse_error; found by the fuzzer.
  EXPECT_THAT(errorOf("22e2222222222222222222"),
              HasSubstr("not valid JSON (number overflow"));
}

TEST(PlanReader, NamesTheBadField) {
  EXPECT_THAT(errorOf(replaced("\"operands\": [0]", "\"operands\": [7]")),
              HasSubstr("instructions[0].operands[0]: value 7 out of range "
                        "[0, 2]"));
  EXPECT_THAT(errorOf(replaced("\"dtype\": \"f32\", \"shape\": [4]},\n"
                               "             {\"buffer\": 1",
                               "\"dtype\": \"q8\", \"shape\": [4]},\n"
                               "             {\"buffer\": 1")),
              HasSubstr("values[0].dtype: unknown dtype 'q8'"));
  EXPECT_THAT(
      errorOf(replaced("\"shape\": [4]},\n             {\"buffer\": 1, "
                       "\"offset\": 0, \"dtype\": \"f32\", \"shape\": "
                       "[4]},\n             {\"buffer\": 1",
                       "\"shape\": [40]},\n             {\"buffer\": 1, "
                       "\"offset\": 0, \"dtype\": \"f32\", \"shape\": "
                       "[4]},\n             {\"buffer\": 1")),
      HasSubstr("values[0]: value of 160 bytes at offset 0 does not "
                "fit its buffer of 64 bytes"));
  EXPECT_THAT(errorOf(replaced("\"bytes\": 64, \"live\": [1, 3]",
                               "\"bytes\": 640, \"live\": [1, 3]")),
              HasSubstr("buffers[1]: buffer ends at byte 704, past the arena"));
  EXPECT_THAT(errorOf(replaced("\"op\": \"nn.scale\"", "\"op\": \"xla.dot\"")),
              HasSubstr("instructions[0].op: unknown instruction 'xla.dot'"));
  EXPECT_THAT(errorOf(replaced("{\"op\": \"collective_wait\", \"bucket\": 0}",
                               "{\"op\": \"collective_wait\", \"bucket\": 3}")),
              HasSubstr("waits for bucket 3 before it starts"));
  EXPECT_THAT(errorOf(replaced(",\n    {\"op\": \"collective_wait\", "
                               "\"bucket\": 0}",
                               "")),
              HasSubstr("bucket 0 is started but never waited for"));
  EXPECT_THAT(
      errorOf(
          replaced("\"kind\": \"all_reduce\"", "\"kind\": \"reduce_scatter\"")),
      HasSubstr("segment 0 does not fit a reduce_scatter over 2 ranks"));
  EXPECT_THAT(errorOf(replaced("\"init\": \"ones\"", "\"init\": \"xavier\"")),
              HasSubstr("variables[0].init: unknown init 'xavier'"));
  EXPECT_THAT(
      errorOf(replaced("\"shards\": [[[0, 4]], [[0, 4]]]",
                       "\"shards\": [[[0, 4]]]")),
      HasSubstr("variables[0].shards: expected one entry per rank (2)"));
  EXPECT_THAT(errorOf(replaced("\"world\": 2", "\"world\": 3")),
              HasSubstr("placement: hierarchy and ranks do not match world 3"));
  EXPECT_THAT(errorOf(replaced("\"function\": \"f\", ", "")),
              HasSubstr("missing key 'function'"));
}

TEST(PlanReader, RejectsAnotherRankCount) {
  Plan plan = parsePlan(kValidPlan, "model.zplan");
  EXPECT_NO_THROW(checkRankCount(plan, 2));
  try {
    checkRankCount(plan, 4);
    FAIL() << "a run on 4 ranks of a 2-rank plan must fail";
  } catch (const RuntimeError &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("model.zplan: the plan was compiled for 2 ranks, "
                          "not 4 (recompile with --world=4)"));
  }
}

TEST(PlanReader, ReadsACompiledGpt2Plan) {
  const char *path = std::getenv("GPT2_PLAN");
  ASSERT_NE(path, nullptr);
  Plan plan = readPlan(path);
  EXPECT_EQ(plan.world, 2);
  EXPECT_EQ(plan.stage, 3);
  EXPECT_GT(plan.instructions.size(), 100u);
  EXPECT_EQ(plan.inputs.size(), 2u);
  int starts = 0, waits = 0;
  for (const Instruction &instruction : plan.instructions) {
    starts += instruction.kind == InstructionKind::CollectiveStart;
    waits += instruction.kind == InstructionKind::CollectiveWait;
  }
  EXPECT_EQ(starts, plan.numBuckets);
  EXPECT_EQ(waits, plan.numBuckets);
  const PlanVariable *wte = plan.findVariable("wte.weight");
  ASSERT_NE(wte, nullptr);
  EXPECT_EQ(wte->modelShape(), (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(wte->init, "normal");
}

} // namespace
