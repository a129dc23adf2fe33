//===- simulator_test.cc - zero-sim's cost model and replay ---------------===//
//
// Every expected time is derived by hand from the formulas of
// docs/scale.md#the-simulator.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/sim/InstructionCost.h"
#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

using namespace zerosbp::runtime;
using namespace zerosbp::runtime::sim;

namespace {

PlanValue value(std::vector<int64_t> shape) {
  PlanValue v;
  v.shape = std::move(shape);
  return v;
}

Instruction matmul() {
  Instruction instruction;
  instruction.op = "nn.matmul";
  instruction.operands = {0, 1};
  instruction.results = {2};
  return instruction;
}

/// matmul; all_reduce start (bucket 0) of 100,000 f32; matmul; wait.
Plan overlapPlan() {
  Plan plan;
  plan.world = 2;
  plan.hierarchy = {2};
  plan.arenas = {PlanArena{MemoryKind::Device, 4096}};
  plan.values = {value({64, 32}), value({32, 16}), value({64, 16}),
                 value({100000})};
  Instruction start;
  start.kind = InstructionKind::CollectiveStart;
  start.op = "collective_start";
  start.collective = CollectiveKind::AllReduce;
  start.bucket = 0;
  start.groupSize = 2;
  start.operands = {3};
  start.results = {3};
  Instruction wait;
  wait.kind = InstructionKind::CollectiveWait;
  wait.op = "collective_wait";
  wait.bucket = 0;
  plan.instructions = {matmul(), start, matmul(), wait};
  return plan;
}

/// 1 GFLOP/s everywhere, memory so fast that every kernel is compute-bound.
DeviceModel slowDevice() {
  DeviceModel device;
  device.name = "test";
  device.matmulF32Peak = device.matmulF16Peak = device.vectorPeak = 1e9;
  device.memoryPeak = 1e15;
  device.algorithm = CollectiveAlgorithm::Ring;
  return device;
}

Topology twoRanks() {
  return parseTopology("nodes=1,ranks_per_node=2,intra=1GB/s,latency=10us");
}

TEST(InstructionCost, MatmulCountsTwoMnk) {
  Plan plan = overlapPlan();
  KernelWork work = instructionWork(plan, plan.instructions[0]);
  EXPECT_TRUE(work.matmul);
  EXPECT_DOUBLE_EQ(work.flops, 2.0 * 64 * 16 * 32);
  EXPECT_DOUBLE_EQ(work.bytes, (64 * 32 + 32 * 16 + 64 * 16) * 4.0);
  // 65,536 FLOPs at 1 GFLOP/s.
  EXPECT_DOUBLE_EQ(kernelSeconds(work, slowDevice(), 1, false), 65.536e-6);
}

TEST(InstructionCost, MatmulEpiloguesCountAsTheirProduct) {
  // x (64 x 32) by a Linear's weight (16 x 32) plus a bias of 16, and the
  // same with GELU and its pre-activation.
  Plan plan;
  plan.values = {value({64, 32}), value({16, 32}), value({16}), value({64, 16}),
                 value({64, 16})};
  Instruction instruction;
  instruction.op = "nn.matmul_bias";
  instruction.attrs.set("transpose_rhs", true);
  instruction.operands = {0, 1, 2};
  instruction.results = {3};
  KernelWork work = instructionWork(plan, instruction);
  EXPECT_TRUE(work.matmul);
  EXPECT_DOUBLE_EQ(work.flops, 2.0 * 64 * 16 * 32);
  EXPECT_DOUBLE_EQ(work.bytes, (64 * 32 + 16 * 32 + 16 + 64 * 16) * 4.0);
  instruction.op = "nn.matmul_bias_gelu";
  instruction.results = {3, 4};
  work = instructionWork(plan, instruction);
  EXPECT_TRUE(work.matmul);
  EXPECT_DOUBLE_EQ(work.flops, 2.0 * 64 * 16 * 32);
  EXPECT_DOUBLE_EQ(work.bytes, (64 * 32 + 16 * 32 + 16 + 2 * 64 * 16) * 4.0);
}

TEST(InstructionCost, MismatchedMatmulIsRefused) {
  Plan plan = overlapPlan();
  plan.values[1] = value({31, 16});
  EXPECT_THROW(instructionWork(plan, plan.instructions[0]), RuntimeError);
}

TEST(InstructionCost, RingTreeAndDirectByHand) {
  Topology node =
      parseTopology("nodes=1,ranks_per_node=8,intra=100GB/s,latency=1us");
  GroupLayout eight{8, 1, 8};
  // Ring all-reduce: 2(p-1) a + 2 (p-1)/p T / b.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 8000000000,
                                DType::F32, eight, node,
                                CollectiveAlgorithm::Ring),
              14e-6 + 2 * 0.875 * 8e9 / 100e9, 1e-12);
  // Tree all-reduce: 2 log2(p) a + the same bandwidth term.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 8000000000,
                                DType::F32, eight, node,
                                CollectiveAlgorithm::Tree),
              6e-6 + 2 * 0.875 * 8e9 / 100e9, 1e-12);
  // Auto takes the tree for an all-reduce, the ring for an all-gather.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 8000, DType::F32,
                                eight, node, CollectiveAlgorithm::Auto),
              6e-6 + 2 * 0.875 * 8000 / 100e9, 1e-15);
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllGather, 8000, DType::F32,
                                eight, node, CollectiveAlgorithm::Auto),
              7e-6 + 0.875 * 8000 / 100e9, 1e-15);
  // Direct: one latency and the bytes a rank sends.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::ReduceScatter, 8000, DType::F32,
                                eight, node, CollectiveAlgorithm::Direct),
              1e-6 + 7000 / 100e9, 1e-15);
  EXPECT_EQ(collectiveSeconds(CollectiveKind::AllReduce, 8000, DType::F32,
                              GroupLayout{1, 1, 1}, node,
                              CollectiveAlgorithm::Ring),
            0);
}

