//===- Simulator.cpp - replaying a plan on three streams ------------------===//

#include "runtime/sim/Simulator.h"

#include "runtime/core/Error.h"
#include "runtime/plan/DeferredTransfers.h"

#include <algorithm>
#include <deque>
#include <map>
#include <utility>

namespace zerosbp::runtime::sim {
namespace {

// The part of the device one rank computes with: a GPU is its rank's alone;
// a node's ranks share a CPU's cores, a rank's matmuls running on up to
// `threads` of them (BLAS) and its other kernels on one.
struct Shares {
  double matmul = 1;
  double vector = 1;
};
Shares computeShares(const DeviceModel &device, const Topology &topology,
                     const SimOptions &options) {
  if (device.cores == 0)
    return {};
  double perRank = static_cast<double>(device.cores) /
                   static_cast<double>(topology.ranksPerNode);
  return {std::min(static_cast<double>(options.threads), perRank),
          std::min(1.0, perRank)};
}

double transferSeconds(const Plan &plan, const Instruction &instruction,
                       const Topology &topology) {
  double bytes =
      static_cast<double>(plan.values[instruction.operands[0]].bytes());
  bool touchesNvme = instruction.from == MemoryKind::Nvme ||
                     instruction.to == MemoryKind::Nvme;
  bool touchesDevice = instruction.from == MemoryKind::Device ||
                       instruction.to == MemoryKind::Device;
  double seconds = 0;
  if (touchesNvme) {
    if (topology.nvmeBandwidth <= 0)
      throw RuntimeError("the plan moves data to and from NVMe: --topology "
                         "needs nvme= (e.g. nvme=6GB/s)");
    seconds = std::max(seconds, bytes / topology.nvmeBandwidth);
  }
  if (touchesDevice) {
    if (topology.hostBandwidth <= 0)
      throw RuntimeError("the plan moves data between device and host "
                         "memory: --topology needs pcie= (e.g. pcie=25GB/s)");
    seconds = std::max(seconds, bytes / topology.hostBandwidth);
  }
  return seconds;
}

/// A rank's streams: the compute stream's clock (now) and when the
/// communication, copy and host streams finish what they hold.
struct StreamClocks {
  double now = 0, commFree = 0, copyFree = 0, hostFree = 0;
  std::map<int, double> collectiveDone, transferDone;
  double end() const { return std::max({now, commFree, copyFree, hostFree}); }
  /// Where the host sees the step end when transfers are left unwaited:
  /// every stream but the copy stream is done.
  double hostEnd() const { return std::max({now, commFree, hostFree}); }
  /// The same clocks with `origin` as time 0.
  void rebase(double origin) {
    for (double *clock : {&now, &commFree, &copyFree, &hostFree})
      *clock -= origin;
    for (auto *done : {&collectiveDone, &transferDone})
      for (auto &[id, at] : *done)
        at -= origin;
  }
};

/// The step, instruction by instruction, on one rank of every pipeline
/// stage (the one rank without stages): each stage's streams, and what the
/// report sums, which is rank 0's (stage 0's).
class Replay {
public:
  Replay(const Plan &plan, const Topology &topology, const DeviceModel &device,
         const SimOptions &options)
      : plan(plan), topology(topology), device(device),
        shares(computeShares(device, topology, options)),
        // On CPU cores the ranks' kernels already fill, a collective's
        // copies and reductions take their time from the kernels.
        coresFull(
            device.collectivesUseCores &&
            static_cast<double>(options.threads * topology.ranksPerNode) >=
                static_cast<double>(device.cores)),
        stages(plan.pipeline ? plan.pipeline->stages : 1), clocks(stages),
        deferred(stages), unsettled(stages) {
    sim.share = shares.matmul;
    sim.bytesSentByAxis.assign(std::max<size_t>(plan.hierarchy.size(), 1), 0);
    sim.secondsByAxis.assign(sim.bytesSentByAxis.size(), 0);
    for (size_t axis = 0; axis < plan.hierarchy.size(); ++axis)
      sim.axisGroups.push_back(
          groupLayout(plan, static_cast<int>(axis), topology));
    if (plan.hierarchy.empty())
      sim.axisGroups.emplace_back();
    bool defers = false;
    for (int stage = 0; stage < stages && options.deferTransferWaits; ++stage) {
      std::vector<char> runs(plan.instructions.size());
      for (size_t i = 0; i < runs.size(); ++i)
        runs[i] = plan.runsOn(plan.instructions[i], stage);
      deferred[stage] = planDeferredTransfers(plan, runs);
      unsettled[stage].assign(deferred[stage].source.size(), 0);
      defers = defers || deferred[stage].any();
    }
    if (!defers)
      deferred.clear();
  }

