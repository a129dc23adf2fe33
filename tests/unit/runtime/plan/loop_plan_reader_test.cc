//===- loop_plan_reader_test.cc - the reader unrolls pipeline.loop --------===//
//
// The looped plan of loop_test_plan.h, 2 stages and 1 to 4 micro-batches
// in 1F1B order, reads as the unrolled program: each stage's invocations
// in order, each micro-batch's copies of the loop's values and buffers
// (a's in its slot), its row of x, its dropout mask, fresh buckets, the
// running total summed in place and read after the loop as the last
// micro-batch left it. Instruction by instruction it is the plan unrolled
// by hand. Then one edit per check of the loop, against its message.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"
#include "tests/unit/runtime/pipeline_test_plan.h"
#include "tests/unit/runtime/plan/loop_test_plan.h"
#include "tests/unit/runtime/plan/plan_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

using namespace zerosbp::runtime;
using zerosbp::testing::errorOf;
using zerosbp::testing::kMergedOrder;
using zerosbp::testing::loopedPlan;
using zerosbp::testing::replacedIn;
using zerosbp::testing::sealed;
using zerosbp::testing::unrolledPlan;

namespace {

Plan read(const std::string &text) {
  return parsePlan(sealed(text), "model.zplan");
}

/// The ops of the instructions that `stage` runs, in order.
std::vector<std::string> opsOfStage(const Plan &plan, int stage) {
  std::vector<std::string> ops;
  for (const Instruction &instruction : plan.instructions)
    if (plan.runsOn(instruction, stage))
      ops.push_back(instruction.op);
  return ops;
}

/// The arena bytes a value starts at, its stage and its type: what makes
/// two plans' values the same.
std::string placeOf(const Plan &plan, int id) {
  const PlanValue &value = plan.values[id];
  std::string text = std::to_string(plan.arenaOffset(id)) + "@" +
                     std::to_string(plan.buffers[value.buffer].stage) + " " +
                     dtypeName(value.dtype) + "[";
  for (int64_t dim : value.shape)
    text += std::to_string(dim) + ",";
  return text + "]";
}

std::string bufferText(const Plan &plan, int id) {
  const PlanBuffer &buffer = plan.buffers[id];
  return std::to_string(buffer.offset) + "+" + std::to_string(buffer.bytes) +
         "@" + std::to_string(buffer.stage) + " " + roleName(buffer.role) +
         " live [" + std::to_string(buffer.liveFirst) + ", " +
         std::to_string(buffer.liveLast) + "]";
}

TEST(LoopPlanReader, KeepsTheLoopForReports) {
  Plan plan = read(loopedPlan(3));
  ASSERT_TRUE(plan.pipeline);
  ASSERT_TRUE(plan.pipeline->loop);
  const PlanLoop &loop = *plan.pipeline->loop;
  EXPECT_EQ(plan.pipeline->microBatches, 3);
  EXPECT_EQ(loop.templateInstructions, 18);
  ASSERT_EQ(loop.chunks.size(), 3u);
  EXPECT_EQ(loop.chunks[1].stage, 1);
  EXPECT_FALSE(loop.chunks[1].backward);
  EXPECT_TRUE(loop.chunks[2].backward);
  EXPECT_EQ(loop.chunks[2].first, 11);
  EXPECT_EQ(loop.chunks[2].end, 15);
  using Runs = std::vector<std::pair<int, int>>;
  EXPECT_EQ(loop.order[0],
            (Runs{{0, 0}, {0, 1}, {2, 0}, {0, 2}, {2, 1}, {2, 2}}));
  EXPECT_EQ(loop.order[1], (Runs{{1, 0}, {1, 1}, {1, 2}}));
  // Before the loop 1, 3 per forward (its slice is a view), 6 per stage 1
  // chunk, 4 per backward, 3 after.
  EXPECT_EQ(plan.instructions.size(), 1u + 3 * (3 + 6 + 4) + 3);
}

TEST(LoopPlanReader, EachStageRunsItsOrder) {
  Plan plan = read(loopedPlan(3));
  const std::vector<std::string> forward = {"nn.add", "collective_start",
                                            "collective_wait"};
  const std::vector<std::string> backward = {
      "collective_start", "collective_wait", "nn.mul", "nn.add"};
  // Stage 0: F0 F1 B0 F2 B1 B2, between the total's fill and the update.
  std::vector<std::string> stage0 = {"nn.fill"};
  for (const std::vector<std::string> *run :
       {&forward, &forward, &backward, &forward, &backward, &backward})
    stage0.insert(stage0.end(), run->begin(), run->end());
  stage0.insert(stage0.end(), {"nn.scale", "nn.sub"});
  EXPECT_EQ(opsOfStage(plan, 0), stage0);
  std::vector<std::string> stage1;
  for (int m = 0; m < 3; ++m)
    stage1.insert(stage1.end(),
                  {"collective_start", "collective_wait", "nn.dropout",
                   "nn.add", "collective_start", "collective_wait"});
  stage1.push_back("nn.scale");
  EXPECT_EQ(opsOfStage(plan, 1), stage1);
  // The stages merge as the reader takes turns: stage 0 up to the first
  // receive of stage 1's message, then stage 1 until it waits for stage 0.
  EXPECT_EQ(plan.instructions[7].op, "collective_start");
  EXPECT_EQ(plan.instructions[7].stages, std::vector<int>{1});
}

TEST(LoopPlanReader, CopiesTheLoopsValuesAndBuffersPerMicroBatch) {
  const int micro = 4;
  Plan plan = read(loopedPlan(micro));
  // The file's 13 buffers and 16 values, then micro-batches 1-3's copies
  // of the 6 buffers of the loop (a, b, d, e, f, h) and its 8 values (s,
  // a, b, d, e, f, h and the total g).
  EXPECT_EQ(plan.buffers.size(), 13u + 6 * (micro - 1));
  EXPECT_EQ(plan.values.size(), 16u + 8 * (micro - 1));
  std::vector<const Instruction *> adds, dropouts, muls, totals;
  for (const Instruction &instruction : plan.instructions) {
    if (instruction.op == "nn.add" && instruction.stages[0] == 0)
      (instruction.operands[1] == 0 ? adds : totals).push_back(&instruction);
    if (instruction.op == "nn.dropout")
      dropouts.push_back(&instruction);
    if (instruction.op == "nn.mul")
      muls.push_back(&instruction);
    EXPECT_NE(instruction.op, "nn.slice"); // A view: no instruction.
    EXPECT_FALSE(instruction.attrs.has("micro_batch_dim"));
  }
  ASSERT_EQ(adds.size(), 4u);
  ASSERT_EQ(dropouts.size(), 4u);
  ASSERT_EQ(muls.size(), 4u);
  ASSERT_EQ(totals.size(), 4u);
  std::set<int> aBuffers;
  for (int m = 0; m < micro; ++m) {
    SCOPED_TRACE("micro-batch " + std::to_string(m));
    // Micro-batch m reads row m of x: 16 bytes further per micro-batch, in
    // x's buffer.
    const PlanValue &row = plan.values[adds[m]->operands[0]];
    EXPECT_EQ(row.buffer, 1);
    EXPECT_EQ(row.offset, 16 * m);
    // a in its own buffer, slot m mod 2 of the file's buffer 3; micro-batch
    // 0's copy is the file's.
    int a = adds[m]->results[0];
    EXPECT_EQ(a == 4, m == 0);
    int aBuffer = plan.values[a].buffer;
    EXPECT_EQ(aBuffer == 3, m == 0);
    aBuffers.insert(aBuffer);
    EXPECT_EQ(plan.buffers[aBuffer].offset, 192 + (m % 2) * 64);
    EXPECT_EQ(plan.buffers[aBuffer].stage, 0);
    EXPECT_EQ(plan.buffers[aBuffer].role, Role::Activation);
    // The backward of micro-batch m reads the a of its own forward.
    EXPECT_EQ(muls[m]->operands[1], a);
    // Each micro-batch draws its own mask.
    EXPECT_EQ(dropouts[m]->attrs.getInt("micro_batch", 0), m);
    EXPECT_EQ(dropouts[m]->attrs.has("micro_batch"), m > 0);
    // The total: read from the file's value before the loop, written in
    // its bytes by each micro-batch.
    EXPECT_EQ(totals[m]->operands[0], 2);
    EXPECT_EQ(plan.values[totals[m]->results[0]].buffer, 2);
  }
  EXPECT_EQ(aBuffers.size(), 4u);
  // After the loop: the total as the last micro-batch left it, and the
  // output.
  const Instruction &scale = plan.instructions[plan.instructions.size() - 3];
  EXPECT_EQ(scale.op, "nn.scale");
  EXPECT_EQ(scale.operands[0], totals[micro - 1]->results[0]);
  EXPECT_EQ(plan.outputs, std::vector<int>{11});
}

TEST(LoopPlanReader, NumbersBucketsAfreshAndPairsTheHalves) {
  Plan plan = read(loopedPlan(3));
  // Four halves per micro-batch, numbered in the order of their starts.
  EXPECT_EQ(plan.numBuckets, 12);
  int next = 0;
  std::set<int> waited;
  for (const Instruction &instruction : plan.instructions) {
    if (instruction.kind == InstructionKind::CollectiveStart)
      EXPECT_EQ(instruction.bucket, next++);
    if (instruction.kind == InstructionKind::CollectiveWait) {
      EXPECT_LT(instruction.bucket, next);
      EXPECT_TRUE(waited.insert(instruction.bucket).second);
    }
  }
  // The k-th receive half from stage 0 takes the k-th send half's message:
  // micro-batch k's a into its b.
  std::vector<const Instruction *> sends, receives;
  for (const Instruction &instruction : plan.instructions)
    if (instruction.kind == InstructionKind::CollectiveStart &&
        instruction.sourceStage == 0)
      (instruction.stages[0] == 0 ? sends : receives).push_back(&instruction);
  ASSERT_EQ(sends.size(), 3u);
  ASSERT_EQ(receives.size(), 3u);
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(sends[m]->operands, receives[m]->operands);
    EXPECT_EQ(sends[m]->results, receives[m]->results);
  }
  EXPECT_NE(sends[0]->results, sends[1]->results);
}