TEST(InstructionCost, AcrossNodesTheNicsBound) {
  Topology cluster =
      parseTopology("nodes=2,ranks_per_node=8,intra=100GB/s,inter=10GB/s,"
                    "intra_latency=1us,inter_latency=5us");
  // 16 ranks over 2 nodes: b = min(100, 8 x 10) GB/s; of the 15 hops of a
  // ring reduce-scatter, 2 cross the network.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::ReduceScatter, 16000000,
                                DType::F32, GroupLayout{16, 2, 8}, cluster,
                                CollectiveAlgorithm::Ring),
              13e-6 + 2 * 5e-6 + (15.0 / 16) * 16e6 / 80e9, 1e-12);
  // One rank per node (MiCS's inter-node all-reduce): its own NIC only.
  EXPECT_NEAR(collectiveSeconds(CollectiveKind::AllReduce, 1000000, DType::F32,
                                GroupLayout{2, 2, 1}, cluster,
                                CollectiveAlgorithm::Ring),
              2 * 5e-6 + 2 * 0.5 * 1e6 / 10e9, 1e-12);
}

TEST(InstructionCost, GroupsOnNodes) {
  Plan plan;
  plan.world = 8;
  plan.hierarchy = {2, 4};
  Topology topology = parseTopology(
      "nodes=2,ranks_per_node=4,intra=1GB/s,inter=1GB/s,latency=0");
  GroupLayout inner = groupLayout(plan, 1, topology);
  EXPECT_EQ(inner.size, 4);
  EXPECT_EQ(inner.nodes, 1);
  EXPECT_EQ(inner.perNode, 4);
  GroupLayout outer = groupLayout(plan, 0, topology);
  EXPECT_EQ(outer.size, 2);
  EXPECT_EQ(outer.nodes, 2);
  EXPECT_EQ(outer.perNode, 1);
}

