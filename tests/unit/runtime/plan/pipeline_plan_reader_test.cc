//===- pipeline_plan_reader_test.cc - pipeline keys of the plan reader ----===//
//
// The two-stage plan of tests/unit/runtime/pipeline_test_plan.h reads, with
// every pipeline key in place (docs/plan-format.md#pipeline); its
// stages' buffers share bytes, which the reader allows across stages only.
// Then one edit per check of the pipeline keys, each against its one-line
// message, and the keys refused in a plan without a `pipeline` object.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"
#include "tests/unit/runtime/pipeline_test_plan.h"
#include "tests/unit/runtime/plan/plan_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

using namespace zerosbp::runtime;
using ::testing::HasSubstr;
using zerosbp::testing::errorOf;
using zerosbp::testing::kPipelinePlan;
using zerosbp::testing::replacedIn;
using zerosbp::testing::sealed;

namespace {

std::string edited(const std::string &from, const std::string &to) {
  return replacedIn(kPipelinePlan, from, to);
}

std::string replacedAll(std::string text, const std::string &from,
                        const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// The plan without its pipeline object and every `stage` and `stages` key:
/// stage 1's buffers move past stage 0's, into an arena twice as large, and
/// only the send_recv instructions still need a pipeline.
std::string withoutPipeline() {
  std::string text = edited(
      R"("pipeline": {"stages": 2, "micro_batches": 1, "schedule": "1f1b",
               "bubble": 0.25},)",
      "");
  std::regex stageOne(R"(\{"offset": ([0-9]+), ([^{}]*"stage": 1)\})");
  std::string moved;
  auto at = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), stageOne), end;
       it != end; ++it) {
    moved.append(at, (*it)[0].first);
    moved += "{\"offset\": " + std::to_string(std::stoi((*it)[1]) + 96) + ", " +
             (*it)[2].str() + "}";
    at = (*it)[0].second;
  }
  moved.append(at, text.cend());
  moved = replacedAll(moved, R"("arena": 96,)", R"("arena": 192,)");
  moved = replacedAll(moved, R"("arena_bytes": 96,)", R"("arena_bytes": 192,)");
  moved = replacedAll(moved, R"("bytes": 96})", R"("bytes": 192})");
  moved = std::regex_replace(moved, std::regex(R"(, "stage": [0-9]+)"), "");
  return std::regex_replace(moved, std::regex(R"("stages": \[[0-9, ]*\], )"),
                            "");
}

TEST(PipelinePlanReader, ReadsEveryPipelineKey) {
  Plan plan = parsePlan(sealed(kPipelinePlan), "model.zplan");
  ASSERT_TRUE(plan.pipeline);
  EXPECT_EQ(plan.pipeline->stages, 2);
  EXPECT_EQ(plan.pipeline->microBatches, 1);
  EXPECT_EQ(plan.pipeline->schedule, "1f1b");
  EXPECT_DOUBLE_EQ(plan.pipeline->bubble, 0.25);
  EXPECT_EQ(plan.stageOf(0), 0);
  EXPECT_EQ(plan.stageOf(1), 1);
  // Buffers 0 and 1 share bytes [0, 16), live together, on two stages.
  EXPECT_EQ(plan.buffers[0].stage, 0);
  EXPECT_EQ(plan.buffers[1].stage, 1);
  EXPECT_EQ(plan.buffers[1].offset, plan.buffers[0].offset);
  EXPECT_TRUE(plan.bufferOnStage(0, 0));
  EXPECT_FALSE(plan.bufferOnStage(0, 1));
  EXPECT_EQ(plan.variables[0].stage, 0);
  EXPECT_EQ(plan.variables[2].stage, 1);
  EXPECT_TRUE(plan.holds(plan.variables[0], 0));
  EXPECT_FALSE(plan.holds(plan.variables[0], 1));
  EXPECT_EQ(plan.inputs[0].stage, 0);
  EXPECT_FALSE(plan.holds(plan.inputs[0], 1));
  const Instruction &send = plan.instructions[1];
  EXPECT_EQ(send.kind, InstructionKind::CollectiveStart);
  EXPECT_EQ(send.collective, CollectiveKind::SendRecv);
  EXPECT_EQ(send.sourceStage, 0);
  EXPECT_EQ(send.targetStage, 1);
  EXPECT_EQ(send.stages, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.instructions[4].sourceStage, 1);
  EXPECT_EQ(plan.instructions[4].targetStage, 0);
  EXPECT_EQ(plan.instructions[0].stages, std::vector<int>{0});
  EXPECT_TRUE(plan.runsOn(plan.instructions[0], 0));
  EXPECT_FALSE(plan.runsOn(plan.instructions[0], 1));
  EXPECT_TRUE(plan.runsOn(plan.instructions[2], 1));
  EXPECT_EQ(plan.numBuckets, 2);
}