TEST(LoopPlanReader, LiveRangesAndFreesAreTheUnrolledProgramsOwn) {
  Plan plan = read(loopedPlan(2));
  // Program: [1] fill, F0 [2, 4], F1 [5, 7], S0 [8, 13], S1 [14, 19],
  // B0 [20, 23], B1 [24, 27], after the loop [28, 30]; the end is 31.
  ASSERT_EQ(plan.instructions.size(), 30u);
  // The total: from the fill to the scale after the loop.
  EXPECT_EQ(bufferText(plan, 2), "128+16@0 activation live [1, 28]");
  // a of micro-batch 0 (the file's buffer 3) and of 1, in their slots:
  // from the forward's add to the backward's mul.
  EXPECT_EQ(bufferText(plan, 3), "192+16@0 activation live [2, 22]");
  int aOne = plan.values[plan.instructions[4].results[0]].buffer;
  EXPECT_EQ(bufferText(plan, aOne), "256+16@0 activation live [5, 26]");
  // b of micro-batch 0 on stage 1: from its receive half to the dropout;
  // the send half on stage 0 names it but does not touch it.
  EXPECT_EQ(bufferText(plan, 9), "128+16@1 activation live [8, 10]");
  // Variables and the output live to the end, the input and the step from
  // 0; the spare buffer, which nothing uses, at 0 alone.
  EXPECT_EQ(bufferText(plan, 0), "0+16@0 param live [0, 31]");
  EXPECT_EQ(bufferText(plan, 6), "448+16@0 activation live [28, 31]");
  EXPECT_EQ(bufferText(plan, 1), "64+32@0 input live [0, 5]");
  EXPECT_EQ(bufferText(plan, 8), "64+8@1 activation live [0, 16]");
  EXPECT_EQ(bufferText(plan, 12), "512+16@0 activation live [0, 0]");
  // Each buffer is freed after its last use, by an instruction of its
  // stage; variables and the output never are.
  std::set<int> freed;
  for (const Instruction &instruction : plan.instructions)
    for (int buffer : instruction.free) {
      EXPECT_TRUE(freed.insert(buffer).second) << buffer;
      EXPECT_TRUE(plan.runsOn(instruction, plan.buffers[buffer].stage));
    }
  // Micro-batch 0's backward: its mul reads a and f last, its add h; the
  // scale after the loop reads the total last.
  EXPECT_EQ(plan.instructions[21].free, (std::vector<int>{3, 4}));
  EXPECT_EQ(plan.instructions[22].free, std::vector<int>{5});
  EXPECT_EQ(plan.instructions[27].free, std::vector<int>{2});
  EXPECT_FALSE(freed.count(0));
  EXPECT_FALSE(freed.count(6));
  EXPECT_FALSE(freed.count(7));
  EXPECT_TRUE(freed.count(1));
  EXPECT_TRUE(freed.count(8));
}