/// Megatron's layout on [data, model] = [2, 2] over 2 nodes of 2: the model
/// axis (consecutive ranks) inside a node, the data axis across the nodes.
/// A row-parallel bias's to_partial, then an all-reduce of 4 MB on each
/// axis, each waited for at once.
TEST(Simulator, TensorParallelAxesSitOnNvlinkAndTheNetwork) {
  Plan plan;
  plan.world = 4;
  plan.hierarchy = {2, 2};
  plan.arenas = {PlanArena{MemoryKind::Device, 4096}};
  plan.values = {value({1000}), value({1000}), value({1000000}),
                 value({1000000})};
  Instruction partial;
  partial.kind = InstructionKind::ToPartial;
  partial.op = "sbp.to_partial";
  partial.operands = {0};
  partial.results = {1};
  plan.instructions = {partial};
  for (int axis : {1, 0}) {
    Instruction start;
    start.kind = InstructionKind::CollectiveStart;
    start.op = "collective_start";
    start.collective = CollectiveKind::AllReduce;
    start.bucket = axis;
    start.groupAxis = axis;
    start.groupSize = 2;
    start.operands = start.results = {3 - axis};
    Instruction wait;
    wait.kind = InstructionKind::CollectiveWait;
    wait.op = "collective_wait";
    wait.bucket = axis;
    plan.instructions.push_back(start);
    plan.instructions.push_back(wait);
  }
  Topology cluster =
      parseTopology("nodes=2,ranks_per_node=2,intra=100GB/s,inter=10GB/s,"
                    "intra_latency=1us,inter_latency=5us");
  Simulation sim = simulate(plan, cluster, slowDevice());
  ASSERT_EQ(sim.axisGroups.size(), 2u);
  // Data axis: ranks {0, 2}, one per node; model axis: {0, 1}, one node.
  EXPECT_EQ(sim.axisGroups[0].size, 2);
  EXPECT_EQ(sim.axisGroups[0].nodes, 2);
  EXPECT_EQ(sim.axisGroups[0].perNode, 1);
  EXPECT_EQ(sim.axisGroups[1].size, 2);
  EXPECT_EQ(sim.axisGroups[1].nodes, 1);
  EXPECT_EQ(sim.axisGroups[1].perNode, 2);
  // Ring all-reduces of 4e6 bytes over 2 ranks, each sending 4e6 bytes:
  // within the node 2 hops of 1 us at 100 GB/s; across, 2 network hops of
  // 5 us at the rank's own NIC, 10 GB/s.
  double model = 2e-6 + 4e6 / 100e9;
  double data = 10e-6 + 4e6 / 10e9;
  EXPECT_EQ(sim.bytesSentByAxis, (std::vector<int64_t>{4000000, 4000000}));
  ASSERT_EQ(sim.secondsByAxis.size(), 2u);
  EXPECT_NEAR(sim.secondsByAxis[0], data, 1e-12);
  EXPECT_NEAR(sim.secondsByAxis[1], model, 1e-12);
  EXPECT_NEAR(sim.commBusySeconds, model + data, 1e-12);
  // Only the data axis leaves the node, all of its bytes.
  EXPECT_DOUBLE_EQ(sim.networkBytes, 4e6);
  // The to_partial is compute: it moves its operand and result.
  EXPECT_EQ(sim.ops.at("sbp.to_partial").count, 1);
  EXPECT_EQ(sim.ops.at("sbp.to_partial").bytes, 8000);
  EXPECT_NEAR(sim.stepSeconds,
              sim.ops.at("sbp.to_partial").seconds + model + data, 1e-12);
}

TEST(Simulator, WaitExposesWhatComputeDoesNotHide) {
  Plan plan = overlapPlan();
  Simulation sim = simulate(plan, twoRanks(), slowDevice());
  // all-reduce of 400,000 bytes over 2 ranks: 2 x 10 us + 400,000 / 1e9.
  double comm = 20e-6 + 400e-6;
  double kernel = 65.536e-6;
  EXPECT_NEAR(sim.commBusySeconds, comm, 1e-12);
  EXPECT_NEAR(sim.computeSeconds, 2 * kernel, 1e-12);
  // It starts after the first matmul and ends after the second.
  EXPECT_NEAR(sim.stepSeconds, kernel + comm, 1e-12);
  EXPECT_NEAR(sim.commExposedSeconds, comm - kernel, 1e-12);
  EXPECT_EQ(sim.bytesSentByAxis, std::vector<int64_t>{400000});
  EXPECT_EQ(sim.bytesSentByKind[0], 400000);
  EXPECT_EQ(sim.collectives, 1);
  EXPECT_EQ(sim.ops.at("nn.matmul").count, 2);
  EXPECT_EQ(sim.deviceBytes, 4096);
}

