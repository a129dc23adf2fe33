//===- RankExecutor.cpp - runs a plan on one rank -------------------------===//

#include "runtime/exec/RankExecutor.h"

#include "runtime/core/Error.h"
#include "runtime/exec/Collectives.h"
#include "runtime/exec/Distribution.h"
#include "runtime/exec/RankAttrs.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace zerosbp::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double millisSince(Clock::time_point begin) {
  return std::chrono::duration<double, std::milli>(Clock::now() - begin)
      .count();
}

} // namespace

RankExecutor::RankExecutor(const Plan &plan, int rank, Communicator &comm)
    : thePlan(plan), myRank(rank), myStage(plan.stageOf(rank)), comm(comm),
      tracker(plan, plan.stageOf(rank)) {
  // One allocation for the rank's device memory, and the offload arenas.
  allocateArena(plan.arenaBytes);
  allocateOffloadArenas();
  groupsByAxis = createAxisGroups(plan, rank, comm);
  attrs = rankAttrs(plan, rank);
  addresses = bufferAddresses(plan, bases);
  prepared = prepareInstructions(plan, addresses);
  runs = instructionsRunBy(plan, rank);
  kernels.assign(plan.instructions.size(), nullptr);
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    const Instruction &instruction = plan.instructions[i];
    if (instruction.kind != InstructionKind::Kernel || !runs[i])
      continue;
    kernels[i] = findCpuKernel(instruction.op);
    if (!kernels[i])
      throw RuntimeError(plan.source + ": instructions[" + std::to_string(i) +
                         "]: no CPU kernel for '" + instruction.op + "'");
  }
  stream = std::make_unique<CommStream>(plan.numBuckets);
  copyStream = std::make_unique<CommStream>(plan.numTransfers);
  deferred = planDeferredTransfers(plan, runs);
  unsettled.assign(plan.numTransfers, 0);
}

void RankExecutor::settleTransfers(std::optional<int> id) const {
  for (int transfer = 0; transfer < thePlan.numTransfers; ++transfer)
    if (unsettled[transfer] &&
        (!id || deferred.touches(transfer, valueRange(thePlan, *id)))) {
      copyStream->wait(transfer);
      unsettled[transfer] = 0;
    }
}

bool RankExecutor::setSkipNonfiniteSteps(bool on) {
  skipNonfinite = false;
  if (!on)
    return true;
  // Only the loss's stage reads the loss before the updates: the other
  // stages could not stop with it.
  if (thePlan.pipeline)
    return false;
  std::optional<LossCheckPoint> point = findLossCheckPoint(thePlan, prepared);
  if (!point)
    return false;
  lossCheck = *point;
  skipNonfinite = true;
  return true;
}

bool RankExecutor::lossNotFinite() {
  if (lossCheck.lossBucket >= 0)
    stream->wait(lossCheck.lossBucket); // Done at once if its wait came before.
  std::vector<double> loss = loadElements(tensor(thePlan.outputs[0]));
  return !loss.empty() && !std::isfinite(loss[0]);
}

void RankExecutor::allocateOffloadArenas() {
  bases.assign(thePlan.arenas.size(), nullptr);
  bases[0] = arena;
  for (size_t a = 1; a < thePlan.arenas.size(); ++a) {
    const PlanArena &planned = thePlan.arenas[a];
    // Errors reach the user prefixed with the rank.
    std::string label =
        std::string("the ") + memoryKindName(planned.memory) + " arena";
    if (planned.memory == MemoryKind::Nvme) {
      swap = std::make_unique<SwapFile>(planned.path, planned.bytes, label);
      continue;
    }
    // Host memory: on the CPU the same kind as the device arena, but a
    // separate allocation that the report measures apart.
    size_t bytes = (static_cast<size_t>(planned.bytes) + 63) / 64 * 64;
    hostArena = static_cast<unsigned char *>(
        std::aligned_alloc(64, bytes ? bytes : 64));
    if (!hostArena)
      throw RuntimeError("cannot allocate " + std::to_string(planned.bytes) +
                         " bytes for " + label);
    std::memset(hostArena, 0, bytes);
    bases[a] = hostArena;
  }
}