// The same step written out by hand: instruction by instruction the same
// ops, stages, attributes and buckets, on values at the same arena bytes
// in buffers of the same place, role and live range, freeing the same
// buffers.
TEST(LoopPlanReader, EqualsThePlanUnrolledByHand) {
  for (const auto &[micro, merged] : kMergedOrder) {
    SCOPED_TRACE(std::to_string(micro) + " micro-batches: " + merged);
    Plan looped = read(loopedPlan(micro));
    Plan unrolled = read(unrolledPlan(micro));
    EXPECT_EQ(looped.numBuckets, unrolled.numBuckets);
    ASSERT_EQ(looped.instructions.size(), unrolled.instructions.size());
    for (size_t i = 0; i < looped.instructions.size(); ++i) {
      SCOPED_TRACE("instructions[" + std::to_string(i) + "]");
      const Instruction &a = looped.instructions[i];
      const Instruction &b = unrolled.instructions[i];
      EXPECT_EQ(a.op, b.op);
      EXPECT_EQ(a.kind, b.kind);
      EXPECT_EQ(a.stages, b.stages);
      EXPECT_EQ(a.attrs.all(), b.attrs.all());
      EXPECT_EQ(a.bucket, b.bucket);
      EXPECT_EQ(a.sourceStage, b.sourceStage);
      EXPECT_EQ(a.targetStage, b.targetStage);
      ASSERT_EQ(a.operands.size(), b.operands.size());
      ASSERT_EQ(a.results.size(), b.results.size());
      for (size_t k = 0; k < a.operands.size(); ++k)
        EXPECT_EQ(placeOf(looped, a.operands[k]),
                  placeOf(unrolled, b.operands[k]));
      for (size_t k = 0; k < a.results.size(); ++k) {
        EXPECT_EQ(placeOf(looped, a.results[k]),
                  placeOf(unrolled, b.results[k]));
        EXPECT_EQ(bufferText(looped, looped.values[a.results[k]].buffer),
                  bufferText(unrolled, unrolled.values[b.results[k]].buffer));
      }
      std::multiset<std::string> freedA, freedB;
      for (int buffer : a.free)
        freedA.insert(bufferText(looped, buffer));
      for (int buffer : b.free)
        freedB.insert(bufferText(unrolled, buffer));
      EXPECT_EQ(freedA, freedB);
    }
    EXPECT_EQ(placeOf(looped, looped.outputs[0]),
              placeOf(unrolled, unrolled.outputs[0]));
  }
}