TEST(Simulator, SmallCollectivesHideBehindCompute) {
  Plan plan = overlapPlan();
  plan.values[3] = value({1000});
  Simulation sim = simulate(plan, twoRanks(), slowDevice());
  EXPECT_NEAR(sim.stepSeconds, 2 * 65.536e-6, 1e-12);
  EXPECT_EQ(sim.commExposedSeconds, 0);
}

TEST(Simulator, FullCpuCoresCannotOverlap) {
  Plan plan = overlapPlan();
  DeviceModel cpu = slowDevice();
  cpu.cores = 2;
  cpu.collectivesUseCores = true;
  Simulation sim = simulate(plan, twoRanks(), cpu);
  // One core per rank: the collective's copies take the matmul's core.
  EXPECT_NEAR(sim.stepSeconds, 2 * 65.536e-6 + 420e-6, 1e-12);
  EXPECT_NEAR(sim.commExposedSeconds, 420e-6, 1e-12);
  // Four ranks on two cores: every kernel at half speed.
  Plan four = overlapPlan();
  four.world = 4;
  four.hierarchy = {4};
  Simulation shared = simulate(
      four, parseTopology("nodes=1,ranks_per_node=4,intra=1GB/s,latency=0"),
      cpu);
  EXPECT_NEAR(shared.computeSeconds, 4 * 65.536e-6, 1e-12);
}

/// Two pipeline stages: stage 0 computes a matmul and sends 100,000 f32 to
/// stage 1, which waits for them and computes two matmuls.
Plan pipelinePlan() {
  Plan plan = overlapPlan();
  plan.pipeline = PlanPipeline{2, 1, "1f1b", 0};
  Instruction &send = plan.instructions[1];
  send.collective = CollectiveKind::SendRecv;
  send.sourceStage = 0;
  send.targetStage = 1;
  send.stages = plan.instructions[3].stages = {0, 1};
  plan.instructions[0].stages = {0};
  plan.instructions[2].stages = {1};
  // Stage 1 waits for the message before its matmuls.
  std::swap(plan.instructions[2], plan.instructions[3]);
  plan.instructions.push_back(plan.instructions[3]);
  return plan;
}

TEST(Simulator, PipelineStagesWaitForTheirMessages) {
  Plan plan = pipelinePlan();
  Simulation sim = simulate(plan, twoRanks(), slowDevice());
  double kernel = 65.536e-6;
  // 400,000 bytes within the node: 10 us + 400,000 / 1e9, from the end of
  // stage 0's matmul; stage 1 then runs its two matmuls.
  double message = 10e-6 + 400e-6;
  ASSERT_EQ(sim.stageSeconds.size(), 2u);
  EXPECT_NEAR(sim.stageSeconds[0], kernel + message, 1e-12);
  EXPECT_NEAR(sim.stageSeconds[1], kernel + message + 2 * kernel, 1e-12);
  EXPECT_NEAR(sim.stepSeconds, sim.stageSeconds[1], 1e-12);
  // Rank 0 (stage 0) computed one matmul and sent the message.
  EXPECT_EQ(sim.ops.at("nn.matmul").count, 1);
  EXPECT_NEAR(sim.computeSeconds, kernel, 1e-12);
  EXPECT_NEAR(sim.commBusySeconds, message, 1e-12);
  EXPECT_NEAR(sim.commExposedSeconds, message, 1e-12);
  EXPECT_EQ(sim.bytesSentByKind[static_cast<int>(CollectiveKind::SendRecv)],
            400000);
  EXPECT_EQ(sim.bytesSentByAxis, std::vector<int64_t>{400000});
  EXPECT_EQ(sim.networkBytes, 0);
  EXPECT_EQ(sim.collectives, 1);
}

TEST(Simulator, MessagesBetweenNodesTakeTheNetwork) {
  Plan plan = pipelinePlan();
  Simulation sim = simulate(
      plan,
      parseTopology("nodes=2,ranks_per_node=1,intra=1GB/s,inter=0.5GB/s,"
                    "latency=10us"),
      slowDevice());
  EXPECT_NEAR(sim.commBusySeconds, 10e-6 + 800e-6, 1e-12);
  EXPECT_EQ(sim.networkBytes, 400000);
  // The receiver counts no bytes: stage 1 as the sender, rank 0 sends none.
  std::swap(plan.instructions[1].sourceStage, plan.instructions[1].targetStage);
  plan.instructions[0].stages = {1};
  EXPECT_EQ(simulate(plan, twoRanks(), slowDevice()).bytesSentByAxis,
            std::vector<int64_t>{0});
}