void RankExecutor::transfer(const Instruction &instruction,
                            const PreparedInstruction &entry) {
  int from = instruction.operands[0], to = instruction.results[0];
  int64_t bytes = thePlan.values[from].bytes();
  if (instruction.from == MemoryKind::Nvme)
    swap->read(thePlan.arenaOffset(from), entry.results[0].data, bytes);
  else if (instruction.to == MemoryKind::Nvme)
    swap->write(thePlan.arenaOffset(to), entry.operands[0].data, bytes);
  else
    std::memmove(entry.results[0].data, entry.operands[0].data, bytes);
}

void RankExecutor::allocateArena(int64_t arenaBytes) {
  size_t bytes = (static_cast<size_t>(arenaBytes) + 63) / 64 * 64;
  auto *memory =
      static_cast<unsigned char *>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (!memory)
    throw RuntimeError("rank " + std::to_string(myRank) + ": cannot allocate " +
                       std::to_string(arenaBytes) + " arena bytes");
  std::memset(memory, 0, bytes);
  std::free(arena);
  arena = memory;
}

void RankExecutor::shareVariables(const std::vector<void *> &storage) {
  settleTransfers();
  int64_t prefix = variablePrefixBytes(thePlan);
  allocateArena(thePlan.arenaBytes - prefix);
  bases[0] = arena;
  addresses = bufferAddresses(thePlan, bases, prefix, storage);
  prepared = prepareInstructions(thePlan, addresses);
  tracker.shareVariables(prefix);
}

void *RankExecutor::variableStorage(int index) {
  checkHoldsVariable(thePlan, myRank, index);
  // Another executor reads these bytes from now on, without waiting.
  settleTransfers();
  variablesShared = true;
  if (thePlan.variableInNvme(index))
    throw RuntimeError("variable '" + thePlan.variables[index].name +
                       "' lives in the NVMe arena and has no memory to share");
  return tensor(thePlan.variables[index].value).data;
}

std::vector<double> RankExecutor::outputValue(int index) const {
  int id = thePlan.outputs[index];
  // Another stage's output: its bytes here are this stage's buffers.
  if (!thePlan.valueOnStage(id, myStage))
    return std::vector<double>(thePlan.values[id].numel(), 0.0);
  settleTransfers(id);
  return loadElements(tensor(id));
}

RankExecutor::~RankExecutor() {
  stream.reset();
  copyStream.reset();
  std::free(arena);
  std::free(hostArena);
}

TensorRef RankExecutor::tensor(int id) const {
  return arenaTensor(thePlan, addresses, id);
}

void RankExecutor::writeVariable(int index, const std::vector<double> &values) {
  if (!thePlan.holds(thePlan.variables[index], myRank))
    return;
  settleTransfers(thePlan.variables[index].value);
  TensorRef target = tensor(thePlan.variables[index].value);
  if (!thePlan.variableInNvme(index)) {
    storeElements(target, values);
    return;
  }
  // Through a staging copy of the variable, written to the file whole.
  std::vector<unsigned char> staged(target.bytes());
  target.data = staged.data();
  storeElements(target, values);
  swap->write(thePlan.arenaOffset(thePlan.variables[index].value),
              staged.data(), static_cast<int64_t>(staged.size()));
}

void RankExecutor::writeInput(int index, const std::vector<double> &values) {
  if (!thePlan.holds(thePlan.inputs[index], myRank))
    return;
  settleTransfers(thePlan.inputs[index].value);
  storeElements(tensor(thePlan.inputs[index].value), values);
}

std::vector<double> RankExecutor::variableShard(int index) const {
  checkHoldsVariable(thePlan, myRank, index);
  settleTransfers(thePlan.variables[index].value);
  TensorRef source = tensor(thePlan.variables[index].value);
  if (!thePlan.variableInNvme(index))
    return loadElements(source);
  std::vector<unsigned char> staged(source.bytes());
  swap->read(thePlan.arenaOffset(thePlan.variables[index].value), staged.data(),
             static_cast<int64_t>(staged.size()));
  source.data = staged.data();
  return loadElements(source);
}