TEST(LoopPlanReader, OneMicroBatchIsTheFileItself) {
  Plan plan = read(loopedPlan(1));
  EXPECT_EQ(plan.buffers.size(), 13u);
  EXPECT_EQ(plan.values.size(), 16u);
  // The file's instructions but the slice, a view.
  EXPECT_EQ(plan.instructions.size(), 17u);
  EXPECT_EQ(plan.instructions[1].op, "nn.add");
  EXPECT_EQ(plan.instructions[1].operands, (std::vector<int>{3, 0}));
}

TEST(LoopPlanReader, ASliceIntoItsOwnBufferMovesItsOffsets) {
  // s in the spare buffer 12: a copy of row m, an instruction per
  // micro-batch, its offsets[0] m.
  Plan plan = read(replacedIn(
      loopedPlan(3),
      R"({"buffer": 1, "offset": 0, "dtype": "f32", "shape": [1, 4]})",
      R"({"buffer": 12, "offset": 0, "dtype": "f32", "shape": [1, 4]})"));
  std::vector<const Instruction *> slices;
  for (const Instruction &instruction : plan.instructions)
    if (instruction.op == "nn.slice")
      slices.push_back(&instruction);
  ASSERT_EQ(slices.size(), 3u);
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(slices[m]->attrs.getInts("offsets"),
              (std::vector<int64_t>{m, 0}));
    EXPECT_FALSE(slices[m]->attrs.has("micro_batch_dim"));
    EXPECT_EQ(plan.values[slices[m]->operands[0]].offset, 0);
    EXPECT_EQ(plan.buffers[plan.values[slices[m]->results[0]].buffer].offset,
              512);
  }
  EXPECT_NE(slices[0]->results, slices[1]->results);
}