/// A collective_start or collective_wait of `bucket` on `stages`; a start
/// is a send_recv of value `message` from stage `from` to stage `to`.
Instruction startHalf(int bucket, int from, int to, std::vector<int> stages,
                      int message = 3) {
  Instruction start;
  start.kind = InstructionKind::CollectiveStart;
  start.op = "collective_start";
  start.collective = CollectiveKind::SendRecv;
  start.bucket = bucket;
  start.groupSize = 2;
  start.sourceStage = from;
  start.targetStage = to;
  start.stages = std::move(stages);
  start.operands = start.results = {message};
  return start;
}
Instruction waitFor(int bucket, std::vector<int> stages) {
  Instruction wait;
  wait.kind = InstructionKind::CollectiveWait;
  wait.op = "collective_wait";
  wait.bucket = bucket;
  wait.stages = std::move(stages);
  return wait;
}
Instruction matmulOn(int stage) {
  Instruction instruction = matmul();
  instruction.stages = {stage};
  return instruction;
}

/// Two stages: stage 0 computes a matmul, sends its 100,000 f32 and
/// computes another; stage 1 computes two matmuls of its own, then
/// receives and computes a third. With `halves` the send half follows
/// stage 0's first matmul and the receive half stage 1's two; without,
/// one send_recv of both halves sits where the send half would.
Plan overlapPipelinePlan(bool halves) {
  Plan plan = overlapPlan();
  plan.pipeline = PlanPipeline{2, 1, "1f1b", 0};
  plan.instructions.clear();
  plan.instructions.push_back(matmulOn(0));
  if (halves) {
    plan.instructions.push_back(startHalf(0, 0, 1, {0}));
    plan.instructions.push_back(waitFor(0, {0}));
  } else {
    plan.instructions.push_back(startHalf(0, 0, 1, {0, 1}));
    plan.instructions.push_back(waitFor(0, {0, 1}));
  }
  plan.instructions.push_back(matmulOn(0));
  plan.instructions.push_back(matmulOn(1));
  plan.instructions.push_back(matmulOn(1));
  if (halves) {
    plan.instructions.push_back(startHalf(1, 0, 1, {1}));
    plan.instructions.push_back(waitFor(1, {1}));
  }
  plan.instructions.push_back(matmulOn(1));
  return plan;
}

TEST(Simulator, SendHalvesOverlapTheReceiversOwnWork) {
  double kernel = 65.536e-6;
  double message = 10e-6 + 400e-6; // 400,000 bytes within the node.
  Simulation split =
      simulate(overlapPipelinePlan(true), twoRanks(), slowDevice());
  ASSERT_EQ(split.stageSeconds.size(), 2u);
  // Stage 0's send half holds its communication stream, not its compute:
  // its second matmul follows the send's wait for its own stream.
  EXPECT_NEAR(split.stageSeconds[0], kernel + message + kernel, 1e-12);
  // Stage 1's two matmuls run while the message travels; its third waits
  // for the message, which arrives at kernel + message.
  EXPECT_NEAR(split.stageSeconds[1], kernel + message + kernel, 1e-12);
  EXPECT_NEAR(split.stepSeconds, 2 * kernel + message, 1e-12);
  // Serialized, stage 0's matmul, the message and stage 1's three matmuls
  // would take kernel + message + 3 kernel; the overlap saves two.
  EXPECT_LT(split.stepSeconds, 4 * kernel + message - 1e-9);
  // Rank 0 sends the bytes, once; the receive half counts none.
  EXPECT_EQ(split.bytesSentByKind[static_cast<int>(CollectiveKind::SendRecv)],
            400000);
  EXPECT_EQ(split.collectives, 1);
  EXPECT_NEAR(split.commBusySeconds, message, 1e-12);
  // Both halves at once, where the send half was: stage 1 waits for the
  // message before its own matmuls, which then come after it.
  Simulation both =
      simulate(overlapPipelinePlan(false), twoRanks(), slowDevice());
  EXPECT_NEAR(both.stageSeconds[1], kernel + message + 3 * kernel, 1e-12);
  EXPECT_GT(both.stepSeconds, split.stepSeconds + kernel);
}

