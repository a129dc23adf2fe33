//===- pipeline_session_test.cc - training sessions on pipeline stages ----===//
//
// The two-stage plan of tests/unit/runtime/pipeline_test_plan.h trained by
// an in-process TrainingSession: the loss reported is stage 0's, the
// variables gather from their stage's ranks only, a checkpoint holds each
// variable's blocks from its stage's ranks and loads back into the same
// state, and a step with a non-finite loss is undone on every stage (the
// session restores what each rank holds). The stages' buffers share arena
// bytes, so a rank that touched another stage's variable would show.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/TrainingSession.h"
#include "tests/unit/runtime/pipeline_test_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace zerosbp::runtime {
namespace {

Plan pipelinePlan() {
  PlanReadOptions options;
  options.verifyChecksum = false; // Written by hand.
  return parsePlan(testing::kPipelinePlan, "pipeline.zplan", options);
}

std::vector<double> initialValue(const PlanVariable &variable) {
  static const std::map<std::string, std::vector<double>> values = {
      {"w", {1, 2, 3, 4}},
      {"u", {5, 6, 7, 8}},
      {"v", {10, 20, 30, 40}},
      {"t", {7, 7, 7, 7}}};
  return values.at(variable.name);
}

double step(TrainingSession &session, double x) {
  return session.step([x](int) { return std::vector<double>(4, x); });
}

/// Every variable's global value, by name.
std::map<std::string, std::vector<double>> state(TrainingSession &session) {
  std::map<std::string, std::vector<double>> values;
  const Plan &plan = session.plan();
  for (size_t v = 0; v < plan.variables.size(); ++v)
    values[plan.variables[v].name] = session.globalValue(static_cast<int>(v));
  return values;
}

const std::map<std::string, std::vector<double>> kInitial = {
    {"w", {1, 2, 3, 4}},
    {"u", {5, 6, 7, 8}},
    {"v", {10, 20, 30, 40}},
    {"t", {7, 7, 7, 7}}};

TEST(PipelineSession, ReportsStageZerosLossAndEachStagesVariables) {
  Plan plan = pipelinePlan();
  TrainingSession session(plan, 10);
  session.initialize(initialValue);
  EXPECT_EQ(state(session), kInitial);
  EXPECT_EQ(step(session, 0.5), 12.5);
  EXPECT_EQ(step(session, 0.5), 31.5);
  std::map<std::string, std::vector<double>> expected = kInitial;
  expected["w"] = {0.25, 0.5, 0.75, 1};
  expected["v"] = {90, 180, 270, 360};
  EXPECT_EQ(state(session), expected);
  // Every rank sends one 16-byte message a step.
  const std::vector<RankRecord> &records = session.records();
  ASSERT_EQ(records.size(), 2u);
  for (const RankRecord &record : records) {
    ASSERT_EQ(record.bytesSent.size(), 2u);
    EXPECT_EQ(record.bytesSent[1][static_cast<int>(CollectiveKind::SendRecv)],
              16);
    EXPECT_EQ(record.bytesSentOnAxis[1][0], 16);
  }
}

TEST(PipelineSession, CheckpointsComeFromEachVariablesStage) {
  Plan plan = pipelinePlan();
  std::string directory =
      std::string(std::getenv("TEST_TMPDIR")) + "/pipeline-checkpoints";
  TrainingSession trained(plan, 10);
  trained.initialize(initialValue);
  step(trained, 0.5);
  std::string path = trained.saveCheckpoint(directory, 0, 7);
  std::map<std::string, std::vector<double>> saved = state(trained);
  double next = step(trained, 0.5);

  // Each block is written by a rank of the variable's stage.
  OpenedCheckpoint checkpoint = openCheckpoint(path);
  for (const CheckpointTensor &tensor : checkpoint.manifest.tensors) {
    int stage = plan.findVariable(tensor.name)->stage;
    ASSERT_FALSE(tensor.pieces.empty()) << tensor.name;
    for (const CheckpointPiece &piece : tensor.pieces)
      EXPECT_EQ(plan.stageOf(piece.rank), stage) << tensor.name;
  }

  TrainingSession resumed(plan, 10);
  resumed.initialize([](const PlanVariable &) {
    return std::vector<double>(4, -1.0); // Overwritten by the load.
  });
  resumed.loadCheckpoint(path);
  EXPECT_EQ(state(resumed), saved);
  EXPECT_EQ(resumed.stepsRun(), 1);
  EXPECT_EQ(step(resumed, 0.5), next);
  EXPECT_EQ(state(resumed), state(trained));
}

TEST(PipelineSession, ANonFiniteLossIsUndoneOnEveryStage) {
  Plan plan = pipelinePlan();
  TrainingSession session(plan, 10);
  session.setSkipNonfiniteSteps(true);
  session.initialize(initialValue);
  // x reaches stage 0's loss; both stages update their parameters anyway,
  // and the session restores each rank's own.
  EXPECT_TRUE(std::isnan(step(session, NAN)));
  EXPECT_EQ(session.lastSkip(), "step 1: the loss is nan");
  EXPECT_EQ(session.stepsRun(), 0);
  EXPECT_EQ(state(session), kInitial);
  EXPECT_EQ(step(session, 0.5), 12.5);
  EXPECT_EQ(session.lastSkip(), "");
}

TEST(PipelineSession, WithoutSkippingANonFiniteLossStopsTheRun) {
  Plan plan = pipelinePlan();
  TrainingSession session(plan, 10);
  session.initialize(initialValue);
  try {
    step(session, NAN);
    FAIL() << "no error";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "step 1: the loss is nan");
  }
}

} // namespace
} // namespace zerosbp::runtime
