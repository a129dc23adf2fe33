//===- PreparedProgram.cpp - a plan's instructions against an arena -------===//

#include "runtime/exec/PreparedProgram.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace zerosbp::runtime {

namespace {

bool isOptimizerUpdate(const std::string &op) {
  return op == "nn.sgd" || op == "nn.adam" || op == "nn.adamw";
}

/// The parameter an update writes through its operand `value`: a
/// variable's value, or made from one by all_slice, a cast or a view (each
/// hop follows the last writer of the value's buffer before the update). A
/// master names the parameter it copies.
std::string updatedParameter(const Plan &plan,
                             const std::vector<int> &variableOfBuffer,
                             const std::vector<int> &lastWriter, int value) {
  int start = value;
  for (int hop = 0; hop < 4; ++hop) {
    int buffer = plan.values[value].buffer;
    if (variableOfBuffer[buffer] >= 0) {
      const PlanVariable &variable = plan.variables[variableOfBuffer[buffer]];
      return variable.copyOf ? *variable.copyOf : variable.name;
    }
    int writer = lastWriter[buffer];
    if (writer < 0 || plan.instructions[writer].operands.empty())
      break;
    value = plan.instructions[writer].operands[0];
  }
  return "value " + std::to_string(start);
}

} // namespace

HostUpdateWork hostUpdateWork(const Plan &plan, int rank) {
  HostUpdateWork work;
  int stage = plan.stageOf(rank);
  for (const Instruction &instruction : plan.instructions) {
    if (instruction.kind != InstructionKind::Kernel ||
        instruction.memory != MemoryKind::Host ||
        !plan.runsOn(instruction, stage))
      continue;
    ++work.kernels;
    for (int id : instruction.operands)
      work.bytes += plan.values[id].bytes();
    for (int id : instruction.results)
      work.bytes += plan.values[id].bytes();
    if (isOptimizerUpdate(instruction.op) && !instruction.operands.empty())
      work.params += plan.values[instruction.operands[0]].numel();
  }
  return work;
}

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

std::vector<unsigned char *>
bufferAddresses(const Plan &plan, const std::vector<unsigned char *> &bases,
                int64_t origin, const std::vector<void *> &variableStorage) {
  std::vector<unsigned char *> addresses(plan.buffers.size(), nullptr);
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const PlanBuffer &buffer = plan.buffers[b];
    unsigned char *base = bases[buffer.arena];
    if (base)
      addresses[b] = base + (buffer.offset - (buffer.arena == 0 ? origin : 0));
  }
  if (variableStorage.empty())
    return addresses;
  if (variableStorage.size() != plan.variables.size())
    throw RuntimeError(
        plan.source + ": " + std::to_string(variableStorage.size()) +
        " shared variables for " + std::to_string(plan.variables.size()));
  for (size_t v = 0; v < plan.variables.size(); ++v) {
    const PlanValue &value = plan.values[plan.variables[v].value];
    // Another pipeline stage's variable: no storage, never touched here.
    if (!variableStorage[v]) {
      addresses[value.buffer] = nullptr;
      continue;
    }
    // A variable's value starts its buffer (the reader checks the offset).
    addresses[value.buffer] =
        static_cast<unsigned char *>(variableStorage[v]) - value.offset;
  }
  return addresses;
}

int64_t variablePrefixBytes(const Plan &plan) {
  std::vector<char> isVariable(plan.buffers.size(), 0);
  int64_t prefix = 0;
  for (const PlanVariable &variable : plan.variables) {
    int buffer = plan.values[variable.value].buffer;
    if (plan.buffers[buffer].arena != 0)
      throw RuntimeError(plan.source + ": variable '" + variable.name +
                         "' is offloaded, so it cannot be shared");
    isVariable[buffer] = 1;
    prefix = std::max(prefix,
                      plan.buffers[buffer].offset + plan.buffers[buffer].bytes);
  }
  // Offsets are aligned to 64 bytes: the rest of the arena starts there.
  prefix = (prefix + 63) / 64 * 64;
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (!isVariable[b] && plan.buffers[b].arena == 0 &&
        plan.buffers[b].bytes > 0 && plan.buffers[b].offset < prefix)
      throw RuntimeError(plan.source + ": buffers[" + std::to_string(b) +
                         "] lies among the variables (offset " +
                         std::to_string(plan.buffers[b].offset) + " < " +
                         std::to_string(prefix) +
                         "), so they cannot be shared");
  return std::min(prefix, plan.arenaBytes);
}

TensorRef arenaTensor(const Plan &plan,
                      const std::vector<unsigned char *> &addresses, int id) {
  const PlanValue &value = plan.values[id];
  TensorRef ref;
  if (addresses[value.buffer])
    ref.data = addresses[value.buffer] + value.offset;
  ref.dtype = value.dtype;
  ref.shape = value.shape;
  return ref;
}