TEST(Simulator, ASendHalfDoesNotWaitForItsReceiver) {
  // Stage 1 computes 8 matmuls before it receives, past the message's
  // arrival; stage 0's step ends after its own work and its send's
  // transmission, whatever stage 1 does.
  Plan plan = overlapPipelinePlan(true);
  for (int extra = 0; extra < 6; ++extra)
    plan.instructions.insert(plan.instructions.begin() + 4, matmulOn(1));
  Simulation sim = simulate(plan, twoRanks(), slowDevice());
  double kernel = 65.536e-6, message = 410e-6;
  ASSERT_LT(kernel + message, 8 * kernel);
  EXPECT_NEAR(sim.stageSeconds[0], 2 * kernel + message, 1e-12);
  // The message waited for stage 1, not the other way round: stage 1
  // receives it as soon as it gets there.
  EXPECT_NEAR(sim.stageSeconds[1], 9 * kernel, 1e-12);
  // Rank 0's wait is for its own stream's transmission.
  EXPECT_NEAR(sim.commExposedSeconds, message, 1e-12);
}

/// GPipe over `stages` stages and `micro` micro-batches: each stage runs
/// one matmul per micro-batch forward and one backward, receiving its
/// input from the stage before (forward) or after (backward) and sending
/// its output on, in halves: the send right after the matmul, the receive
/// right before it. The program lists micro-batch by micro-batch, stage by
/// stage, the forwards first; every message is 64 bytes.
Plan gpipePlan(int stages, int micro) {
  Plan plan = overlapPlan();
  plan.world = stages;
  plan.hierarchy = {stages};
  plan.pipeline = PlanPipeline{stages, micro, "gpipe", 0};
  plan.values.push_back(value({16})); // Value 4: a message.
  plan.instructions.clear();
  int bucket = 0;
  auto hop = [&](int from, int to) {
    plan.instructions.push_back(startHalf(bucket, from, to, {from}, 4));
    plan.instructions.push_back(waitFor(bucket++, {from}));
  };
  auto land = [&](int from, int to) {
    plan.instructions.push_back(startHalf(bucket, from, to, {to}, 4));
    plan.instructions.push_back(waitFor(bucket++, {to}));
  };
  for (int m = 0; m < micro; ++m)
    for (int s = 0; s < stages; ++s) {
      if (s > 0)
        land(s - 1, s);
      plan.instructions.push_back(matmulOn(s));
      if (s + 1 < stages)
        hop(s, s + 1);
    }
  for (int m = 0; m < micro; ++m)
    for (int s = stages - 1; s >= 0; --s) {
      if (s + 1 < stages)
        land(s + 1, s);
      plan.instructions.push_back(matmulOn(s));
      if (s > 0)
        hop(s, s - 1);
    }
  return plan;
}

TEST(Simulator, BalancedGpipeTakesMicroBatchesPlusStagesMinusOneChunks) {
  // A chunk is one micro-batch's forward and backward on one stage, two
  // matmuls; with messages too small to matter the step is (M + P - 1)
  // chunks: the first micro-batch's P - 1 hops of a bubble, then M chunks.
  double kernel = 65.536e-6, chunk = 2 * kernel;
  for (auto [stages, micro] :
       {std::pair{4, 8}, std::pair{2, 4}, std::pair{3, 1}, std::pair{8, 16}}) {
    Plan plan = gpipePlan(stages, micro);
    Simulation sim = simulate(
        plan,
        parseTopology("nodes=1,ranks_per_node=" + std::to_string(stages) +
                      ",intra=1000GB/s,latency=0"),
        slowDevice());
    double ideal = (micro + stages - 1) * chunk;
    // Each message adds 64 ps to the path it lies on.
    EXPECT_GE(sim.stepSeconds, ideal - 1e-12) << stages << " x " << micro;
    EXPECT_NEAR(sim.stepSeconds, ideal, 1e-3 * ideal)
        << stages << " stages, " << micro << " micro-batches";
    // Against the compute of one stage, M chunks: (M + P - 1) / M.
    EXPECT_NEAR(sim.stepSeconds / (micro * chunk),
                static_cast<double>(micro + stages - 1) / micro, 1e-3);
    ASSERT_EQ(sim.stageSeconds.size(), static_cast<size_t>(stages));
    // Stage 0 ends last: its last backward is the step's end.
    EXPECT_NEAR(sim.stageSeconds[0], sim.stepSeconds, 1e-12);
  }
}