void RankExecutor::readVariableBytes(int index, int64_t offset, void *out,
                                     int64_t bytes) const {
  checkHoldsVariable(thePlan, myRank, index);
  int id = thePlan.variables[index].value;
  settleTransfers(id);
  if (thePlan.variableInNvme(index)) {
    swap->read(thePlan.arenaOffset(id) + offset, out, bytes);
    return;
  }
  const auto *data = static_cast<const unsigned char *>(tensor(id).data);
  std::memcpy(out, data + offset, bytes);
}

void RankExecutor::writeVariableBytes(int index, int64_t offset,
                                      const void *data, int64_t bytes) {
  if (!thePlan.holds(thePlan.variables[index], myRank))
    return;
  int id = thePlan.variables[index].value;
  settleTransfers(id);
  if (thePlan.variableInNvme(index)) {
    swap->write(thePlan.arenaOffset(id) + offset, data, bytes);
    return;
  }
  auto *target = static_cast<unsigned char *>(tensor(id).data);
  std::memcpy(target + offset, data, bytes);
}

void RankExecutor::execute(size_t index) {
  const Instruction &instruction = thePlan.instructions[index];
  PreparedInstruction &entry = prepared[index];
  switch (instruction.kind) {
  case InstructionKind::Kernel:
    kernels[index](attrs[index], entry.operands, entry.results);
    break;
  case InstructionKind::ToPartial:
    runToPartial(instruction, thePlan, myRank, entry.operands[0],
                 entry.results[0]);
    break;
  case InstructionKind::AllSlice:
    runAllSlice(instruction, thePlan, myRank, entry.operands[0],
                entry.results[0]);
    break;
  case InstructionKind::CollectiveStart: {
    const PreparedInstruction *work = &entry;
    CommGroup *group = groupsByAxis[instruction.groupAxis];
    Communicator *communicator = &comm;
    stream->start(
        instruction.bucket,
        [&instruction, work, group, communicator] {
          runCollective(instruction, work->operands, work->results,
                        work->staging, *group, *communicator);
        },
        collectiveKindName(instruction.collective));
    break;
  }
  case InstructionKind::CollectiveWait:
    stream->wait(instruction.bucket);
    break;
  case InstructionKind::TransferStart: {
    const PreparedInstruction *work = &entry;
    copyStream->start(
        instruction.transfer,
        [this, &instruction, work] { transfer(instruction, *work); },
        "transfer");
    break;
  }
  case InstructionKind::TransferWait:
    if (defersWait(index))
      unsettled[instruction.transfer] = 1;
    else
      copyStream->wait(instruction.transfer);
    break;
  case InstructionKind::Copy: {
    TensorRef target =
        tensor(thePlan.variables[instruction.variableIndex].value);
    std::memmove(target.data, entry.operands[0].data, target.bytes());
    break;
  }
  }
}

