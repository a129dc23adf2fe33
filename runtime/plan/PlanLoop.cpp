//===- PlanLoop.cpp - unrolls a plan's micro-batch loop -------------------===//
//
// The unrolled program is the instructions before the loop, each stage's
// invocations (chunk, micro-batch) of `pipeline.loop.order` merged into one
// program, and the instructions after the loop
// (docs/plan-format.md#micro-batch-loop). An invocation copies its chunk
// with micro-batch m's values, buffers, buckets and transfers. The stages
// take turns, each going on until its next instruction is a receive half
// whose message is not sent yet: halves between two stages then pair in
// order, as the reader requires of any program.
//
// Micro-batch 0's copy of a buffer or value keeps the file's id, and the
// other micro-batches' copies follow the file's entries, micro-batch by
// micro-batch.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoop.h"

#include "runtime/core/Error.h"

#include <map>

namespace zerosbp::runtime {

std::string microBatchText(const LoopOrigin &origin) {
  return origin.microBatch < 0
             ? ""
             : " of micro-batch " + std::to_string(origin.microBatch);
}

namespace {

/// A send_recv start that runs on its target stage alone: it takes the
/// oldest message in flight from the source.
bool isReceiveHalf(const Instruction &instruction) {
  return instruction.kind == InstructionKind::CollectiveStart &&
         instruction.collective == CollectiveKind::SendRecv &&
         instruction.stages == std::vector<int>{instruction.targetStage};
}

bool isSendHalf(const Instruction &instruction) {
  return instruction.kind == InstructionKind::CollectiveStart &&
         instruction.collective == CollectiveKind::SendRecv &&
         instruction.stages == std::vector<int>{instruction.sourceStage};
}

class Unroller {
public:
  Unroller(Plan &plan, const LoopTemplate &loop,
           const std::vector<LoopSlots> &slots)
      : plan(plan), record(*plan.pipeline->loop), loop(loop), slots(slots),
        microBatches(plan.pipeline->microBatches),
        fileBuffers(static_cast<int>(plan.buffers.size())),
        fileValues(static_cast<int>(plan.values.size())) {}

  LoopExpansion unroll() {
    copyBuffers();
    copyValues();
    file = std::move(plan.instructions);
    plan.instructions.clear();
    const PlanLoopChunk &first = record.chunks.front();
    for (int i = 0; i < first.first; ++i)
      emit(i, -1);
    mergeStages();
    for (size_t i = record.chunks.back().end; i < file.size(); ++i)
      emit(static_cast<int>(i), -1);
    for (int &id : plan.outputs)
      id = valueAfterLoop(id);
    plan.numBuckets = static_cast<int>(buckets.size());
    plan.numTransfers = static_cast<int>(transfers.size());
    return std::move(expansion);
  }

private:
  // Micro-batch m's copy of a buffer of the loop: its slot m mod K.
  void copyBuffers() {
    for (int b = 0; b < fileBuffers; ++b) {
      expansion.buffers.push_back({b, loop.perMicroBatch[b] ? 0 : -1});
      if (loop.perMicroBatch[b])
        loopBuffers.push_back(b);
    }
    bufferRank.assign(fileBuffers, -1);
    for (size_t k = 0; k < loopBuffers.size(); ++k)
      bufferRank[loopBuffers[k]] = static_cast<int>(k);
    for (int m = 1; m < microBatches; ++m)
      for (int b : loopBuffers) {
        PlanBuffer copy = plan.buffers[b];
        copy.offset += (m % slots[b].count) * slots[b].bytes;
        plan.buffers.push_back(copy);
        expansion.buffers.push_back({b, m});
      }
  }

  void copyValues() {
    for (int v = 0; v < fileValues; ++v) {
      expansion.values.push_back({v, loop.looped[v] ? 0 : -1});
      if (loop.looped[v])
        loopValues.push_back(v);
    }
    valueRank.assign(fileValues, -1);
    for (size_t k = 0; k < loopValues.size(); ++k)
      valueRank[loopValues[k]] = static_cast<int>(k);
    for (int m = 1; m < microBatches; ++m)
      for (int v : loopValues) {
        PlanValue copy = plan.values[v];
        copy.buffer = bufferOf(copy.buffer, m);
        copy.offset += m * loop.stride[v];
        plan.values.push_back(copy);
        expansion.values.push_back({v, m});
      }
  }

  int bufferOf(int buffer, int micro) const {
    if (micro <= 0 || !loop.perMicroBatch[buffer])
      return buffer;
    return fileBuffers + (micro - 1) * static_cast<int>(loopBuffers.size()) +
           bufferRank[buffer];
  }
  int valueOf(int value, int micro) const {
    if (micro <= 0 || !loop.looped[value])
      return value;
    return fileValues + (micro - 1) * static_cast<int>(loopValues.size()) +
           valueRank[value];
  }
  /// After the loop, a value of the loop is the last micro-batch's.
  int valueAfterLoop(int value) const {
    return valueOf(value, microBatches - 1);
  }

