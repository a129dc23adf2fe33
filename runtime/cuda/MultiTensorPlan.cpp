//===- MultiTensorPlan.cpp - the CUDA executor's multi-tensor launches ----===//

#include "runtime/cuda/MultiTensorPlan.h"

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/MultiTensor.h"

#include <utility>

namespace zerosbp::runtime {

bool movableInSegment(const Plan &plan,
                      const std::vector<PreparedInstruction> &prepared,
                      size_t index, bool checkGradients) {
  const Instruction &instruction = plan.instructions[index];
  const PreparedInstruction &entry = prepared[index];
  if (entry.phase != Phase::Optimizer)
    return false;
  switch (instruction.kind) {
  case InstructionKind::Kernel:
    // An offloaded update runs as a host function.
    return instruction.memory != MemoryKind::Host &&
           findCudaKernel(instruction.op) &&
           !gpu::checksDeviceData(instruction.op) &&
           !(checkGradients && !entry.updatedParameter.empty());
  case InstructionKind::AllSlice:
  case InstructionKind::ToPartial:
  case InstructionKind::Copy:
    return true;
  default:
    // Collectives and transfers record and wait for events.
    return false;
  }
}

std::vector<MultiTensorSegment>
planMultiTensorSegments(const Plan &plan,
                        const std::vector<unsigned char *> &addresses,
                        const std::vector<PreparedInstruction> &prepared,
                        const std::vector<AttrMap> &attrs, bool checkGradients,
                        const std::vector<char> &runs) {
  std::vector<MultiTensorSegment> segments;
  size_t count = plan.instructions.size();
  auto skipped = [&](size_t i) { return !runs.empty() && !runs[i]; };
  auto movable = [&](size_t i) {
    return movableInSegment(plan, prepared, i, checkGradients);
  };
  for (size_t begin = 0; begin < count;) {
    if (skipped(begin) || !movable(begin)) {
      ++begin;
      continue;
    }
    size_t end = begin + 1;
    while (end < count && (skipped(end) || movable(end)))
      ++end;
    std::vector<size_t> members; // The instructions the rank runs.
    for (size_t i = begin; i < end; ++i)
      if (!skipped(i))
        members.push_back(i);
    end = members.back() + 1;
    std::vector<gpu::SegmentNode> nodes;
    for (size_t i : members) {
      const Instruction &instruction = plan.instructions[i];
      const PreparedInstruction &entry = prepared[i];
      gpu::SegmentNode node;
      node.reads = gpu::byteRanges(entry.operands);
      if (instruction.kind == InstructionKind::Copy)
        node.writes = gpu::byteRanges({arenaTensor(
            plan, addresses, plan.variables[instruction.variableIndex].value)});
      else
        node.writes = gpu::byteRanges(entry.results);
      if (instruction.kind == InstructionKind::Kernel)
        node.key = gpu::multiTensorKey(instruction.op, attrs[i], entry.operands,
                                       entry.results);
      nodes.push_back(std::move(node));
    }
    MultiTensorSegment segment{begin, end, gpu::scheduleSegment(nodes)};
    // Where nothing merges, the plan's order stands.
    if (segment.launches.size() < nodes.size()) {
      for (std::vector<size_t> &launch : segment.launches)
        for (size_t &member : launch)
          member = members[member];
      segments.push_back(std::move(segment));
    }
    begin = end;
  }
  return segments;
}

} // namespace zerosbp::runtime