TEST(Simulator, RefusesAReceiveHalfWithNothingSent) {
  Plan plan = overlapPipelinePlan(true);
  plan.instructions.erase(plan.instructions.begin() + 1,
                          plan.instructions.begin() + 3);
  try {
    simulate(plan, twoRanks(), slowDevice());
    FAIL() << "simulated a receive half without its send half";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "collective_start of bucket 1: the receive half of a "
                 "send_recv from stage 0 to stage 1 comes before any send "
                 "half between them");
  }
}

TEST(Simulator, RefusesAnotherWorld) {
  Plan plan = overlapPlan();
  try {
    simulate(plan, parseTopology("nodes=1,ranks_per_node=1"), slowDevice());
    FAIL() << "simulated a 2-rank plan on 1 rank";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "the plan runs on 2 ranks, the topology has 1 (nodes x "
                 "ranks_per_node); compile for the topology's ranks");
  }
}

TEST(Simulator, TransfersNeedTheirLink) {
  Plan plan = overlapPlan();
  Instruction transfer;
  transfer.kind = InstructionKind::TransferStart;
  transfer.op = "transfer_start";
  transfer.transfer = 0;
  transfer.from = MemoryKind::Device;
  transfer.to = MemoryKind::Host;
  transfer.operands = {3};
  transfer.results = {3};
  plan.instructions = {transfer};
  try {
    simulate(plan, twoRanks(), slowDevice());
    FAIL() << "simulated a transfer without pcie=";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "the plan moves data between device and host memory: "
                 "--topology needs pcie= (e.g. pcie=25GB/s)");
  }
  Instruction wait;
  wait.kind = InstructionKind::TransferWait;
  wait.op = "transfer_wait";
  wait.transfer = 0;
  plan.instructions = {transfer, wait};
  Simulation sim =
      simulate(plan,
               parseTopology("nodes=1,ranks_per_node=2,intra=1GB/s,latency=0,"
                             "pcie=4GB/s"),
               slowDevice());
  // 400,000 bytes at 4 GB/s, all exposed.
  EXPECT_NEAR(sim.stepSeconds, 100e-6, 1e-12);
  EXPECT_NEAR(sim.transferExposedSeconds, 100e-6, 1e-12);
}

/// A transfer of value 3 (400,000 bytes) between device and host.
Instruction transferOf(int id, MemoryKind from, MemoryKind to) {
  Instruction transfer;
  transfer.kind = InstructionKind::TransferStart;
  transfer.op = "transfer_start";
  transfer.transfer = id;
  transfer.from = from;
  transfer.to = to;
  transfer.operands = {3};
  transfer.results = {3};
  return transfer;
}

Instruction transferWait(int id) {
  Instruction wait;
  wait.kind = InstructionKind::TransferWait;
  wait.op = "transfer_wait";
  wait.transfer = id;
  return wait;
}