  Simulation run() {
    if (deferred.empty()) {
      replayStep();
      // Work still in flight at the end of the program ends the step too.
      for (const StreamClocks &rank : clocks)
        sim.stageSeconds.push_back(rank.end());
      return finish();
    }
    // The first step leaves its last copies in flight; the second starts
    // where the host saw the first end and waits for them.
    Simulation fresh = sim;
    replayStep();
    for (StreamClocks &rank : clocks)
      rank.rebase(rank.hostEnd());
    sim = std::move(fresh);
    replayStep();
    for (const StreamClocks &rank : clocks)
      sim.stageSeconds.push_back(rank.hostEnd());
    return finish();
  }

private:
  void replayStep() {
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      const Instruction &instruction = plan.instructions[i];
      if (instruction.kind == InstructionKind::CollectiveStart &&
          instruction.collective == CollectiveKind::SendRecv) {
        sendRecv(instruction);
        continue;
      }
      for (int stage = 0; stage < stages; ++stage)
        if (plan.runsOn(instruction, stage)) {
          settleBefore(i, stage);
          replay(instruction, i, stage);
        }
    }
  }

  /// The compute stream of `stage` waits for an earlier step's transfers
  /// whose bytes instruction `index` is the first to touch.
  void settleBefore(size_t index, int stage) {
    if (deferred.empty())
      return;
    for (int transfer : deferred[stage].settleBefore[index])
      if (unsettled[stage][transfer]) {
        waitFor(clocks[stage], clocks[stage].transferDone, transfer,
                stage == 0 ? &sim.transferExposedSeconds : nullptr);
        unsettled[stage][transfer] = 0;
      }
  }

  Simulation finish() {
    sim.stepSeconds =
        *std::max_element(sim.stageSeconds.begin(), sim.stageSeconds.end());
    for (const PlanArena &arena : plan.arenas) {
      if (arena.memory == MemoryKind::Device)
        sim.deviceBytes += arena.bytes;
      else if (arena.memory == MemoryKind::Host)
        sim.hostBytes += arena.bytes;
      else
        sim.nvmeBytes += arena.bytes;
    }
    sim.fits = device.memoryBytes == 0 || sim.deviceBytes <= device.memoryBytes;
    return sim;
  }

  /// Instruction `instruction` (number `index`) on the rank of `stage`;
  /// only stage 0's counts in the report.
  void replay(const Instruction &instruction, size_t index, int stage) {
    StreamClocks &rank = clocks[stage];
    bool counted = stage == 0;
    switch (instruction.kind) {
    case InstructionKind::Kernel:
    case InstructionKind::AllSlice:
    case InstructionKind::ToPartial:
    case InstructionKind::Copy:
      compute(instruction, rank, counted);
      break;
    case InstructionKind::CollectiveStart:
      startCollective(instruction, rank, counted);
      break;
    case InstructionKind::CollectiveWait:
      waitFor(rank, rank.collectiveDone, instruction.bucket,
              counted ? &sim.commExposedSeconds : nullptr);
      break;
    case InstructionKind::TransferStart:
      startTransfer(instruction, rank, counted);
      break;
    case InstructionKind::TransferWait:
      if (!deferred.empty() && deferred[stage].deferred[index]) {
        unsettled[stage][instruction.transfer] = 1;
        break;
      }
      waitFor(rank, rank.transferDone, instruction.transfer,
              counted ? &sim.transferExposedSeconds : nullptr);
      break;
    }
  }