  // File instruction `index` as micro-batch `micro` runs it (-1: outside
  // the loop), with fresh bucket and transfer ids.
  void emit(int index, int micro) {
    const Instruction &source = file[index];
    bool after = loop.segment[index] == kEpilogue;
    int copy = after ? microBatches - 1 : micro;
    if (micro >= 0 && loop.view[index])
      return; // Its result is already its operand's rows.
    Instruction instruction = source;
    for (int &id : instruction.operands)
      id = valueOf(id, copy);
    for (int &id : instruction.results)
      id = valueOf(id, copy);
    if (instruction.staging)
      instruction.staging = bufferOf(*instruction.staging, copy);
    instruction.free.clear();
    switch (instruction.kind) {
    case InstructionKind::CollectiveStart: {
      int fresh = static_cast<int>(buckets.size());
      buckets[{source.bucket, micro}] = fresh;
      instruction.bucket = fresh;
      break;
    }
    case InstructionKind::CollectiveWait:
      instruction.bucket = buckets.at({source.bucket, micro});
      break;
    case InstructionKind::TransferStart: {
      int fresh = static_cast<int>(transfers.size());
      transfers[{source.transfer, micro}] = fresh;
      instruction.transfer = fresh;
      break;
    }
    case InstructionKind::TransferWait:
      instruction.transfer = transfers.at({source.transfer, micro});
      break;
    default:
      break;
    }
    if (micro > 0)
      renumberMicroBatch(instruction, micro);
    if (micro >= 0)
      stripLoopAttrs(instruction);
    plan.instructions.push_back(std::move(instruction));
    expansion.instructions.push_back({index, micro});
  }

  // Each micro-batch draws its own dropout mask and slices its own rows.
  void renumberMicroBatch(Instruction &instruction, int micro) {
    if (instruction.op == "nn.dropout")
      instruction.attrs.set("micro_batch",
                            instruction.attrs.getInt("micro_batch", 0) + micro);
    if (std::optional<int64_t> dim =
            instruction.attrs.findInt("micro_batch_dim")) {
      std::vector<int64_t> offsets = instruction.attrs.getInts("offsets");
      offsets[*dim] += micro;
      instruction.attrs.set("offsets", offsets);
    }
  }

  // The unrolled plan's instructions carry the attributes of an unrolled
  // plan's: the loop's own are spent.
  static void stripLoopAttrs(Instruction &instruction) {
    if (!instruction.attrs.has("micro_batch_dim"))
      return;
    AttrMap attrs;
    for (const auto &[name, value] : instruction.attrs.all())
      if (name != "micro_batch_dim")
        attrs.set(name, value);
    instruction.attrs = std::move(attrs);
  }

  // Each stage goes on while it can: up to a receive half whose message
  // no earlier send half carries.
  void mergeStages() {
    int stages = plan.pipeline->stages;
    // Messages sent and not yet received, by (source, target): those of
    // the instructions before the loop first.
    std::map<std::pair<int, int>, int64_t> inFlight;
    for (const Instruction &instruction : plan.instructions)
      count(instruction, inFlight);
    std::vector<Cursor> cursors(stages);
    auto done = [&](int stage) {
      return cursors[stage].run >= record.order[stage].size();
    };
    for (;;) {
      bool moved = false, finished = true;
      for (int stage = 0; stage < stages; ++stage) {
        const std::vector<std::pair<int, int>> &runs = record.order[stage];
        Cursor &cursor = cursors[stage];
        while (!done(stage)) {
          auto [chunk, micro] = runs[cursor.run];
          const PlanLoopChunk &range = record.chunks[chunk];
          int index = range.first + cursor.at;
          const Instruction &next = file[index];
          if (isReceiveHalf(next) &&
              inFlight[{next.sourceStage, next.targetStage}] == 0)
            break;
          count(next, inFlight);
          emit(index, micro);
          moved = true;
          if (++cursor.at == range.end - range.first) {
            cursor.at = 0;
            ++cursor.run;
          }
        }
        finished = finished && done(stage);
      }
      if (finished)
        return;
      if (!moved)
        deadlock(cursors);
    }
  }

  /// Where a stage is in its order: run `run`, instruction `at` of its
  /// chunk.
  struct Cursor {
    size_t run = 0;
    int at = 0;
  };

  static void count(const Instruction &instruction,
                    std::map<std::pair<int, int>, int64_t> &inFlight) {
    std::pair<int, int> ends = {instruction.sourceStage,
                                instruction.targetStage};
    if (isSendHalf(instruction))
      ++inFlight[ends];
    else if (isReceiveHalf(instruction) && inFlight[ends] > 0)
      --inFlight[ends];
  }

  // Every stage not done waits for a message no stage will send.
  [[noreturn]] void deadlock(const std::vector<Cursor> &cursors) {
    std::string text;
    for (size_t stage = 0; stage < cursors.size(); ++stage) {
      const Cursor &cursor = cursors[stage];
      if (cursor.run >= record.order[stage].size())
        continue;
      auto [chunk, micro] = record.order[stage][cursor.run];
      int index = record.chunks[chunk].first + cursor.at;
      text += std::string(text.empty() ? "" : "; ") + "stage " +
              std::to_string(stage) + " waits in chunk " +
              std::to_string(chunk) + " of micro-batch " +
              std::to_string(micro) + " (the receive half instructions[" +
              std::to_string(index) + "]) for a send from stage " +
              std::to_string(file[index].sourceStage);
    }
    throw RuntimeError(plan.source +
                       ": pipeline.loop.order: no stage can go on: " + text);
  }

  Plan &plan;
  const PlanLoop &record;
  const LoopTemplate &loop;
  const std::vector<LoopSlots> &slots;
  int microBatches;
  int fileBuffers, fileValues;
  std::vector<Instruction> file;
  /// The buffers and values of the loop, and each one's index among them.
  std::vector<int> loopBuffers, loopValues, bufferRank, valueRank;
  /// New bucket and transfer ids by (file id, micro-batch or -1).
  std::map<std::pair<int, int>, int> buckets, transfers;
  LoopExpansion expansion;
};

} // namespace

LoopExpansion expandLoop(Plan &plan, const LoopTemplate &loop,
                         const std::vector<LoopSlots> &slots) {
  return Unroller(plan, loop, slots).unroll();
}

} // namespace zerosbp::runtime