TEST(PipelinePlanReader, StagesAreTheFirstAxisOfAGrid) {
  Plan plan;
  plan.world = 8;
  plan.hierarchy = {2, 2, 2};    // [pipeline, data, model]
  EXPECT_EQ(plan.stageOf(5), 0); // No pipeline: one stage.
  plan.pipeline = PlanPipeline{2, 4, "gpipe", 0.1};
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_EQ(plan.stageOf(rank), rank / 4) << "rank " << rank;
  // A stage's ranks are contiguous; the pipeline group of rank 5 holds
  // the rank of every stage with its data and model coordinates.
  EXPECT_EQ(plan.groupOf(5, 0), (std::vector<int>{1, 5}));
}

TEST(PipelinePlanReader, RefusesABadPipelineObject) {
  EXPECT_EQ(errorOf(edited(R"("stages": 2, "micro_batches")",
                           R"("stages": 3, "micro_batches")")),
            "model.zplan: pipeline.stages: 3 stages, but the hierarchy [2] "
            "does not begin with them (the pipeline axis comes first)");
  EXPECT_EQ(errorOf(edited(R"("stages": 2, "micro_batches")",
                           R"("stages": 1, "micro_batches")")),
            "model.zplan: pipeline.stages: value 1 out of range [2, 16384]");
  EXPECT_EQ(errorOf(edited(R"("micro_batches": 1)", R"("micro_batches": 0)")),
            "model.zplan: pipeline.micro_batches: value 0 out of range [1, "
            "1048576]");
  EXPECT_EQ(errorOf(edited(R"("1f1b")", R"("interleaved")")),
            "model.zplan: pipeline.schedule: unknown schedule 'interleaved' "
            "(expected 1f1b or gpipe)");
  EXPECT_EQ(errorOf(edited(R"("bubble": 0.25)",
                           R"("bubble": 0.25, "model_chunks": 0)")),
            "model.zplan: pipeline.model_chunks: value 0 out of range [1, "
            "1048576]");
  EXPECT_EQ(errorOf(edited(R"("schedule": "1f1b")",
                           R"("schedule": "gpipe", "model_chunks": 2)")),
            "model.zplan: pipeline.model_chunks: 2 model chunks interleave "
            "the 1f1b schedule, not gpipe");
  EXPECT_EQ(errorOf(edited(R"("bubble": 0.25)", R"("bubble": 1.0)")),
            "model.zplan: pipeline.bubble: expected a fraction in [0, 1), "
            "got 1.0");
  EXPECT_EQ(errorOf(edited(R"("bubble": 0.25)", R"("bubble": -0.5)")),
            "model.zplan: pipeline.bubble: expected a fraction in [0, 1), "
            "got -0.5");
  EXPECT_EQ(errorOf(edited(R"("bubble": 0.25)", R"("bubble": "none")")),
            "model.zplan: pipeline.bubble: expected a number");
  EXPECT_EQ(errorOf(edited(R"("pipeline": {)", R"("pipeline": 2, "x": {)")),
            "model.zplan: pipeline: expected an object");
  EXPECT_THAT(errorOf(edited(R"("micro_batches": 1, )", "")),
              HasSubstr("pipeline: missing key 'micro_batches'"));
}