TEST(LoopPlanReader, DropoutCountsFromTheTemplatesMicroBatch) {
  Plan plan = read(replacedIn(loopedPlan(2), R"("seed": 7, "stream": 3})",
                              R"("seed": 7, "stream": 3, "micro_batch": 5})"));
  std::vector<int64_t> numbers;
  for (const Instruction &instruction : plan.instructions)
    if (instruction.op == "nn.dropout")
      numbers.push_back(instruction.attrs.getInt("micro_batch"));
  EXPECT_EQ(numbers, (std::vector<int64_t>{5, 6}));
}

// One edit per check of the loop.
std::string looped(const std::string &from, const std::string &to,
                   int micro = 2) {
  return replacedIn(loopedPlan(micro), from, to);
}

TEST(LoopPlanReader, RefusesBadChunks) {
  EXPECT_EQ(
      errorOf(looped(R"("instructions": [1, 5])", R"("instructions": [5, 1])")),
      "model.zplan: pipeline.loop.chunks[0].instructions: expected "
      "[first, end) with first < end");
  EXPECT_EQ(errorOf(looped(R"("instructions": [1, 5])",
                           R"("instructions": [1, 5, 7])")),
            "model.zplan: pipeline.loop.chunks[0].instructions: expected "
            "[first, end) with first < end");
  EXPECT_EQ(errorOf(looped(R"("instructions": [5, 11])",
                           R"("instructions": [6, 11])")),
            "model.zplan: pipeline.loop.chunks[1].instructions: chunk 1 "
            "starts at instruction 6, not where chunk 0 ends (5); chunks are "
            "adjacent, in order");
  EXPECT_EQ(errorOf(looped(R"("instructions": [11, 15])",
                           R"("instructions": [11, 19])")),
            "model.zplan: pipeline.loop.chunks[2].instructions: ends at "
            "instruction 19, past the plan's 18 instructions");
  EXPECT_EQ(errorOf(looped(R"("phase": "backward")", R"("phase": "forward")")),
            "model.zplan: pipeline.loop.chunks[2]: stage 0's forward of model "
            "chunk 0 is chunk 0 already");
  EXPECT_EQ(errorOf(looped(R"("phase": "backward")", R"("phase": "sideways")")),
            "model.zplan: pipeline.loop.chunks[2].phase: unknown phase "
            "'sideways' (expected forward or backward)");
  EXPECT_EQ(
      errorOf(looped(R"("backward", "model": 0)", R"("backward", "model": 1)")),
      "model.zplan: pipeline.loop.chunks[2].model: value 1 out of range "
      "[0, 0]");
  EXPECT_EQ(
      errorOf(looped(R"({"stage": 1, "phase")", R"({"stage": 2, "phase")")),
      "model.zplan: pipeline.loop.chunks[1].stage: value 2 out of range "
      "[0, 1]");
  EXPECT_EQ(errorOf(looped(R"("loop": {)", R"("loop": 1, "x": {)")),
            "model.zplan: pipeline.loop: expected an object");
  // Chunk 0 taken up to stage 1's receive half.
  EXPECT_EQ(
      errorOf(replacedIn(
          looped(R"("instructions": [1, 5])", R"("instructions": [1, 6])"),
          R"("instructions": [5, 11])", R"("instructions": [6, 11])")),
      "model.zplan: instructions[5]: runs on stages [1], but it is in "
      "pipeline.loop.chunks[0], whose instructions run on stage 0 "
      "alone");
}

