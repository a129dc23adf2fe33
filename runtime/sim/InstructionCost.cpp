//===- InstructionCost.cpp - FLOPs, bytes and collective times ------------===//

#include "runtime/sim/InstructionCost.h"

#include "runtime/core/Error.h"
#include "runtime/kernels/AttentionChecks.h"
#include "runtime/kernels/MatmulChecks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

namespace zerosbp::runtime::sim {
namespace {

// FLOPs per element of the largest tensor a kernel touches, counting a
// transcendental (exp, tanh, sqrt, a Philox round) as 4 and the rest of the
// formula of NNOps.td one each. Unlisted kernels count 1.
double flopsPerElement(const std::string &op) {
  static const std::map<std::string, double> kFlops = {
      {"nn.gelu", 14},
      {"nn.gelu_grad", 22},
      {"nn.tanh", 4},
      {"nn.tanh_grad", 3},
      {"nn.softmax", 7},
      {"nn.softmax_grad", 4},
      {"nn.layer_norm", 9},
      {"nn.layer_norm_grad", 14},
      {"nn.cross_entropy", 7},
      {"nn.cross_entropy_grad", 7},
      // Split by class: the max, then exp(x - max) and its sum, over the
      // logits; the loss's log over the rows; the gradient as unsplit.
      {"nn.cross_entropy_max", 1},
      {"nn.cross_entropy_sums", 6},
      {"nn.cross_entropy_loss", 6},
      {"nn.cross_entropy_split_grad", 7},
      {"nn.adam", 16},
      {"nn.adamw", 18},
      {"nn.sgd", 3},
      {"nn.dropout", 12},
      {"nn.relu_grad", 2},
      {"nn.clip_coefficient", 2},
      {"nn.nonfinite_count", 2}};
  auto found = kFlops.find(op);
  return found == kFlops.end() ? 1 : found->second;
}

TensorRef shapeOnly(const PlanValue &value) {
  TensorRef tensor;
  tensor.dtype = value.dtype;
  tensor.shape = value.shape;
  return tensor;
}

} // namespace

KernelWork instructionWork(const Plan &plan, const Instruction &instruction) {
  KernelWork work;
  double largest = 0;
  auto touch = [&](int id) {
    const PlanValue &value = plan.values[id];
    work.bytes += static_cast<double>(value.bytes());
    largest = std::max(largest, static_cast<double>(value.numel()));
  };
  for (int id : instruction.operands)
    touch(id);
  for (int id : instruction.results)
    touch(id);
  if (instruction.kind != InstructionKind::Kernel)
    return work; // A copy or all_slice moves bytes and computes nothing.
  // The shapes and types the kernels' checks read, for the products.
  checks::Tensors operands, results;
  auto shapesOnly = [&] {
    for (int id : instruction.operands)
      operands.push_back(shapeOnly(plan.values[id]));
    for (int id : instruction.results)
      results.push_back(shapeOnly(plan.values[id]));
  };
  bool batched = instruction.op == "nn.batch_matmul";
  // The fused epilogues count as their product (the bias, GELU and addend
  // ride on its output).
  bool gelu = instruction.op == "nn.matmul_bias_gelu";
  bool epilogue = gelu || instruction.op == "nn.matmul_bias";
  bool accumulate = instruction.op == "nn.matmul_add";
  if (batched || epilogue || accumulate || instruction.op == "nn.matmul") {
    shapesOnly();
    checks::MatmulShape shape =
        epilogue
            ? checks::checkMatmulEpilogue(instruction.op, instruction.attrs,
                                          operands, results, gelu)
        : accumulate ? checks::checkMatmulAdd(instruction.op, instruction.attrs,
                                              operands, results)
                     : checks::checkMatmul(instruction.op, instruction.attrs,
                                           operands, results, batched);
    work.matmul = true;
    work.dtype = operands[0].dtype;
    work.flops = 2.0 * shape.batch * shape.m * shape.n * shape.k;
    work.gemmSize = std::cbrt(static_cast<double>(shape.m) * shape.n *
                              static_cast<double>(shape.k));
    return work;
  }
  bool backward = instruction.op == "nn.attention_grad";
  if (backward || instruction.op == "nn.attention") {
    shapesOnly();
    checks::AttentionLayout shape =
        backward ? checks::checkAttentionGrad(instruction.op, instruction.attrs,
                                              operands, results)
                 : checks::checkAttention(instruction.op, instruction.attrs,
                                          operands, results);
    // Two products per tile forward (q k^T, p v); the backward recomputes
    // q k^T and adds four (dv, dp, dq, dk). A causal mask skips half.
    double pairs = static_cast<double>(shape.batch) * shape.queries *
                   shape.keys * (shape.causal ? 0.5 : 1.0);
    double forward = 2.0 * pairs * (shape.headDim + shape.valueDim);
    work.matmul = true;
    work.dtype = operands[0].dtype;
    work.flops = backward ? 2.5 * forward : forward;
    work.gemmSize = std::cbrt(static_cast<double>(shape.queries) *
                              static_cast<double>(shape.keys) *
                              static_cast<double>(shape.headDim));
    return work;
  }
  work.flops = largest * flopsPerElement(instruction.op);
  return work;
}

double kernelSeconds(const KernelWork &work, const DeviceModel &device,
                     double share, bool host) {
  double flopRate, byteRate;
  if (host) {
    flopRate = device.hostVectorFlops;
    byteRate = device.hostMemoryBandwidth;
  } else {
    flopRate = work.matmul ? device.matmulRate(work.dtype, work.gemmSize, share)
                           : device.vectorRate() * share;
    byteRate = device.memoryRate(work.bytes) * share;
  }
  double seconds = std::max(work.flops / flopRate, work.bytes / byteRate);
  return seconds + device.kernelOverhead;
}

GroupLayout groupLayout(const Plan &plan, int axis, const Topology &topology) {
  GroupLayout worst;
  worst.size = plan.hierarchy.empty() ? 1 : plan.hierarchy[axis];
  worst.nodes = 0;
  // The groups of the first and the last rank: a placement's groups are
  // translates of each other, but a ragged last node may differ.
  for (int rank : {0, plan.world - 1}) {
    std::vector<int> group = plan.groupOf(rank, axis);
    std::map<int64_t, int64_t> perNode;
    for (int member : group)
      ++perNode[member / topology.ranksPerNode];
    int64_t most = 0;
    for (const auto &[node, count] : perNode)
      most = std::max(most, count);
    int64_t nodes = static_cast<int64_t>(perNode.size());
    if (nodes > worst.nodes || (nodes == worst.nodes && most < worst.perNode)) {
      worst.nodes = nodes;
      worst.perNode = most;
    }
  }
  return worst;
}

/// The values of a collective's full-size side: the results of an
/// all-gather, the operands of the others.
static const std::vector<int> &fullSide(const Instruction &instruction) {
  return instruction.collective == CollectiveKind::AllGather
             ? instruction.results
             : instruction.operands;
}

int64_t collectiveFullBytes(const Plan &plan, const Instruction &instruction) {
  int64_t bytes = 0;
  for (int id : fullSide(instruction))
    bytes += plan.values[id].bytes();
  return bytes;
}

int64_t collectiveBytesSent(CollectiveKind kind, int64_t fullBytes, DType dtype,
                            int64_t groupSize) {
  // directBytesSent takes the collective's own argument: every element of
  // an all-reduce, one rank's part of the others.
  int64_t count = fullBytes / static_cast<int64_t>(dtypeBytes(dtype));
  if (kind != CollectiveKind::AllReduce)
    count /= std::max<int64_t>(groupSize, 1);
  return directBytesSent(kind, dtype, count, static_cast<int>(groupSize), 0);
}

int64_t collectivePackBytes(const Plan &plan, const Instruction &instruction,
                            int64_t groupSize) {
  int64_t full = collectiveFullBytes(plan, instruction);
  if (groupSize <= 1)
    return 0;
  if (instruction.collective == CollectiveKind::AllReduce) {
    if (instruction.staging)
      return 2 * full;
    bool inPlace = instruction.operands == instruction.results;
    return inPlace || instruction.operands.size() > 1 ? 0 : full;
  }
  if (instruction.operands.size() > 1)
    return full + full / groupSize;
  // A part is rank-major when only size-1 dims precede the split axis.
  const std::vector<int> &side = fullSide(instruction);
  std::optional<int> axis = instruction.collective == CollectiveKind::AllGather
                                ? instruction.gatherAxis
                                : instruction.scatterAxis;
  if (side.empty() || !axis)
    return 0;
  const std::vector<int64_t> &shape = plan.values[side[0]].shape;
  for (int dim = 0; dim < *axis && dim < static_cast<int>(shape.size()); ++dim)
    if (shape[dim] != 1)
      return full;
  return 0;
}

double collectiveSeconds(CollectiveKind kind, int64_t fullBytes, DType dtype,
                         const GroupLayout &group, const Topology &topology,
                         CollectiveAlgorithm algorithm) {
  int64_t p = group.size;
  if (p <= 1 || fullBytes == 0)
    return 0;
  bool acrossNodes = group.nodes > 1;
  double alpha = acrossNodes ? topology.interLatency : topology.intraLatency;
  double beta = !acrossNodes ? topology.intraBandwidth
                : group.perNode > 1
                    ? std::min(topology.intraBandwidth,
                               topology.interBandwidth * group.perNode)
                    : topology.interBandwidth;
  double full = static_cast<double>(fullBytes);
  double share = static_cast<double>(p - 1) / static_cast<double>(p);
  bool allReduce = kind == CollectiveKind::AllReduce;
  double steps = allReduce ? 2.0 : 1.0;
  if (algorithm == CollectiveAlgorithm::Direct) {
    return alpha +
           static_cast<double>(collectiveBytesSent(kind, fullBytes, dtype, p)) /
               beta;
  }
  // A ring's steps each cost a hop's latency: it crosses the network once
  // per node it spans (NCCL's tuning model), NVLink or shared memory else.
  double ringSteps = steps * static_cast<double>(p - 1);
  double interSteps =
      acrossNodes
          ? std::min(ringSteps, steps * static_cast<double>(group.nodes))
          : 0;
  double ring = (ringSteps - interSteps) * topology.intraLatency +
                interSteps * topology.interLatency +
                steps * share * full / beta;
  double tree = 2.0 * std::ceil(std::log2(static_cast<double>(p))) * alpha +
                2.0 * share * full / beta;
  if (algorithm == CollectiveAlgorithm::Tree && allReduce)
    return tree;
  if (algorithm == CollectiveAlgorithm::Auto && allReduce)
    return std::min(ring, tree);
  return ring;
}

} // namespace zerosbp::runtime::sim
