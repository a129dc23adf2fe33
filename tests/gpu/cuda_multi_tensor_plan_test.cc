//===- cuda_multi_tensor_plan_test.cc - the launches the executor merges --===//
//
// runtime/cuda/MultiTensorPlan.h on real plans of the tiny GPT-2, without a
// device (addresses are made up; nothing is read): which instructions the
// CUDA executor merges into multi-tensor launches, and that the order it
// runs a segment in keeps every dependency through memory (checked here
// pair by pair, apart from the scheduler's own sweep).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/MultiTensor.h"
#include "runtime/cuda/MultiTensorPlan.h"
#include "runtime/exec/PreparedProgram.h"
#include "runtime/exec/RankAttrs.h"
#include "runtime/plan/Plan.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime {
namespace {

using Runs = std::vector<std::pair<std::string, size_t>>;

std::string planPath(const std::string &name) {
  const char *any = std::getenv("MULTI_TENSOR_PLAN");
  std::string path = any ? any : "";
  return path.substr(0, path.rfind('/') + 1) + name + ".zplan";
}

/// A plan with its buffers at made-up addresses, as rank `rank` sees it.
struct Prepared {
  Prepared(const std::string &name, int rank = 0)
      : name(name + " rank " + std::to_string(rank)),
        plan(readPlan(planPath(name))) {
    std::vector<unsigned char *> bases(plan.arenas.size(), nullptr);
    for (size_t a = 0; a < plan.arenas.size(); ++a)
      if (plan.arenas[a].memory != MemoryKind::Nvme)
        bases[a] =
            reinterpret_cast<unsigned char *>((uintptr_t{1} << 40) * (a + 1));
    addresses = bufferAddresses(plan, bases);
    prepared = prepareInstructions(plan, addresses);
    attrs = rankAttrs(plan, rank);
  }
  std::vector<MultiTensorSegment> segments(bool checkGradients = false) const {
    return planMultiTensorSegments(plan, addresses, prepared, attrs,
                                   checkGradients);
  }
  /// The ranges instruction i reads and writes.
  std::pair<std::vector<gpu::ByteRange>, std::vector<gpu::ByteRange>>
  access(size_t i) const {
    const Instruction &instruction = plan.instructions[i];
    std::vector<TensorRef> written = prepared[i].results;
    if (instruction.kind == InstructionKind::Copy)
      written = {arenaTensor(plan, addresses,
                             plan.variables[instruction.variableIndex].value)};
    return {gpu::byteRanges(prepared[i].operands), gpu::byteRanges(written)};
  }

