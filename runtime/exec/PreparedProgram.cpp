//===- PreparedProgram.cpp - a plan's instructions against an arena -------===//

#include "runtime/exec/PreparedProgram.h"

#include <set>

namespace zerosbp::runtime {

namespace {

bool isOptimizerUpdate(const std::string &op) {
  return op == "nn.sgd" || op == "nn.adam" || op == "nn.adamw";
}

} // namespace

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Optimizer:
    return "optimizer";
  }
  return "forward";
}

TensorRef arenaTensor(const Plan &plan, unsigned char *arena, int id) {
  const PlanValue &value = plan.values[id];
  TensorRef ref;
  ref.data = arena + plan.buffers[value.buffer].offset + value.offset;
  ref.dtype = value.dtype;
  ref.shape = value.shape;
  return ref;
}

std::vector<PreparedInstruction> prepareInstructions(const Plan &plan,
                                                     unsigned char *arena) {
  std::vector<PreparedInstruction> prepared(plan.instructions.size());
  Phase phase = Phase::Forward;
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    const Instruction &instruction = plan.instructions[i];
    PreparedInstruction &entry = prepared[i];
    if (instruction.kind == InstructionKind::Kernel) {
      if (instruction.op == "nn.fill" && instruction.attrs.flag("loss_seed"))
        phase = Phase::Backward;
      if (isOptimizerUpdate(instruction.op))
        phase = Phase::Optimizer;
    }
    entry.phase = phase;
    for (int id : instruction.operands)
      entry.operands.push_back(arenaTensor(plan, arena, id));
    for (int id : instruction.results) {
      entry.results.push_back(arenaTensor(plan, arena, id));
      entry.writtenBuffers.push_back(plan.values[id].buffer);
    }
    if (instruction.kind == InstructionKind::Copy)
      entry.writtenBuffers.push_back(
          plan.values[plan.variables[instruction.variableIndex].value].buffer);
    if (instruction.staging) {
      entry.staging = arena + plan.buffers[*instruction.staging].offset;
      entry.writtenBuffers.push_back(*instruction.staging);
    }
  }
  return prepared;
}

std::vector<CommGroup *> createAxisGroups(const Plan &plan, int rank,
                                          Communicator &comm) {
  std::set<int> axes;
  for (const Instruction &instruction : plan.instructions)
    if (instruction.kind == InstructionKind::CollectiveStart)
      axes.insert(instruction.groupAxis);
  std::vector<CommGroup *> groups(plan.hierarchy.size(), nullptr);
  for (int axis : axes)
    groups[axis] = &comm.createGroup(plan.groupOf(rank, axis));
  return groups;
}

} // namespace zerosbp::runtime