TEST(LoopPlanReader, RefusesABadOrder) {
  // Stage 0's order for 2 micro-batches: [0, 0], [0, 1], [2, 0], [2, 1].
  std::string stage0 = "[[[0, 0], [0, 1], [2, 0], [2, 1]],";
  EXPECT_EQ(errorOf(looped(stage0, "[[[0, 0], [0, 1], [2, 0]],")),
            "model.zplan: pipeline.loop.order[0]: chunk 2 of micro-batch 1 is "
            "missing (stage 0 runs each of its chunks once per micro-batch)");
  EXPECT_EQ(errorOf(looped(stage0, "[[[0, 0], [0, 1], [2, 0], [2, 0]],")),
            "model.zplan: pipeline.loop.order[0][3]: chunk 2 of micro-batch 0 "
            "is listed twice");
  EXPECT_EQ(errorOf(looped(stage0, "[[[0, 0], [1, 1], [2, 0], [2, 1]],")),
            "model.zplan: pipeline.loop.order[0][1][0]: chunk 1 runs on stage "
            "1, not stage 0");
  EXPECT_EQ(errorOf(looped(stage0, "[[[0, 0], [0, 2], [2, 0], [2, 1]],")),
            "model.zplan: pipeline.loop.order[0][1][1]: value 2 out of range "
            "[0, 1]");
  EXPECT_EQ(errorOf(looped(stage0, "[[[0, 0], [3, 1], [2, 0], [2, 1]],")),
            "model.zplan: pipeline.loop.order[0][1][0]: value 3 out of range "
            "[0, 2]");
  EXPECT_EQ(errorOf(looped(stage0, "[[[0, 0], [0], [2, 0], [2, 1]],")),
            "model.zplan: pipeline.loop.order[0][1]: expected [chunk, "
            "micro-batch]");
  EXPECT_EQ(errorOf(looped(R"("order": [[)", R"("order": [[[0, 0]], [)")),
            "model.zplan: pipeline.loop.order: expected one list per stage "
            "(2), got 3");
  // Micro-batch 1's backward before its forward computed a.
  EXPECT_EQ(errorOf(looped(stage0, "[[[0, 0], [2, 1], [0, 1], [2, 0]],")),
            "model.zplan: pipeline.loop.order[0][1]: chunk 2 of micro-batch 1 "
            "reads value 4, which chunk 0 computes for that micro-batch later "
            "(order[0][2])");
}

TEST(LoopPlanReader, RefusesAnOrderUnderWhichNoStageCanGoOn) {
  // The backward squares f instead of reading a: stage 0 may then run it
  // first, and waits for stage 1, which waits for stage 0's forward.
  std::string text = looped(R"("operands": [8, 4]})", R"("operands": [8, 8]})");
  EXPECT_EQ(errorOf(text), "(no error)");
  EXPECT_EQ(errorOf(replacedIn(text, "[[[0, 0], [0, 1], [2, 0], [2, 1]],",
                               "[[[2, 0], [0, 0], [0, 1], [2, 1]],")),
            "model.zplan: pipeline.loop.order: no stage can go on: stage 0 "
            "waits in chunk 2 of micro-batch 0 (the receive half "
            "instructions[11]) for a send from stage 1; stage 1 waits in "
            "chunk 1 of micro-batch 0 (the receive half instructions[5]) for "
            "a send from stage 0");
}