TEST(PipelinePlanReader, RefusesBadStages) {
  EXPECT_EQ(errorOf(edited(R"("role": "param", "arena": 0, "stage": 0})",
                           R"("role": "param", "arena": 0, "stage": 2})")),
            "model.zplan: buffers[0].stage: value 2 out of range [0, 1]");
  std::string wait = R"("bucket": 0, "stages": [0, 1])";
  EXPECT_EQ(errorOf(edited(wait, R"("bucket": 0, "stages": [1, 0])")),
            "model.zplan: instructions[2].stages: expected distinct stages in "
            "increasing order, got [1, 0]");
  EXPECT_EQ(errorOf(edited(wait, R"("bucket": 0, "stages": [0, 0])")),
            "model.zplan: instructions[2].stages: expected distinct stages in "
            "increasing order, got [0, 0]");
  std::string first = R"({"op": "nn.add", "stages": [0])";
  EXPECT_EQ(errorOf(edited(first, R"({"op": "nn.add", "stages": [2])")),
            "model.zplan: instructions[0].stages[0]: value 2 out of range "
            "[0, 1]");
  EXPECT_EQ(errorOf(edited(first, R"({"op": "nn.add", "stages": [])")),
            "model.zplan: instructions[0].stages: expected at least one stage "
            "(leave the key out for every stage)");
  EXPECT_EQ(errorOf(edited(first, R"({"op": "nn.add", "stages": 0)")),
            "model.zplan: instructions[0].stages: expected an array");
}

TEST(PipelinePlanReader, RefusesABadSendRecv) {
  EXPECT_EQ(errorOf(edited(R"("target_stage": 1,)", R"("target_stage": 0,)")),
            "model.zplan: instructions[1].target_stage: stage 0 sends to "
            "itself");
  EXPECT_EQ(errorOf(edited(R"("target_stage": 1,)", R"("target_stage": 2,)")),
            "model.zplan: instructions[1].target_stage: value 2 out of range "
            "[0, 1]");
  EXPECT_THAT(errorOf(edited(R"("source_stage": 0,)", "")),
              HasSubstr("instructions[1]: missing key 'source_stage'"));
  EXPECT_EQ(errorOf(edited(R"("stages": [0, 1], "results": [3])",
                           R"("results": [3])")),
            "model.zplan: instructions[1]: send_recv runs on every stage, not "
            "on its source stage [0] (the send half), its target stage [1] "
            "(the receive half) or both [0, 1]");
  // Stage 1 alone is the receive half, which needs a send half before it.
  EXPECT_EQ(errorOf(edited(R"("stages": [0, 1], "results": [3])",
                           R"("stages": [1], "results": [3])")),
            "model.zplan: instructions[1]: the receive half of a send_recv "
            "from stage 0 to stage 1 has no earlier send half to pair with "
            "(halves between two stages pair in order)");
  EXPECT_EQ(errorOf(edited(R"("results": [3],)", R"("results": [3, 5],)")),
            "model.zplan: instructions[1]: send_recv takes one operand and one "
            "result");
  EXPECT_EQ(errorOf(edited(R"("results": [3],)", R"("results": [10],)")),
            "model.zplan: instructions[1]: the operand (f32 [4]) and the "
            "result (i64 []) differ in dtype or element count");
  EXPECT_EQ(errorOf(edited(R"("operands": [2]})", R"("operands": [3]})")),
            "model.zplan: instructions[1].operands: value 3 is in buffer 3 of "
            "stage 1, not of stage 0");
  EXPECT_EQ(errorOf(edited(R"("results": [3],)", R"("results": [2],)")),
            "model.zplan: instructions[1].results: value 2 is in buffer 2 of "
            "stage 0, not of stage 1");
  // On a [2, 1] grid the data axis exists, but a send_recv crosses stages.
  std::string grid =
      replacedAll(replacedIn(kPipelinePlan, R"("hierarchy": [2])",
                             R"("hierarchy": [2, 1])"),
                  R"("sbp": ["B"])", R"("sbp": ["B", "B"])");
  EXPECT_EQ(errorOf(grid), "(no error)");
  EXPECT_EQ(errorOf(replacedIn(
                grid, R"("bucket": 0, "group_axis": 0, "group_size": 2)",
                R"("bucket": 0, "group_axis": 1, "group_size": 1)")),
            "model.zplan: instructions[1].group_axis: a send_recv runs over "
            "the pipeline axis 0, not axis 1");
}

std::string split(const std::string &from, const std::string &to) {
  return replacedIn(zerosbp::testing::kSplitPipelinePlan, from, to);
}

