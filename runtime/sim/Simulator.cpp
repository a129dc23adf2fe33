//===- Simulator.cpp - replaying a plan on three streams ------------------===//

#include "runtime/sim/Simulator.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <map>

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

/// One rank's step, instruction by instruction: each stream's clock (the
/// compute stream's now; when the communication and copy streams finish
/// what they hold) and what the report sums.
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
                static_cast<double>(device.cores)) {
    sim.share = shares.matmul;
    sim.bytesSentByAxis.assign(std::max<size_t>(plan.hierarchy.size(), 1), 0);
    sim.secondsByAxis.assign(sim.bytesSentByAxis.size(), 0);
    for (size_t axis = 0; axis < plan.hierarchy.size(); ++axis)
      sim.axisGroups.push_back(
          groupLayout(plan, static_cast<int>(axis), topology));
    if (plan.hierarchy.empty())
      sim.axisGroups.emplace_back();
  }

  Simulation run() {
    for (const Instruction &instruction : plan.instructions) {
      switch (instruction.kind) {
      case InstructionKind::Kernel:
      case InstructionKind::AllSlice:
      case InstructionKind::ToPartial:
      case InstructionKind::Copy:
        compute(instruction);
        break;
      case InstructionKind::CollectiveStart:
        startCollective(instruction);
        break;
      case InstructionKind::CollectiveWait:
        waitFor(collectiveDone, instruction.bucket, sim.commExposedSeconds);
        break;
      case InstructionKind::TransferStart:
        startTransfer(instruction);
        break;
      case InstructionKind::TransferWait:
        waitFor(transferDone, instruction.transfer, sim.transferExposedSeconds);
        break;
      }
    }
    // Work still in flight at the end of the program ends the step too.
    sim.stepSeconds = std::max({now, commFree, copyFree});
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

private:
  void compute(const Instruction &instruction) {
    KernelWork work = instructionWork(plan, instruction);
    bool host = instruction.memory == MemoryKind::Host;
    double seconds = kernelSeconds(
        work, device, work.matmul ? shares.matmul : shares.vector, host);
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
    sim.computeSeconds += seconds;
    now += seconds;
  }

  void startCollective(const Instruction &instruction) {
    int axis = instruction.groupAxis;
    std::string what =
        "collective_start of bucket " + std::to_string(instruction.bucket);
    if (axis < 0 || axis >= static_cast<int>(sim.axisGroups.size()))
      throw RuntimeError(what + ": group_axis " + std::to_string(axis) +
                         " is not an axis of the plan's hierarchy");
    if (instruction.operands.empty() || instruction.results.empty())
      throw RuntimeError(what + " has no operands or results");
    const GroupLayout &group = sim.axisGroups[axis];
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

    int64_t sent = collectiveBytesSent(instruction.collective, fullBytes, dtype,
                                       group.size);
    int kind = static_cast<int>(instruction.collective);
    sim.bytesSentByKind[kind] += sent;
    sim.secondsByKind[kind] += seconds;
    sim.bytesSentByAxis[axis] += sent;
    sim.secondsByAxis[axis] += seconds;
    if (group.nodes > 1)
      sim.networkBytes += static_cast<double>(sent) *
                          static_cast<double>(group.nodes) /
                          static_cast<double>(group.size);
    ++sim.collectives;

    commFree = std::max(now, commFree) + seconds;
    sim.commBusySeconds += seconds;
    collectiveDone[instruction.bucket] = commFree;
    if (coresFull) {
      // Nothing overlaps: the compute stream pays for the collective.
      now = std::max(now, commFree);
      sim.commExposedSeconds += seconds;
    }
  }

  void startTransfer(const Instruction &instruction) {
    if (instruction.operands.empty())
      throw RuntimeError("transfer_start " +
                         std::to_string(instruction.transfer) +
                         " has no operand");
    double seconds = transferSeconds(plan, instruction, topology);
    copyFree = std::max(now, copyFree) + seconds;
    sim.transferBusySeconds += seconds;
    transferDone[instruction.transfer] = copyFree;
  }

  /// The compute stream waits until work `id` of a stream is done.
  void waitFor(const std::map<int, double> &done, int id, double &exposed) {
    auto found = done.find(id);
    if (found != done.end() && found->second > now) {
      exposed += found->second - now;
      now = found->second;
    }
  }

  const Plan &plan;
  const Topology &topology;
  const DeviceModel &device;
  Shares shares;
  bool coresFull;
  Simulation sim;
  double now = 0, commFree = 0, copyFree = 0;
  std::map<int, double> collectiveDone, transferDone;
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