  void compute(const Instruction &instruction, StreamClocks &rank,
               bool counted) {
    KernelWork work = instructionWork(plan, instruction);
    bool host = instruction.memory == MemoryKind::Host;
    double seconds = kernelSeconds(
        work, device, work.matmul ? shares.matmul : shares.vector, host);
    if (host && device.cores == 0) {
      // A GPU's rank runs offloaded updates on its host stream, in order,
      // once the copies started before them are done (their operands);
      // the compute stream goes on (docs/runtime.md#offload).
      rank.hostFree = std::max(rank.hostFree, rank.copyFree) + seconds;
      if (counted)
        sim.hostBusySeconds += seconds;
    } else {
      rank.now += seconds;
      if (counted)
        sim.computeSeconds += seconds;
    }
    if (!counted)
      return;
    OpSummary &op =
        sim.ops[instruction.kind == InstructionKind::Copy ? std::string("copy")
                                                          : instruction.op];
    ++op.count;
    op.seconds += seconds;
    op.flops += work.flops;
    op.bytes += work.bytes;
    sim.flops += work.flops;
    if (work.matmul)
      sim.matmulFlops += work.flops;
  }

  const GroupLayout &groupOf(const Instruction &instruction) {
    int axis = instruction.groupAxis;
    std::string what =
        "collective_start of bucket " + std::to_string(instruction.bucket);
    if (axis < 0 || axis >= static_cast<int>(sim.axisGroups.size()))
      throw RuntimeError(what + ": group_axis " + std::to_string(axis) +
                         " is not an axis of the plan's hierarchy");
    if (instruction.operands.empty() || instruction.results.empty())
      throw RuntimeError(what + " has no operands or results");
    return sim.axisGroups[axis];
  }

  /// Counts `seconds` of communication and the `sent` bytes of a rank of
  /// stage 0 on `axis`, `nodes` of a group of `size` apart.
  void countSent(CollectiveKind kind, int axis, int64_t sent, double seconds,
                 int64_t nodes, int64_t size) {
    sim.bytesSentByKind[static_cast<int>(kind)] += sent;
    sim.secondsByKind[static_cast<int>(kind)] += seconds;
    sim.bytesSentByAxis[axis] += sent;
    sim.secondsByAxis[axis] += seconds;
    if (nodes > 1)
      sim.networkBytes += static_cast<double>(sent) *
                          static_cast<double>(nodes) /
                          static_cast<double>(size);
    ++sim.collectives;
    sim.commBusySeconds += seconds;
  }

  void startCollective(const Instruction &instruction, StreamClocks &rank,
                       bool counted) {
    const GroupLayout &group = groupOf(instruction);
    int64_t fullBytes = collectiveFullBytes(plan, instruction);
    DType dtype = plan.values[instruction.operands[0]].dtype;
    // The packing copies run on the communication stream too, at the
    // device's memory bandwidth (read and write).
    double packBytes =
        static_cast<double>(collectivePackBytes(plan, instruction, group.size));
    double seconds =
        collectiveSeconds(instruction.collective, fullBytes, dtype, group,
                          topology, device.algorithm) +
        (packBytes > 0 ? 2 * packBytes / device.memoryRate(packBytes) : 0);
    if (counted)
      countSent(instruction.collective, instruction.groupAxis,
                collectiveBytesSent(instruction.collective, fullBytes, dtype,
                                    group.size),
                seconds, group.nodes, group.size);
    rank.commFree = std::max(rank.now, rank.commFree) + seconds;
    rank.collectiveDone[instruction.bucket] = rank.commFree;
    if (coresFull) {
      // Nothing overlaps: the compute stream pays for the collective.
      rank.now = std::max(rank.now, rank.commFree);
      if (counted)
        sim.commExposedSeconds += seconds;
    }
  }