TEST(Simulator, GpuRunsOffloadedUpdatesOnTheHostStream) {
  // The gradient goes to the host (100 us at 4 GB/s), the host updates it
  // (100,000 FLOPs at 100 MFLOP/s: 1 ms) and the result comes back (100
  // us); a matmul (65.536 us) follows the update in the program.
  Plan plan = overlapPlan();
  Instruction update;
  update.op = "nn.add";
  update.memory = MemoryKind::Host;
  update.operands = {3, 3};
  update.results = {3};
  plan.instructions = {transferOf(0, MemoryKind::Device, MemoryKind::Host),
                       transferWait(0),
                       update,
                       matmul(),
                       transferOf(1, MemoryKind::Host, MemoryKind::Device),
                       transferWait(1)};
  Topology topology = parseTopology(
      "nodes=1,ranks_per_node=2,intra=1GB/s,latency=0,pcie=4GB/s");
  DeviceModel gpu = slowDevice();
  gpu.hostVectorFlops = 1e8;
  gpu.hostMemoryBandwidth = 1e15;
  // On a GPU the matmul runs while the host updates: the copy back starts
  // when the update ends, at 1.1 ms, and the step ends at 1.2 ms.
  Simulation sim = simulate(plan, topology, gpu);
  EXPECT_NEAR(sim.hostBusySeconds, 1e-3, 1e-12);
  EXPECT_NEAR(sim.computeSeconds, 65.536e-6, 1e-12);
  EXPECT_NEAR(sim.stepSeconds, 1.2e-3, 1e-12);
  // On CPU ranks the update is the rank's own compute: the matmul waits.
  DeviceModel cpu = gpu;
  cpu.cores = 2;
  sim = simulate(plan, topology, cpu);
  EXPECT_EQ(sim.hostBusySeconds, 0);
  EXPECT_NEAR(sim.stepSeconds, 1.2e-3 + 65.536e-6, 1e-12);
}

TEST(Simulator, CopiesBackOverlapTheNextForward) {
  // Two matmuls (65.536 us each at 1 GFLOP/s); the second reads w, which
  // the host updates (512 FLOPs at 100 MFLOP/s: 5.12 us) and copies back
  // (2,048 bytes at 20 MB/s: 102.4 us) after them.
  Plan plan;
  plan.world = 2;
  plan.hierarchy = {2};
  plan.arenas = {PlanArena{MemoryKind::Device, 16384},
                 PlanArena{MemoryKind::Host, 2048}};
  auto buffer = [](int arena, int64_t offset, int64_t bytes) {
    PlanBuffer b;
    b.arena = arena;
    b.offset = offset;
    b.bytes = bytes;
    return b;
  };
  plan.buffers = {buffer(0, 0, 8192), buffer(0, 8192, 2048),
                  buffer(0, 10240, 4096), buffer(1, 0, 2048),
                  buffer(0, 14336, 2048)};
  // x, w, y, w in host memory, v.
  plan.values = {value({64, 32}), value({32, 16}), value({64, 16}),
                 value({32, 16}), value({32, 16})};
  for (int id = 0; id < 5; ++id)
    plan.values[id].buffer = id;
  plan.numTransfers = 1;
  Instruction first = matmul();
  first.operands = {0, 4};
  Instruction update;
  update.op = "nn.add";
  update.memory = MemoryKind::Host;
  update.operands = {3, 3};
  update.results = {3};
  Instruction back = transferOf(0, MemoryKind::Host, MemoryKind::Device);
  back.operands = {3};
  back.results = {1};
  plan.instructions = {first, matmul(), update, back, transferWait(0)};
  Topology topology = parseTopology(
      "nodes=1,ranks_per_node=2,intra=1GB/s,latency=0,pcie=20MB/s");
  DeviceModel gpu = slowDevice();
  gpu.hostVectorFlops = 1e8;
  gpu.hostMemoryBandwidth = 1e15;
  // Waited in the step: both matmuls, then the copy back.
  SimOptions inStep;
  inStep.deferTransferWaits = false;
  Simulation sim = simulate(plan, topology, gpu, inStep);
  EXPECT_NEAR(sim.stepSeconds, 2 * 65.536e-6 + 102.4e-6, 1e-12);
  EXPECT_NEAR(sim.transferExposedSeconds, 102.4e-6, 1e-12);
  // Deferred: the next step's first matmul runs while the copy finishes,
  // and its second waits 102.4 - 65.536 us for it.
  sim = simulate(plan, topology, gpu);
  EXPECT_NEAR(sim.stepSeconds, 102.4e-6 + 65.536e-6, 1e-12);
  EXPECT_NEAR(sim.transferExposedSeconds, 102.4e-6 - 65.536e-6, 1e-12);
  // The second step's counts are one step's.
  EXPECT_NEAR(sim.computeSeconds, 2 * 65.536e-6, 1e-12);
  EXPECT_NEAR(sim.hostBusySeconds, 5.12e-6, 1e-12);
}

} // namespace