TEST(PipelinePlanReader, ReadsSendRecvHalves) {
  Plan plan =
      parsePlan(sealed(zerosbp::testing::kSplitPipelinePlan), "model.zplan");
  // Each message in two halves, each half with its own bucket and wait.
  EXPECT_EQ(plan.numBuckets, 4);
  const Instruction &send = plan.instructions[1];
  const Instruction &receive = plan.instructions[4];
  for (const Instruction *half : {&send, &receive}) {
    EXPECT_EQ(half->kind, InstructionKind::CollectiveStart);
    EXPECT_EQ(half->collective, CollectiveKind::SendRecv);
    EXPECT_EQ(half->sourceStage, 0);
    EXPECT_EQ(half->targetStage, 1);
    EXPECT_EQ(half->operands, std::vector<int>{2});
    EXPECT_EQ(half->results, std::vector<int>{3});
  }
  EXPECT_EQ(send.stages, std::vector<int>{0});
  EXPECT_EQ(receive.stages, std::vector<int>{1});
  EXPECT_TRUE(plan.runsOn(send, 0));
  EXPECT_FALSE(plan.runsOn(send, 1));
  EXPECT_TRUE(plan.runsOn(receive, 1));
  EXPECT_FALSE(plan.runsOn(receive, 0));
  EXPECT_EQ(plan.instructions[5].stages, std::vector<int>{1});
  // The way back: stage 1 sends c, stage 0 receives it into d.
  EXPECT_EQ(plan.instructions[7].stages, std::vector<int>{1});
  EXPECT_EQ(plan.instructions[9].stages, std::vector<int>{0});
  EXPECT_EQ(plan.instructions[9].sourceStage, 1);
}

TEST(PipelinePlanReader, RefusesHalvesThatDoNotPair) {
  std::string sendHalf = R"("target_stage": 1, "stages": [0], "results": [3],)";
  std::string receiveHalf =
      R"("target_stage": 1, "stages": [1], "results": [3],)";
  EXPECT_EQ(errorOf(split(sendHalf, R"("target_stage": 1, "results": [3],)")),
            "model.zplan: instructions[1]: send_recv runs on every stage, not "
            "on its source stage [0] (the send half), its target stage [1] "
            "(the receive half) or both [0, 1]");
  // Two send halves and no receive half: the first is never received.
  std::string twoSends =
      replacedIn(split(receiveHalf, sendHalf),
                 R"({"op": "collective_wait", "bucket": 1, "stages": [1]})",
                 R"({"op": "collective_wait", "bucket": 1, "stages": [0]})");
  EXPECT_EQ(errorOf(twoSends),
            "model.zplan: instructions[1]: the send half of a send_recv from "
            "stage 0 to stage 1 is never received (no later receive half "
            "pairs with it)");
  // The receive half names another operand than the send half it pairs
  // with.
  EXPECT_EQ(errorOf(split(R"("stages": [1], "results": [3],
     "segments": [{"offset": 0, "numel": 4}], "operands": [2]})",
                          R"("stages": [1], "results": [3],
     "segments": [{"offset": 0, "numel": 4}], "operands": [12]})")),
            "model.zplan: instructions[4]: the receive half of value 12 into "
            "value 3 pairs with the send half instructions[1], which sends "
            "value 2 into value 3 (halves between two stages pair in order)");
  // Both halves at once while a send half between the two stages is still
  // unreceived: it would take that message instead of its own.
  std::string both = replacedIn(
      split(receiveHalf,
            R"("target_stage": 1, "stages": [0, 1], "results": [3],)"),
      R"({"op": "collective_wait", "bucket": 1, "stages": [1]})",
      R"({"op": "collective_wait", "bucket": 1, "stages": [0, 1]})");
  EXPECT_EQ(errorOf(both),
            "model.zplan: instructions[4]: send_recv from stage 0 to stage 1 "
            "runs both halves here, but the send half instructions[1] is not "
            "received yet (halves between two stages pair in order)");
  // A half's wait runs on its start's stage.
  EXPECT_EQ(
      errorOf(
          split(R"({"op": "collective_wait", "bucket": 1, "stages": [1]})",
                R"({"op": "collective_wait", "bucket": 1, "stages": [0, 1]})")),
      "model.zplan: instructions[5]: collective_wait runs on stages [0, 1] but "
      "its start on stages [1]; both run on the same ranks");
  // Each half's operand and result stay on their stages.
  EXPECT_EQ(errorOf(split(sendHalf + R"(
     "segments": [{"offset": 0, "numel": 4}], "operands": [2]})",
                          sendHalf + R"(
     "segments": [{"offset": 0, "numel": 4}], "operands": [13]})")),
            "model.zplan: instructions[1].operands: value 13 is in buffer 11 "
            "of stage 1, not of stage 0");
}