double RankExecutor::runStep(int64_t stepNumber) {
  for (int id : thePlan.steps)
    if (thePlan.valueOnStage(id, myStage))
      *tensor(id).as<int64_t>() = stepNumber;
  times = StepTimes();
  // The copy stream keeps what it has done: an earlier step's deferred
  // transfers are waited for by this one.
  stream->reset();
  stream->takeBusyNanos();
  copyStream->takeBusyNanos();
  tracker.beginStep();
  Clock::time_point stepBegin = Clock::now();
  if (tracing) {
    trace.clear();
    stream->beginTrace(stepBegin);
  }
  auto micros = [&](Clock::time_point at) {
    return std::chrono::duration<double, std::micro>(at - stepBegin).count();
  };
  std::vector<int> buckets, transfers; // Started this step.
  for (size_t i = 0; i < thePlan.instructions.size(); ++i) {
    // Another pipeline stage's: no kernel, collective, memory or trace.
    if (!runs[i])
      continue;
    const Instruction &instruction = thePlan.instructions[i];
    PreparedInstruction &entry = prepared[i];
    for (int transfer : deferred.settleBefore[i]) {
      if (!unsettled[transfer])
        continue;
      // An earlier step's transfer whose bytes this instruction is the
      // first to touch.
      Clock::time_point begin = Clock::now();
      copyStream->wait(transfer);
      unsettled[transfer] = 0;
      Clock::time_point end = Clock::now();
      times.transferWait +=
          std::chrono::duration<double, std::milli>(end - begin).count();
      if (tracing)
        trace.push_back({TraceStream::Compute, "transfer_wait", "wait", -1,
                         micros(begin), micros(end)});
    }
    if (skipNonfinite && i == lossCheck.firstUpdate && lossNotFinite()) {
      // Nothing in flight may write after the step; the peers started the
      // same collectives, and stop here too.
      for (int bucket : buckets)
        stream->wait(bucket);
      for (int index : transfers)
        copyStream->wait(index);
      break;
    }
    if (instruction.kind == InstructionKind::CollectiveStart)
      buckets.push_back(instruction.bucket);
    else if (instruction.kind == InstructionKind::TransferStart)
      transfers.push_back(instruction.transfer);
    // Before the update writes what a non-finite gradient would spoil.
    if (checkGradients && !entry.updatedParameter.empty())
      checkGradientFinite(entry, loadElements(entry.operands[1]), stepNumber);
    for (int buffer : entry.writtenBuffers)
      tracker.markLive(buffer);
    tracker.sample();
    Clock::time_point begin = Clock::now();
    try {
      execute(i);
    } catch (const RuntimeError &error) {
      if (instruction.kind == InstructionKind::CollectiveWait)
        throw; // A peer's failure: its message says enough.
      throw RuntimeError("instructions[" + std::to_string(i) + "] (" +
                         instruction.op + "): " + error.what());
    }
    Clock::time_point end = Clock::now();
    double elapsed =
        std::chrono::duration<double, std::milli>(end - begin).count();
    const char *category = "optimizer";
    if (instruction.kind == InstructionKind::CollectiveWait) {
      times.commWait += elapsed;
      category = "wait";
    } else if (instruction.kind == InstructionKind::TransferWait) {
      times.transferWait += elapsed;
      category = "wait";
    } else if (instruction.kind == InstructionKind::TransferStart) {
      category = "wait";
    } else if (entry.phase == Phase::Forward) {
      times.forward += elapsed;
      category = "forward";
    } else if (entry.phase == Phase::Backward) {
      times.backward += elapsed;
      category = "backward";
    } else {
      times.optimizer += elapsed;
    }
    // The calling thread runs them: nothing hides them.
    if (instruction.kind == InstructionKind::Kernel &&
        instruction.memory == MemoryKind::Host) {
      times.hostUpdate += elapsed;
      times.hostExposed += elapsed;
    }
    // Starts take no compute time; their collective shows on the comm
    // stream. A deferred wait shows where the next step waits.
    if (tracing && instruction.kind != InstructionKind::CollectiveStart &&
        instruction.kind != InstructionKind::TransferStart && !defersWait(i))
      trace.push_back({TraceStream::Compute, instruction.op, category,
                       instruction.kind == InstructionKind::CollectiveWait
                           ? instruction.bucket
                           : -1,
                       micros(begin), micros(end)});
    for (int buffer : instruction.free)
      tracker.markDead(buffer);
  }
  // A send half returns before its peer receives; nothing of this step may
  // be in flight once it ends (a checkpoint, the next step's buffers).
  Clock::time_point drainBegin = Clock::now();
  comm.completeSends();
  times.commWait += millisSince(drainBegin);
  times.step = millisSince(stepBegin);
  times.commBusy = stream->takeBusyNanos() / 1e6;
  times.transferBusy = copyStream->takeBusyNanos() / 1e6;
  if (tracing) {
    StepTrace comm = stream->endTrace();
    trace.insert(trace.end(), comm.begin(), comm.end());
  }
  if (thePlan.outputs.empty())
    return 0;
  std::vector<double> loss = outputValue(0);
  return loss.empty() ? 0 : loss[0];
}

} // namespace zerosbp::runtime
