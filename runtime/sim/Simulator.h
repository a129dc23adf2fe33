//===- Simulator.h - a plan's step on a modelled cluster --------*- C++ -*-===//
//
// Replays one rank's instructions (the plan is SPMD, every rank runs the
// same) on three streams, as the runtime runs them: kernels in order on the
// compute stream, collectives in issue order on the communication stream,
// transfers on the copy stream. A start queues its work behind what the
// stream already holds; a wait holds the compute stream until that work is
// done, which is the exposed time (docs/scale.md#the-simulator).
//
// With pipeline stages, one rank of each stage is replayed, each running
// its stage's instructions. A send_recv's send half occupies the sender's
// communication stream for the link's latency and the message's bytes over
// its bandwidth, from when the sender issues it; the message arrives when
// that ends, and the sender's compute goes on. Its receive half ends on the
// receiver's communication stream once the message has arrived (messages
// between two stages are received in the order sent); the receiver's
// compute waits for it at its wait. A send_recv of both halves at once
// starts once both ranks have reached it and their communication streams
// are free. The step ends when the last stage does; the rest of the report
// is rank 0's, as the runtime's report is.
//
// Where the runtime leaves transfer waits to the next step
// (runtime/plan/DeferredTransfers.h), a step ends without them and the next
// one waits for those copies where it first touches their bytes: the
// replay runs two steps, the second starting where the first returned to
// the host, and reports the second.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_SIM_SIMULATOR_H
#define ZEROSBP_RUNTIME_SIM_SIMULATOR_H

#include "runtime/plan/Plan.h"
#include "runtime/sim/DeviceModel.h"
#include "runtime/sim/InstructionCost.h"
#include "runtime/sim/Topology.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zerosbp::runtime::sim {

struct SimOptions {
  /// CPU devices: the threads each rank computes with (zero-run --threads).
  int threads = 1;
  /// Transfer waits left to the next step, as the runtime leaves them
  /// (zero-run --defer-transfer-waits): then two steps are replayed and
  /// the second, which waits for the first's copies, is reported.
  bool deferTransferWaits = true;
};

struct OpSummary {
  int64_t count = 0;
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
};

struct Simulation {
  double stepSeconds = 0;
  /// Kernel, all_slice and copy time on the compute stream, waits excluded.
  double computeSeconds = 0;
  /// Time the communication stream runs collectives, and the part of it
  /// the compute stream waits for.
  double commBusySeconds = 0;
  double commExposedSeconds = 0;
  double transferBusySeconds = 0;
  double transferExposedSeconds = 0;
  /// Offloaded updates on a GPU rank's host stream (on a CPU rank they are
  /// compute).
  double hostBusySeconds = 0;
  /// FLOPs of one rank's step, and of its matmuls alone.
  double flops = 0;
  double matmulFlops = 0;
  /// When each pipeline stage's rank ends the step (one entry without
  /// pipeline stages); stepSeconds is the latest.
  std::vector<double> stageSeconds;
  /// The part of the device a rank's matmuls compute with (a CPU rank's
  /// BLAS cores).
  double share = 1;
  int64_t collectives = 0;
  std::array<int64_t, kNumCollectiveKinds> bytesSentByKind{};
  std::array<double, kNumCollectiveKinds> secondsByKind{};
  /// Bytes a rank sends per step along each hierarchy axis, and how that
  /// axis's groups sit on the nodes.
  std::vector<int64_t> bytesSentByAxis;
  std::vector<GroupLayout> axisGroups;
  /// The communication stream's time per hierarchy axis (on a [data,
  /// model] placement: the network's and NVLink's share of commBusySeconds).
  std::vector<double> secondsByAxis;
  /// Of those, the bytes that cross the network: a ring over a group that
  /// spans n nodes crosses it on n of its p hops, so n/p of what a rank
  /// sends leaves its node (all of it for one rank per node, 1/8 for a
  /// flat ring over nodes of 8).
  double networkBytes = 0;
  /// Per kernel op (and "copy", "shard.all_slice").
  std::map<std::string, OpSummary> ops;
  /// The plan's arenas per rank and whether the device arena fits the
  /// device's memory.
  int64_t deviceBytes = 0;
  int64_t hostBytes = 0;
  int64_t nvmeBytes = 0;
  bool fits = true;
};

/// Simulates one step of `plan` on `topology` with `device` on every rank.
/// Throws RuntimeError when the topology's rank count is not the plan's, or
/// a transfer needs a link (pcie, nvme) the topology does not give.
Simulation simulate(const Plan &plan, const Topology &topology,
                    const DeviceModel &device, const SimOptions &options = {});

} // namespace zerosbp::runtime::sim

#endif // ZEROSBP_RUNTIME_SIM_SIMULATOR_H
