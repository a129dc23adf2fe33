//===- PlanLiveness.cpp - live ranges and frees of an unrolled program ----===//
//
// An unrolled loop's buffers are live where its program uses them, which
// the file could not say: a copy of a buffer per micro-batch, a running
// total over every invocation. The rules are the compiler's
// (docs/plan-format.md#buffers), in positions of the program.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoop.h"

#include <algorithm>
#include <limits>

namespace zerosbp::runtime {

void recomputeLiveness(Plan &plan) {
  size_t count = plan.buffers.size();
  int64_t end = static_cast<int64_t>(plan.instructions.size()) + 1;
  std::vector<int64_t> first(count, std::numeric_limits<int64_t>::max());
  std::vector<int64_t> last(count, -1);
  // A collective or transfer writes its results from its start and reads
  // its operands until its wait.
  std::vector<int64_t> bucketWait(plan.numBuckets, 0);
  std::vector<int64_t> transferWait(plan.numTransfers, 0);
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    const Instruction &instruction = plan.instructions[i];
    if (instruction.kind == InstructionKind::CollectiveWait)
      bucketWait[instruction.bucket] = static_cast<int64_t>(i) + 1;
    else if (instruction.kind == InstructionKind::TransferWait)
      transferWait[instruction.transfer] = static_cast<int64_t>(i) + 1;
  }
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    const Instruction &instruction = plan.instructions[i];
    int64_t from = static_cast<int64_t>(i) + 1, to = from;
    if (instruction.kind == InstructionKind::CollectiveStart)
      to = bucketWait[instruction.bucket];
    else if (instruction.kind == InstructionKind::TransferStart)
      to = transferWait[instruction.transfer];
    // Only the ranks that use a buffer count: a send half names its result
    // on the target stage, which its ranks do not touch.
    auto touch = [&](int buffer) {
      int stage = plan.buffers[buffer].stage;
      if (stage >= 0 && !plan.runsOn(instruction, stage))
        return;
      first[buffer] = std::min(first[buffer], from);
      last[buffer] = std::max(last[buffer], to);
    };
    for (int id : instruction.operands)
      touch(plan.values[id].buffer);
    for (int id : instruction.results)
      touch(plan.values[id].buffer);
    if (instruction.staging)
      touch(*instruction.staging);
  }
  // The runtime writes the inputs and steps before the first instruction;
  // variables persist, and the outputs are read after the last.
  std::vector<bool> persistent(count, false);
  for (const PlanVariable &variable : plan.variables) {
    int buffer = plan.values[variable.value].buffer;
    first[buffer] = 0;
    persistent[buffer] = true;
  }
  for (const PlanInput &input : plan.inputs)
    first[plan.values[input.value].buffer] = 0;
  for (int step : plan.steps)
    first[plan.values[step].buffer] = 0;
  for (int output : plan.outputs)
    persistent[plan.values[output].buffer] = true;
  for (Instruction &instruction : plan.instructions)
    instruction.free.clear();
  for (size_t b = 0; b < count; ++b) {
    PlanBuffer &buffer = plan.buffers[b];
    if (persistent[b])
      last[b] = end;
    // Nothing uses it: live at position 0 alone, before any instruction.
    if (last[b] < 0)
      first[b] = last[b] = 0;
    first[b] = std::min(first[b], last[b]);
    buffer.liveFirst = first[b];
    buffer.liveLast = last[b];
    if (!persistent[b] && last[b] > 0)
      plan.instructions[last[b] - 1].free.push_back(static_cast<int>(b));
  }
}

} // namespace zerosbp::runtime