TEST(PipelinePlanReader, ReceiveHalvesTakeSendHalvesInOrder) {
  // The receive half moved before its send half: stage 1 would wait for a
  // message not yet sent.
  std::string plan = zerosbp::testing::kSplitPipelinePlan;
  auto cut = [&](const std::string &from, const std::string &to) {
    size_t begin = plan.find(from), end = plan.find(to, begin);
    EXPECT_NE(begin, std::string::npos);
    EXPECT_NE(end, std::string::npos);
    std::string piece = plan.substr(begin, end - begin);
    plan.erase(begin, end - begin);
    return piece;
  };
  std::string sendPart =
      cut(R"({"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 0,)",
          R"({"op": "nn.add", "stages": [1], "results": [13])");
  std::string receivePart =
      cut(R"({"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 1,)",
          R"({"op": "nn.add", "stages": [1], "results": [4])");
  size_t at = plan.find(R"({"op": "nn.add", "stages": [1], "results": [13])");
  plan.insert(at, receivePart + sendPart);
  EXPECT_EQ(errorOf(plan),
            "model.zplan: instructions[1]: the receive half of a send_recv "
            "from stage 0 to stage 1 has no earlier send half to pair with "
            "(halves between two stages pair in order)");
}

TEST(PipelinePlanReader, RefusesInstructionsThatCrossStages) {
  EXPECT_EQ(errorOf(edited(R"("operands": [3, 1])", R"("operands": [3, 0])")),
            "model.zplan: instructions[3]: nn.add runs on stages [1] but reads "
            "value 0 in buffer 0 of stage 0");
  EXPECT_EQ(errorOf(edited(R"({"op": "nn.add", "stages": [0], "results": [2],)",
                           R"({"op": "nn.add", "results": [2],)")),
            "model.zplan: instructions[0]: nn.add runs on every stage but "
            "reads value 0 in buffer 0 of stage 0");
  EXPECT_EQ(errorOf(edited(R"("bucket": 0, "stages": [0, 1], "free")",
                           R"("bucket": 0, "stages": [0], "free")")),
            "model.zplan: instructions[2]: collective_wait runs on stages [0] "
            "but its start on stages [0, 1]; both run on the same ranks");
  EXPECT_EQ(errorOf(edited(R"("bucket": 0, "stages": [0, 1], "free")",
                           R"("bucket": 0, "free")")),
            "model.zplan: instructions[2]: collective_wait runs on every stage "
            "but its start on stages [0, 1]; both run on the same ranks");
  // A collective over the pipeline axis needs a rank of every stage.
  std::string reduce = edited(R"("kind": "send_recv", "stream": "comm",
     "bucket": 0,)",
                              R"("kind": "all_reduce", "reduce": "sum",
     "stream": "comm", "bucket": 0,)");
  EXPECT_EQ(errorOf(replacedIn(reduce, R"("stages": [0, 1], "results": [3])",
                               R"("stages": [0], "results": [3])")),
            "model.zplan: instructions[1]: a collective over the pipeline "
            "axis runs on every stage, not on stages [0]");
}