TEST(LoopPlanReader, HalvesOfTheUnrolledProgramPairInOrder) {
  // Stage 1 takes micro-batch 1 first: its receive half gets micro-batch
  // 0's message.
  EXPECT_EQ(errorOf(looped("[[1, 0], [1, 1]]", "[[1, 1], [1, 0]]")),
            "model.zplan: instructions[5] of micro-batch 1: the receive half "
            "of value 4 of micro-batch 1 into value 5 of micro-batch 1 pairs "
            "with the send half instructions[3] of micro-batch 0, which sends "
            "value 4 of micro-batch 0 into value 5 of micro-batch 0 (halves "
            "between two stages pair in order)");
}

TEST(LoopPlanReader, RefusesBadSlots) {
  std::string slots = R"("micro_slots": 2, "slot_bytes": 64)";
  EXPECT_EQ(errorOf(looped(slots, R"("micro_slots": 2)")),
            "model.zplan: buffers[3].micro_slots: 2 slots need slot_bytes, "
            "the stride between them");
  EXPECT_EQ(errorOf(looped(slots, R"("micro_slots": 2, "slot_bytes": 48)")),
            "model.zplan: buffers[3].slot_bytes: 48 is not a multiple of 64");
  EXPECT_EQ(errorOf(looped(slots, R"("micro_slots": 2, "slot_bytes": 0)")),
            "model.zplan: buffers[3].slot_bytes: 0 is less than the buffer's "
            "16 bytes");
  EXPECT_EQ(errorOf(looped(slots, R"("micro_slots": 7, "slot_bytes": 64)")),
            "model.zplan: buffers[3]: slot 6 ends at byte 592, past the "
            "device arena (528 bytes)");
  EXPECT_EQ(errorOf(looped(slots, R"("micro_slots": 0, "slot_bytes": 64)")),
            "model.zplan: buffers[3].micro_slots: value 0 out of range [1, "
            "1048576]");
  // The total is summed into by every micro-batch: one copy.
  EXPECT_EQ(
      errorOf(looped(
          R"("live": [1, 16], "role": "activation", "arena": 0, "stage": 0})",
          R"("live": [1, 16], "role": "activation", "arena": 0, "stage": 0, "micro_slots": 2, "slot_bytes": 64})")),
      "model.zplan: buffers[2].micro_slots: 2 slots, but the buffer has one "
      "copy (nothing in the loop writes it, or a variable, input, step or "
      "instruction before the loop does)");
  // Slots belong to a loop.
  EXPECT_EQ(
      errorOf(replacedIn(
          zerosbp::testing::kPipelinePlan,
          R"("role": "param", "arena": 0, "stage": 0})",
          R"("role": "param", "arena": 0, "stage": 0, "slot_bytes": 64})")),
      "model.zplan: buffers[0].slot_bytes: micro-batch slots, but the plan "
      "has no 'pipeline.loop'");
}

TEST(LoopPlanReader, TooFewSlotsOverlapInTheUnrolledProgram) {
  // One slot for a: micro-batch 1's forward writes it while micro-batch
  // 0's backward is still to read it.
  EXPECT_EQ(errorOf(looped(R"(, "micro_slots": 2, "slot_bytes": 64)", "")),
            "model.zplan: buffers[3] of micro-batch 1: shares arena bytes "
            "[192, 208) with buffer 3 of micro-batch 0 while both are live "
            "(positions 5 to 22)");
  // A third micro-batch needs no third slot: 1F1B holds two at once.
  EXPECT_EQ(errorOf(loopedPlan(4)), "(no error)");
}