  /// A send_recv (rank 0's pipeline group's link: the same for every
  /// group). Both halves at once: both ranks' communication streams carry
  /// the message from when both have started it. A send half: the sender's
  /// stream carries it from when the sender starts it, and the message
  /// arrives when that ends; the sender's compute stream goes on. A receive
  /// half: the receiver's stream takes the oldest message in flight between
  /// the two stages once it arrives (docs/scale.md#the-simulator).
  void sendRecv(const Instruction &instruction) {
    groupOf(instruction);
    std::vector<int> group = plan.groupOf(0, 0);
    int from = instruction.sourceStage, to = instruction.targetStage;
    bool apart = group[from] / topology.ranksPerNode !=
                 group[to] / topology.ranksPerNode;
    int64_t bytes = plan.values[instruction.operands[0]].bytes();
    double seconds =
        bytes == 0 ? 0
                   : (apart ? topology.interLatency : topology.intraLatency) +
                         static_cast<double>(bytes) /
                             (apart ? topology.interBandwidth
                                    : topology.intraBandwidth);
    StreamClocks &sender = clocks[from], &receiver = clocks[to];
    bool sends = plan.runsOn(instruction, from);
    bool receives = plan.runsOn(instruction, to);
    auto count = [&](int stage, int64_t sent) {
      if (stage != 0)
        return;
      countSent(CollectiveKind::SendRecv, 0, sent, seconds, apart ? 2 : 1, 2);
      if (coresFull)
        sim.commExposedSeconds += seconds;
    };
    std::deque<double> &arrivals = inFlight[{from, to}];
    if (sends && receives) {
      double begin = std::max(
          {sender.now, sender.commFree, receiver.now, receiver.commFree});
      double done = begin + seconds;
      for (StreamClocks *rank : {&sender, &receiver}) {
        rank->commFree = done;
        rank->collectiveDone[instruction.bucket] = done;
        if (coresFull)
          rank->now = std::max(rank->now, done);
      }
      count(from, bytes);
      count(to, 0);
      return;
    }
    if (sends) {
      double done = std::max(sender.now, sender.commFree) + seconds;
      sender.commFree = done;
      sender.collectiveDone[instruction.bucket] = done;
      if (coresFull)
        sender.now = std::max(sender.now, done);
      arrivals.push_back(done);
      count(from, bytes);
      return;
    }
    if (arrivals.empty())
      throw RuntimeError(
          "collective_start of bucket " + std::to_string(instruction.bucket) +
          ": the receive half of a send_recv from stage " +
          std::to_string(from) + " to stage " + std::to_string(to) +
          " comes before any send half between them");
    double done = std::max({receiver.now, receiver.commFree, arrivals.front()});
    arrivals.pop_front();
    receiver.commFree = done;
    receiver.collectiveDone[instruction.bucket] = done;
    // The receiver's cores copy nothing until the message is there; its
    // compute stream waits for it at the wait, not here.
    if (to == 0)
      countSent(CollectiveKind::SendRecv, 0, 0, seconds, apart ? 2 : 1, 2);
  }

  void startTransfer(const Instruction &instruction, StreamClocks &rank,
                     bool counted) {
    if (instruction.operands.empty())
      throw RuntimeError("transfer_start " +
                         std::to_string(instruction.transfer) +
                         " has no operand");
    double seconds = transferSeconds(plan, instruction, topology);
    // A copy out of host memory reads what the host stream writes.
    double ready = instruction.from == MemoryKind::Host
                       ? std::max(rank.now, rank.hostFree)
                       : rank.now;
    rank.copyFree = std::max(ready, rank.copyFree) + seconds;
    if (counted)
      sim.transferBusySeconds += seconds;
    rank.transferDone[instruction.transfer] = rank.copyFree;
  }

  /// The compute stream waits until work `id` of a stream is done; the
  /// time it waits is `exposed` (stage 0's) unless null.
  void waitFor(StreamClocks &rank, const std::map<int, double> &done, int id,
               double *exposed) {
    auto found = done.find(id);
    if (found != done.end() && found->second > rank.now) {
      if (exposed)
        *exposed += found->second - rank.now;
      rank.now = found->second;
    }
  }

  const Plan &plan;
  const Topology &topology;
  const DeviceModel &device;
  Shares shares;
  bool coresFull;
  int stages;
  std::vector<StreamClocks> clocks; // By stage.
  /// By stage: the transfer waits left to the next step, and by transfer
  /// whether one is unwaited; empty when none are (or not asked for).
  std::vector<DeferredTransfers> deferred;
  std::vector<std::vector<char>> unsettled;
  /// Per (source, target) stage: when each message sent by a send half and
  /// not yet received arrives, oldest first.
  std::map<std::pair<int, int>, std::deque<double>> inFlight;
  Simulation sim;
};

} // namespace

Simulation simulate(const Plan &plan, const Topology &topology,
                    const DeviceModel &device, const SimOptions &options) {
  if (topology.ranks() != plan.world)
    throw RuntimeError(
        "the plan runs on " + std::to_string(plan.world) +
        " ranks, the topology has " + std::to_string(topology.ranks()) +
        " (nodes x ranks_per_node); compile for the topology's ranks");
  return Replay(plan, topology, device, options).run();
}

} // namespace zerosbp::runtime::sim
