//===- InstructionCost.h - what one plan instruction costs ------*- C++ -*-===//
//
// The work of a kernel (FLOPs and bytes of memory traffic, from the shapes
// in the plan) and the time of a collective on a group laid over nodes
// (alpha-beta models of ring, tree and direct exchange), as
// docs/scale.md#the-simulator derives them.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_SIM_INSTRUCTIONCOST_H
#define ZEROSBP_RUNTIME_SIM_INSTRUCTIONCOST_H

#include "runtime/plan/Plan.h"
#include "runtime/sim/DeviceModel.h"
#include "runtime/sim/Topology.h"

#include <cstdint>

namespace zerosbp::runtime::sim {

/// A kernel's work on one rank.
struct KernelWork {
  double flops = 0;
  double bytes = 0; // Read and written.
  bool matmul = false;
  DType dtype = DType::F32; // A matmul's operand type.
  double gemmSize = 0;      // A matmul's cube root of mnk.
};

/// The work of a kernel, all_slice or copy instruction. Matmuls count
/// 2mnk FLOPs; element-wise kernels a fixed number of FLOPs per element of
/// their largest tensor (docs/scale.md#the-simulator). Throws RuntimeError
/// on a matmul whose shapes do not agree.
KernelWork instructionWork(const Plan &plan, const Instruction &instruction);

/// Roofline seconds of `work` at `share` of the device (a CPU rank's cores;
/// 1 for a GPU), plus the kernel overhead; `host` for an offloaded kernel.
double kernelSeconds(const KernelWork &work, const DeviceModel &device,
                     double share, bool host);

/// How a collective group sits on the nodes: its size, how many nodes it
/// spans and how many of its ranks share a node.
struct GroupLayout {
  int64_t size = 1;
  int64_t nodes = 1;
  int64_t perNode = 1;
};

/// The layout of the groups along hierarchy axis `axis` of the plan; where
/// groups differ, the one that spans the most nodes.
GroupLayout groupLayout(const Plan &plan, int axis, const Topology &topology);

/// The full-size bytes of a collective (an all-reduce's buffer, the input
/// of a reduce-scatter, the output of an all-gather) and one rank's part.
int64_t collectiveFullBytes(const Plan &plan, const Instruction &instruction);

/// The bytes rank 0 of a group of `groupSize` sends in a collective of
/// `fullBytes`, as the runtime counts them (directBytesSent).
int64_t collectiveBytesSent(CollectiveKind kind, int64_t fullBytes, DType dtype,
                            int64_t groupSize);

/// The bytes the runtime copies to pack a collective's operands into a flat
/// buffer and its results out of it (runtime/exec/Collectives.cpp): a
/// bucket of several reduce-scatter or all-gather segments copies T + T/p,
/// an all-reduce through a staging buffer 2T, a single segment whose parts
/// are not rank-major T; a rank-major segment or an in-place bucket none.
int64_t collectivePackBytes(const Plan &plan, const Instruction &instruction,
                            int64_t groupSize);

/// Seconds of one collective of `fullBytes` (T) over `group` (p ranks):
///   ring all-reduce    2(p-1) hops + 2 (p-1)/p T / b
///   ring RS, AG, A2A    (p-1) hops +   (p-1)/p T / b
///   tree all-reduce    2 ceil(log2 p) a + 2 (p-1)/p T / b
///   direct (CPU)             a + the bytes a rank sends / b
/// A ring's hops cost the intra-node latency but for one per node it spans
/// (twice for an all-reduce), which cost the inter-node latency (NCCL's
/// tuning model); a is the latency of the slowest link the group uses. b is
/// the per-rank bandwidth: intra within a node, min(intra, perNode x inter)
/// once the group spans nodes, as a node's ranks drive their own NICs.
/// `auto` takes the faster of ring and tree for an all-reduce and the ring
/// otherwise.
double collectiveSeconds(CollectiveKind kind, int64_t fullBytes, DType dtype,
                         const GroupLayout &group, const Topology &topology,
                         CollectiveAlgorithm algorithm);

} // namespace zerosbp::runtime::sim

#endif // ZEROSBP_RUNTIME_SIM_INSTRUCTIONCOST_H