TEST(LoopPlanReader, RefusesBadMicroBatchSlices) {
  EXPECT_EQ(
      errorOf(looped(R"("micro_batch_dim": 0)", R"("micro_batch_dim": 2)")),
      "model.zplan: instructions[1].attrs.micro_batch_dim: expected a "
      "dim of the operand's shape [2, 4]");
  EXPECT_EQ(errorOf(looped(R"("offsets": [0, 0], "sizes": [1, 4])",
                           R"("offsets": [1, 0], "sizes": [1, 4])")),
            "model.zplan: instructions[1].attrs.micro_batch_dim: micro-batch 1 "
            "slices dim 0 of [2, 4] from index 1 + 1, past its end");
  EXPECT_EQ(errorOf(looped(R"("offsets": [0, 0], "sizes": [1, 4])",
                           R"("offsets": [0, 0])")),
            "model.zplan: instructions[1].attrs: nn.slice needs offsets and "
            "sizes (and strides, if any) with one entry per dim of its "
            "operand");
  EXPECT_EQ(errorOf(looped(R"("attrs": {"factor": 0.5}},
    {"op": "nn.sub")",
                           R"("attrs": {"factor": 0.5, "micro_batch_dim": 0}},
    {"op": "nn.sub")")),
            "model.zplan: instructions[15].attrs.micro_batch_dim: only an "
            "nn.slice in a chunk of pipeline.loop has one");
  EXPECT_EQ(
      errorOf(replacedIn(
          zerosbp::testing::kPipelinePlan, R"("operands": [0, 12],)",
          R"("operands": [0, 12], "attrs": {"micro_batch_dim": 0},)")),
      "model.zplan: instructions[0].attrs.micro_batch_dim: only an nn.slice "
      "in a chunk of pipeline.loop has one");
}

TEST(LoopPlanReader, RefusesMaskNumbersPastTheKernels) {
  // The last micro-batch's mask would be numbered 2^16.
  EXPECT_EQ(errorOf(looped(R"("seed": 7, "stream": 3})",
                           R"("seed": 7, "stream": 3, "micro_batch": 65535})")),
            "model.zplan: instructions[7].attrs.micro_batch: expected an "
            "integer in [0, 65534], so that micro-batch 1's mask is numbered "
            "within nn.dropout's [0, 65535]");
  EXPECT_EQ(errorOf(looped(R"("seed": 7, "stream": 3})",
                           R"("seed": 7, "stream": 3, "micro_batch": 0.5})")),
            "model.zplan: instructions[7].attrs.micro_batch: expected an "
            "integer in [0, 65534], so that micro-batch 1's mask is numbered "
            "within nn.dropout's [0, 65535]");
  EXPECT_EQ(
      errorOf(looped(R"("micro_batch_dim": 0)", R"("micro_batch_dim": 0.5)")),
      "model.zplan: instructions[1].attrs.micro_batch_dim: expected a "
      "dim of the operand's shape [2, 4]");
}

TEST(LoopPlanReader, KeepsEachCollectiveInOneChunk) {
  // Chunk 2 cut after its receive half's start: the wait would run once,
  // after the loop.
  EXPECT_EQ(errorOf(looped(R"("instructions": [11, 15])",
                           R"("instructions": [11, 12])")),
            "model.zplan: instructions[12]: collective_wait of bucket 3 is "
            "after the loop but its start instructions[11] in chunk 2; a "
            "start and its wait are in one chunk, or both outside the loop");
}

TEST(LoopPlanReader, NothingBeforeTheLoopNamesItsValues) {
  EXPECT_EQ(
      errorOf(looped(
          R"({"op": "nn.fill", "stages": [0], "results": [2],)",
          R"({"op": "nn.fill", "stages": [0], "results": [2], "operands": [3],)")),
      "model.zplan: instructions[0]: names value 3, which each "
      "micro-batch of pipeline.loop has its own copy of; an instruction "
      "before the loop names none");
}

} // namespace