  std::string name;
  Plan plan;
  std::vector<unsigned char *> addresses;
  std::vector<PreparedInstruction> prepared;
  std::vector<AttrMap> attrs;
};

bool meet(const std::vector<gpu::ByteRange> &a,
          const std::vector<gpu::ByteRange> &b) {
  for (const gpu::ByteRange &x : a)
    for (const gpu::ByteRange &y : b)
      if (x.begin < y.end && y.begin < x.end)
        return true;
  return false;
}

/// The merged launches' ops and sizes, in order, having checked every
/// segment: each instruction in one launch, the members of a launch of one
/// op and key and independent, and every dependency run first.
Runs checkedRuns(const Prepared &p,
                 const std::vector<MultiTensorSegment> &all) {
  Runs runs;
  for (const MultiTensorSegment &segment : all) {
    std::map<size_t, size_t> launchOf;
    for (size_t l = 0; l < segment.launches.size(); ++l) {
      const std::vector<size_t> &launch = segment.launches[l];
      EXPECT_FALSE(launch.empty());
      for (size_t i : launch) {
        EXPECT_TRUE(i >= segment.begin && i < segment.end) << i;
        EXPECT_TRUE(launchOf.emplace(i, l).second) << i << " twice";
        EXPECT_TRUE(movableInSegment(p.plan, p.prepared, i, false)) << i;
      }
      if (launch.size() < 2)
        continue;
      const std::string &op = p.plan.instructions[launch[0]].op;
      runs.emplace_back(op, launch.size());
      std::string key = gpu::multiTensorKey(op, p.attrs[launch[0]],
                                            p.prepared[launch[0]].operands,
                                            p.prepared[launch[0]].results);
      EXPECT_FALSE(key.empty()) << op;
      for (size_t i : launch) {
        EXPECT_EQ(p.plan.instructions[i].op, op);
        EXPECT_EQ(gpu::multiTensorKey(op, p.attrs[i], p.prepared[i].operands,
                                      p.prepared[i].results),
                  key);
      }
    }
    std::cout << "segment [" << segment.begin << ", " << segment.end << ") of "
              << p.name << ": " << segment.launches.size() << " launches for "
              << segment.end - segment.begin << " instructions:";
    for (const std::vector<size_t> &launch : segment.launches)
      std::cout << " " << p.plan.instructions[launch[0]].op
                << (launch.size() > 1 ? " x" + std::to_string(launch.size())
                                      : "");
    std::cout << std::endl;
    EXPECT_EQ(launchOf.size(), segment.end - segment.begin);
    for (size_t i = segment.begin; i < segment.end; ++i)
      for (size_t j = i + 1; j < segment.end; ++j) {
        auto [readsI, writesI] = p.access(i);
        auto [readsJ, writesJ] = p.access(j);
        if (meet(writesI, readsJ) || meet(writesI, writesJ) ||
            meet(readsI, writesJ))
          EXPECT_LT(launchOf[i], launchOf[j])
              << "instructions " << i << " (" << p.plan.instructions[i].op
              << ") and " << j << " (" << p.plan.instructions[j].op
              << ") share bytes";
      }
  }
  return runs;
}

size_t countOps(const Plan &plan, const std::string &op) {
  size_t count = 0;
  for (const Instruction &instruction : plan.instructions)
    count +=
        instruction.kind == InstructionKind::Kernel && instruction.op == op;
  return count;
}

TEST(MultiTensorPlan, Bf16UpdatesThenCastsAsTwoLaunches) {
  // Each parameter's nn.adam is followed by its nn.cast: all updates are
  // one launch, all casts the next.
  for (const char *name :
       {"bf16_stage0", "bf16_config_stage0", "bf16_config_stage2"}) {
    SCOPED_TRACE(name);
    Prepared p(name);
    size_t adams = countOps(p.plan, "nn.adam");
    ASSERT_GT(adams, 10u);
    Runs runs = checkedRuns(p, p.segments());
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0], std::make_pair(std::string("nn.adam"), adams));
    EXPECT_EQ(runs[1].first, "nn.cast");
    EXPECT_EQ(runs[1].second, adams);
    // With --check-gradients the updates stay where they are.
    runs = checkedRuns(p, p.segments(true));
    for (const auto &run : runs)
      EXPECT_NE(run.first, "nn.adam");
  }
}

TEST(MultiTensorPlan, F32StagesAndOptimizers) {
  for (const char *name :
       {"f32_stage0", "f32_stage2", "adamw_stage0", "sgd_stage0"}) {
    SCOPED_TRACE(name);
    Prepared p(name);
    std::string op = std::string(name).rfind("adamw", 0) == 0 ? "nn.adamw"
                     : std::string(name).rfind("sgd", 0) == 0 ? "nn.sgd"
                                                              : "nn.adam";
    size_t updates = countOps(p.plan, op);
    ASSERT_GT(updates, 10u);
    EXPECT_EQ(checkedRuns(p, p.segments()), (Runs{{op, updates}}));
  }
}

TEST(MultiTensorPlan, TwoRanksSliceBeforeTheirUpdates) {
  // Stage 2 on two ranks: each update reads its shard of the parameter,
  // sliced right before it. The memory plan gives a later slice bytes an
  // earlier update reads (a gradient freed after it), so not every update
  // can join one launch: some do, and every dependency holds.
  for (int rank : {0, 1}) {
    Prepared p("f32_stage2_world2", rank);
    EXPECT_GT(countOps(p.plan, "nn.adam"), 10u);
    Runs runs = checkedRuns(p, p.segments());
    ASSERT_FALSE(runs.empty());
    size_t merged = 0;
    for (const auto &run : runs)
      if (run.first == "nn.adam")
        merged += run.second;
    EXPECT_GT(merged, 1u) << "rank " << rank;
  }
}

TEST(MultiTensorPlan, Fp16LossScalingKeepsItsOrder) {
  // Dynamic loss scaling: each update reads its gradient, cast to f32 and
  // unscaled, and is followed by selects (the overflow skips it) and the
  // cast to f16. As on two ranks, freed bytes reused bind some of these to
  // their order; whatever merges, every dependency holds.
  Prepared p("fp16_stage0");
  Runs runs = checkedRuns(p, p.segments());
  size_t adams = 0;
  for (const auto &run : runs)
    if (run.first == "nn.adam")
      adams += run.second;
  EXPECT_GT(adams, 1u);
}

TEST(MultiTensorPlan, OffloadedUpdatesRunOnTheHost) {
  // The updates of an offloaded plan are host functions: none moves.
  Prepared p("f32_stage2_cpu_offload");
  for (const auto &run : checkedRuns(p, p.segments()))
    EXPECT_NE(run.first, "nn.adam");
}

} // namespace
} // namespace zerosbp::runtime
