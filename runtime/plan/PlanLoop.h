//===- PlanLoop.h - unrolls a plan's micro-batch loop -----------*- C++ -*-===//
//
// A pipelined plan may hold one micro-batch's instructions per chunk and the
// order each stage runs them in (`pipeline.loop`,
// docs/plan-format.md#micro-batch-loop), so that its size does not grow
// with the micro-batches. The reader reads such a file as it reads any
// other, then unrolls it here into the program an unrolled plan would
// hold, and checks that program as it checks a file's.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_PLAN_PLANLOOP_H
#define ZEROSBP_RUNTIME_PLAN_PLANLOOP_H

#include "runtime/plan/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zerosbp::runtime {

/// A buffer's copies, one per micro-batch in flight (`micro_slots`,
/// `slot_bytes`): copy k at offset + k * bytes.
struct LoopSlots {
  int64_t count = 1;
  int64_t bytes = 0;
};

/// Where a file instruction is: in a chunk (its index), or outside the loop.
constexpr int kPrologue = -1;
constexpr int kEpilogue = -2;

/// What the loop makes of the file's instructions, buffers and values.
struct LoopTemplate {
  /// Per instruction: its chunk, kPrologue or kEpilogue.
  std::vector<int> segment;
  /// Per instruction: an nn.slice whose result is a view of its operand's
  /// rows, which the unrolled program computes by no instruction.
  std::vector<bool> view;
  /// Per buffer: each micro-batch writes its own copy (the loop writes it,
  /// nothing before the loop does).
  std::vector<bool> perMicroBatch;
  /// Per value: each micro-batch has its own copy.
  std::vector<bool> looped;
  /// Per value: how many bytes further micro-batch m's copy lies in its
  /// buffer, per m (a micro-batch's rows of a value that the loop slices).
  std::vector<int64_t> stride;
  /// Per value: the chunks that write it on its buffer's stage.
  std::vector<std::vector<int>> writers;
};

/// Where an entry of the unrolled plan comes from: the file's id, and the
/// micro-batch whose copy it is (-1: the file's one copy).
struct LoopOrigin {
  int id = 0;
  int microBatch = -1;
};

struct LoopExpansion {
  std::vector<LoopOrigin> instructions;
  std::vector<LoopOrigin> buffers;
  std::vector<LoopOrigin> values;
};

/// Checks the loop of a plan read from its file against the file's
/// instructions, buffers and values, and says what each one is to the loop.
/// Throws RuntimeError("<source>: <field>: <what>").
LoopTemplate checkLoop(const Plan &plan, const std::vector<LoopSlots> &slots);

/// Replaces the file's program by the unrolled one: the instructions before
/// the loop, each stage's invocations merged into one program, then those
/// after the loop; copies of the per-micro-batch buffers and values are
/// appended. Throws RuntimeError on an order under which no stage can go on.
LoopExpansion expandLoop(Plan &plan, const LoopTemplate &loop,
                         const std::vector<LoopSlots> &slots);

/// Recomputes every buffer's live range and every instruction's `free` from
/// the program: instruction i is at position i + 1, the runtime writes the
/// inputs and steps at position 0, and variables and outputs live to the
/// end, position instructions.size() + 1.
void recomputeLiveness(Plan &plan);

/// " of micro-batch 3" for a copy, "" for the file's one copy: what a
/// message adds to the file's id.
std::string microBatchText(const LoopOrigin &origin);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_PLAN_PLANLOOP_H
