//===- DeferredTransfers.cpp - transfer waits left to the next step -------===//

#include "runtime/plan/DeferredTransfers.h"

#include <algorithm>

namespace zerosbp::runtime {

ArenaRange valueRange(const Plan &plan, int id) {
  int index = plan.values[id].buffer;
  // A plan built by hand without buffers (a cost model's test): no bytes.
  if (index < 0 || index >= static_cast<int>(plan.buffers.size()))
    return {-1, 0, 0};
  const PlanBuffer &buffer = plan.buffers[index];
  int64_t begin = plan.arenaOffset(id);
  return {buffer.arena, begin, begin + plan.values[id].bytes()};
}

namespace {
/// The arena bytes instruction `instruction` reads or writes.
std::vector<ArenaRange> touchedRanges(const Plan &plan,
                                      const Instruction &instruction) {
  std::vector<ArenaRange> ranges;
  for (int id : instruction.operands)
    ranges.push_back(valueRange(plan, id));
  for (int id : instruction.results)
    ranges.push_back(valueRange(plan, id));
  if (instruction.staging) {
    const PlanBuffer &staging = plan.buffers[*instruction.staging];
    ranges.push_back(
        {staging.arena, staging.offset, staging.offset + staging.bytes});
  }
  if (instruction.kind == InstructionKind::Copy)
    ranges.push_back(
        valueRange(plan, plan.variables[instruction.variableIndex].value));
  return ranges;
}
} // namespace

bool DeferredTransfers::any() const {
  return std::any_of(deferred.begin(), deferred.end(),
                     [](char d) { return d != 0; });
}

bool DeferredTransfers::touches(int transfer, const ArenaRange &range) const {
  return source[transfer].overlaps(range) || target[transfer].overlaps(range);
}

DeferredTransfers planDeferredTransfers(const Plan &plan,
                                        const std::vector<char> &runs) {
  size_t count = plan.instructions.size();
  DeferredTransfers result;
  // numTransfers, but for a plan built by hand that leaves it 0.
  int transfers = plan.numTransfers;
  for (const Instruction &instruction : plan.instructions)
    if (instruction.kind == InstructionKind::TransferStart ||
        instruction.kind == InstructionKind::TransferWait)
      transfers = std::max(transfers, instruction.transfer + 1);
  result.source.resize(transfers);
  result.target.resize(transfers);
  std::vector<std::vector<ArenaRange>> touched(count);
  for (size_t i = 0; i < count; ++i) {
    const Instruction &instruction = plan.instructions[i];
    if (!runs[i])
      continue;
    if (instruction.kind != InstructionKind::TransferStart) {
      touched[i] = touchedRanges(plan, instruction);
      continue;
    }
    // Transfers run in start order on the copy stream: a later one comes
    // after a deferred one whatever bytes they share.
    result.source[instruction.transfer] =
        valueRange(plan, instruction.operands[0]);
    result.target[instruction.transfer] =
        valueRange(plan, instruction.results[0]);
  }
  auto touches = [&](size_t i, int transfer) {
    return std::any_of(touched[i].begin(), touched[i].end(),
                       [&](const ArenaRange &range) {
                         return result.touches(transfer, range);
                       });
  };
  result.deferred.assign(count, 0);
  result.settleBefore.assign(count, {});
  for (size_t i = 0; i < count; ++i) {
    const Instruction &instruction = plan.instructions[i];
    if (!runs[i] || instruction.kind != InstructionKind::TransferWait)
      continue;
    int transfer = instruction.transfer;
    bool touchedLater = false;
    for (size_t k = i + 1; k < count && !touchedLater; ++k)
      touchedLater = runs[k] && touches(k, transfer);
    if (touchedLater)
      continue;
    // The next step's first instruction to touch its bytes waits for it;
    // with none, nothing would, and copies could pile up: it stays.
    for (size_t k = 0; k < count; ++k)
      if (runs[k] && touches(k, transfer)) {
        result.settleBefore[k].push_back(transfer);
        result.deferred[i] = 1;
        break;
      }
  }
  return result;
}

} // namespace zerosbp::runtime