std::vector<PreparedInstruction>
prepareInstructions(const Plan &plan,
                    const std::vector<unsigned char *> &addresses) {
  std::vector<PreparedInstruction> prepared(plan.instructions.size());
  Phase phase = Phase::Forward;
  std::vector<int> variableOfBuffer(plan.buffers.size(), -1);
  for (size_t v = 0; v < plan.variables.size(); ++v)
    variableOfBuffer[plan.values[plan.variables[v].value].buffer] =
        static_cast<int>(v);
  std::vector<int> lastWriter(plan.buffers.size(), -1);
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    const Instruction &instruction = plan.instructions[i];
    PreparedInstruction &entry = prepared[i];
    if (instruction.kind == InstructionKind::Kernel) {
      if (instruction.op == "nn.fill" && instruction.attrs.flag("loss_seed"))
        phase = Phase::Backward;
      if (isOptimizerUpdate(instruction.op)) {
        if (instruction.memory != MemoryKind::Host)
          phase = Phase::Optimizer;
        if (instruction.operands.size() >= 2)
          entry.updatedParameter = updatedParameter(
              plan, variableOfBuffer, lastWriter, instruction.operands[0]);
      }
    }
    entry.phase = instruction.kind == InstructionKind::Kernel &&
                          isOptimizerUpdate(instruction.op)
                      ? Phase::Optimizer
                      : phase;
    for (int id : instruction.operands)
      entry.operands.push_back(arenaTensor(plan, addresses, id));
    for (int id : instruction.results) {
      entry.results.push_back(arenaTensor(plan, addresses, id));
      entry.writtenBuffers.push_back(plan.values[id].buffer);
    }
    if (instruction.kind == InstructionKind::Copy)
      entry.writtenBuffers.push_back(
          plan.values[plan.variables[instruction.variableIndex].value].buffer);
    if (instruction.staging) {
      entry.staging = addresses[*instruction.staging];
      entry.writtenBuffers.push_back(*instruction.staging);
    }
    for (int id : instruction.results)
      lastWriter[plan.values[id].buffer] = static_cast<int>(i);
  }
  return prepared;
}

void checkGradientFinite(const PreparedInstruction &entry,
                         const std::vector<double> &gradient,
                         int64_t stepNumber) {
  for (size_t i = 0; i < gradient.size(); ++i) {
    double value = gradient[i];
    if (std::isfinite(value))
      continue;
    throw RuntimeError("step " + std::to_string(stepNumber) +
                       ": the gradient of '" + entry.updatedParameter +
                       "' is not finite (element " + std::to_string(i) +
                       " of " + std::to_string(gradient.size()) +
                       " on this rank is " +
                       (std::isnan(value) ? "nan"
                        : value > 0       ? "inf"
                                          : "-inf") +
                       ")");
  }
}

std::optional<LossCheckPoint>
findLossCheckPoint(const Plan &plan,
                   const std::vector<PreparedInstruction> &prepared) {
  if (plan.outputs.empty())
    return std::nullopt;
  LossCheckPoint point;
  point.firstUpdate = prepared.size();
  for (size_t i = 0; i < prepared.size(); ++i)
    if (prepared[i].phase == Phase::Optimizer) {
      point.firstUpdate = i;
      break;
    }
  if (point.firstUpdate == prepared.size())
    return std::nullopt;
  int loss = plan.outputs[0];
  bool final = false;
  for (size_t i = 0; i < point.firstUpdate; ++i) {
    const Instruction &instruction = plan.instructions[i];
    for (int result : instruction.results)
      if (result == loss) {
        final = true;
        if (instruction.kind == InstructionKind::CollectiveStart)
          point.lossBucket = instruction.bucket;
      }
  }
  if (!final)
    return std::nullopt;
  return point;
}

std::vector<char> instructionsRunBy(const Plan &plan, int rank) {
  int stage = plan.stageOf(rank);
  std::vector<char> runs(plan.instructions.size(), 0);
  for (size_t i = 0; i < plan.instructions.size(); ++i)
    runs[i] = plan.runsOn(plan.instructions[i], stage) ? 1 : 0;
  return runs;
}

void checkHoldsVariable(const Plan &plan, int rank, int index) {
  const PlanVariable &variable = plan.variables[index];
  if (!plan.holds(variable, rank))
    throw RuntimeError("rank " + std::to_string(rank) + " (pipeline stage " +
                       std::to_string(plan.stageOf(rank)) +
                       ") does not hold variable '" + variable.name +
                       "' of stage " + std::to_string(variable.stage));
}

std::vector<CommGroup *> createAxisGroups(const Plan &plan, int rank,
                                          Communicator &comm) {
  std::set<int> axes;
  for (const Instruction &instruction : plan.instructions)
    if (instruction.kind == InstructionKind::CollectiveStart)
      axes.insert(instruction.groupAxis);
  std::vector<CommGroup *> groups(plan.hierarchy.size(), nullptr);
  for (int axis : axes) {
    groups[axis] = &comm.createGroup(plan.groupOf(rank, axis));
    groups[axis]->setAxis(axis);
  }
  return groups;
}

} // namespace zerosbp::runtime
