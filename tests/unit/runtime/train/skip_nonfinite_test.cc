//===- skip_nonfinite_test.cc - steps with a non-finite loss --------------===//
//
// A step whose loss is not finite leaves every variable and the step count
// as they were, and the steps after it train as if it had not run: on the
// CPU executor, which stops the step before its first update, and on an
// executor that cannot (the session then restores the variables).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/exec/Distribution.h"
#include "runtime/exec/RankExecutor.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/ModelData.h"
#include "runtime/train/TrainingSession.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace zerosbp::runtime;

namespace {

/// The CPU executor, but one that cannot stop a step before its updates.
class NoStopExecutor : public RankExecutor {
public:
  using RankExecutor::RankExecutor;
  bool setSkipNonfiniteSteps(bool on) override {
    RankExecutor::setSkipNonfiniteSteps(false);
    return !on;
  }
};

const bool kRegistered = registerExecutor(
    "cpu-no-stop", [](const Plan &plan, int rank, Communicator &comm) {
      return std::make_unique<NoStopExecutor>(plan, rank, comm);
    });

/// The tutorial MLP on 4 ranks at `stage`, compiled for this test.
Plan compileMlp(int stage) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/mlp" +
                     std::to_string(stage) + ".zplan";
  std::string command =
      "compiler/tools/zero-compile/zero-compile examples/mlp/mlp.mlir "
      "--world=4 --stage=" +
      std::to_string(stage) + " --report=none -o " + path;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return readPlan(path);
}

/// Batch `index`: x uniform in [-1, 1), labels in [0, 10).
std::vector<std::vector<double>> batch(const Plan &plan, int index) {
  std::mt19937 random(index);
  std::vector<std::vector<double>> inputs;
  for (const PlanInput &input : plan.inputs) {
    std::vector<double> &values = inputs.emplace_back();
    int64_t count = numElements(input.globalShape);
    for (int64_t e = 0; e < count; ++e)
      values.push_back(input.dtype == DType::I64
                           ? static_cast<double>(random() % 10)
                           : std::uniform_real_distribution<>(-1, 1)(random));
  }
  return inputs;
}

double step(TrainingSession &session,
            const std::vector<std::vector<double>> &inputs) {
  return session.step([&](int index) { return inputs[index]; });
}

/// Every variable's global value, bit for bit comparable.
std::vector<std::vector<double>> state(TrainingSession &session) {
  std::vector<std::vector<double>> values;
  for (size_t v = 0; v < session.plan().variables.size(); ++v)
    values.push_back(session.globalValue(static_cast<int>(v)));
  return values;
}

void initialize(TrainingSession &session) {
  InitialModel model(session.plan(), std::nullopt, 7);
  session.initialize(
      [&](const PlanVariable &variable) { return model.valuesOf(variable); });
}

class SkipNonfinite
    : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(SkipNonfinite, BadBatchLeavesTheStateAndLaterStepsAsWithoutIt) {
  ASSERT_TRUE(kRegistered);
  auto [stage, device] = GetParam();
  Plan plan = compileMlp(stage);
  std::vector<std::vector<double>> bad = batch(plan, 1);
  bad[0][5 * 256 + 3] = NAN; // A sample of one rank's share.

  TrainingSession session(plan, 60, device);
  session.setSkipNonfiniteSteps(true);
  initialize(session);
  double first = step(session, batch(plan, 0));
  std::vector<std::vector<double>> before = state(session);
  EXPECT_TRUE(std::isnan(step(session, bad)));
  EXPECT_EQ(session.lastSkip(), "step 2: the loss is nan");
  EXPECT_EQ(session.stepsRun(), 1);
  EXPECT_EQ(session.stepsSkipped(), 1);
  std::vector<std::vector<double>> after = state(session);
  for (size_t v = 0; v < before.size(); ++v)
    EXPECT_EQ(0, std::memcmp(before[v].data(), after[v].data(),
                             before[v].size() * sizeof(double)))
        << plan.variables[v].name;
  double next = step(session, batch(plan, 2));
  EXPECT_EQ(session.lastSkip(), "");
  EXPECT_EQ(session.stepsRun(), 2);

  TrainingSession clean(plan, 60, "cpu");
  initialize(clean);
  EXPECT_EQ(step(clean, batch(plan, 0)), first);
  EXPECT_EQ(step(clean, batch(plan, 2)), next);
  std::vector<std::vector<double>> expected = state(clean);
  after = state(session);
  for (size_t v = 0; v < expected.size(); ++v)
    EXPECT_EQ(0, std::memcmp(expected[v].data(), after[v].data(),
                             expected[v].size() * sizeof(double)))
        << plan.variables[v].name;
}

INSTANTIATE_TEST_SUITE_P(
    StagesAndExecutors, SkipNonfinite,
    ::testing::Combine(::testing::Values(0, 2, 3),
                       ::testing::Values("cpu", "cpu-no-stop")),
    [](const auto &info) {
      std::string device = std::get<1>(info.param);
      for (char &c : device)
        if (c == '-')
          c = '_';
      return "stage" + std::to_string(std::get<0>(info.param)) + "_" + device;
    });

TEST(SkipNonfinite, WithoutItTheStepThrowsAndCounts) {
  Plan plan = compileMlp(2);
  std::vector<std::vector<double>> bad = batch(plan, 1);
  bad[0][0] = NAN;
  TrainingSession session(plan, 60, "cpu");
  initialize(session);
  try {
    step(session, bad);
    FAIL() << "no error";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "step 1: the loss is nan");
  }
  EXPECT_EQ(session.stepsRun(), 1);
}

} // namespace