TEST(PipelinePlanReader, AttributesCountAxesFromThePipelineAxis) {
  // Axis 0 is the pipeline axis: a stage's ranks share it, so nothing
  // slices, splits or sums partially over it.
  std::string scale =
      R"("op": "nn.scale", "stages": [0], "results": [7], "attrs": {"factor": 0.5})";
  const std::string shared = "the pipeline axis, which a stage's ranks share "
                             "(a stage's own axes are 1 and after)";
  EXPECT_EQ(
      errorOf(edited(
          scale,
          R"("op": "shard.all_slice", "stages": [0], "results": [7], "attrs": {"grid_axes": [0], "slice_axis": 0})")),
      "model.zplan: instructions[7].attrs.grid_axes: axis 0 is " + shared);
  EXPECT_EQ(
      errorOf(edited(
          scale,
          R"("op": "sbp.to_partial", "stages": [0], "results": [7], "attrs": {"grid_axis": 0})")),
      "model.zplan: instructions[7].attrs.grid_axis: axis 0 is " + shared);
  EXPECT_EQ(
      errorOf(edited(R"("operands": [0, 12],)",
                     R"("operands": [0, 12], "attrs": {"split_dims": [0]},)")),
      "model.zplan: instructions[0].attrs.split_dims: splits dim 0 over "
      "axis 0, " +
          shared);
  // On a [2, 1] grid, axis 1 is the stage's data axis.
  std::string grid =
      replacedAll(replacedIn(kPipelinePlan, R"("hierarchy": [2])",
                             R"("hierarchy": [2, 1])"),
                  R"("sbp": ["B"])", R"("sbp": ["B", "B"])");
  EXPECT_EQ(
      errorOf(replacedIn(
          grid, scale,
          R"("op": "shard.all_slice", "stages": [0], "results": [7], "attrs": {"grid_axes": [1], "slice_axis": 0})")),
      "(no error)");
}

TEST(PipelinePlanReader, TensorsKeepTheirBuffersStage) {
  std::string w = R"("frozen": false, "stage": 0})";
  EXPECT_EQ(errorOf(edited(w, R"("frozen": false, "stage": 1})")),
            "model.zplan: variables[0]: 'w' is held by stage 1 but its value 0 "
            "is in buffer 0 of stage 0");
  EXPECT_EQ(errorOf(edited(w, R"("frozen": false})")),
            "model.zplan: variables[0]: 'w' is held by every stage but its "
            "value 0 is in buffer 0 of stage 0");
  EXPECT_EQ(errorOf(edited(R"("sbp": ["B"], "stage": 0}])",
                           R"("sbp": ["B"], "stage": 1}])")),
            "model.zplan: inputs[0]: 'x' is held by stage 1 but its value 12 "
            "is in buffer 10 of stage 0");
  EXPECT_EQ(errorOf(edited(R"("sbp": ["B"])", R"x("sbp": ["S(0)"])x")),
            "model.zplan: variables[0].sbp[0]: the pipeline axis's entry is "
            "always B, got 'S(0)'");
}

TEST(PipelinePlanReader, BuffersOfOneStageStillMayNotOverlap) {
  // Buffer 5 (d, stage 0) moved onto buffer 6 (e, stage 0): both live at 6.
  EXPECT_THAT(errorOf(edited(R"("offset": 32, "bytes": 16, "live": [4, 6])",
                             R"("offset": 48, "bytes": 16, "live": [4, 6])")),
              HasSubstr("shares arena bytes [48, 64) with buffer"));
  // Buffer 10 (x) on every stage meets buffer 9 (t, stage 1).
  EXPECT_EQ(errorOf(edited(R"("role": "input", "arena": 0, "stage": 0})",
                           R"("role": "input", "arena": 0})")),
            "model.zplan: buffers[10]: shares arena bytes [80, 96) with "
            "buffer 9 while both are live (positions 0 to 0)");
}

TEST(PipelinePlanReader, StageKeysNeedAPipeline) {
  std::string plain = withoutPipeline();
  EXPECT_EQ(errorOf(plain), "model.zplan: instructions[1].kind: send_recv, "
                            "but the plan has no 'pipeline' object");
  EXPECT_EQ(errorOf(replacedIn(plain, R"("arena": 0})",
                               R"("arena": 0, "stage": 0})")),
            "model.zplan: buffers[0].stage: a stage, but the plan has no "
            "'pipeline' object");
  EXPECT_EQ(errorOf(replacedIn(plain, R"("frozen": false})",
                               R"("frozen": false, "stage": 0})")),
            "model.zplan: variables[0].stage: a stage, but the plan has no "
            "'pipeline' object");
  EXPECT_EQ(errorOf(replacedIn(plain, R"("sbp": ["B"]}])",
                               R"("sbp": ["B"], "stage": 0}])")),
            "model.zplan: inputs[0].stage: a stage, but the plan has no "
            "'pipeline' object");
  EXPECT_EQ(
      errorOf(replacedIn(plain, R"({"op": "nn.add", "results": [2])",
                         R"({"op": "nn.add", "stages": [0], "results": [2])")),
      "model.zplan: instructions[0].stages: stages, but the plan has no "
      "'pipeline' object");
}

} // namespace
