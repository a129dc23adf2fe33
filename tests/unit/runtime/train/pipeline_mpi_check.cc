//===- pipeline_mpi_check.cc - pipeline stages as MPI processes -----------===//
//
// Run with `mpirun -n 2 pipeline_mpi_check`: the two-stage plan of
// tests/unit/runtime/pipeline_test_plan.h trained by one process per stage,
// its send_recv over MPI. Every process must see stage 0's loss (only
// stage 0 computes it), so that all stop or skip a step together; the
// variables gather from their stage's process; a step with a non-finite
// loss is undone on both stages. Then the plan whose send_recv come in
// halves (kSplitPipelinePlan): each process runs its half of every
// message, the send half never waiting for its receiver. Rank 0 prints
// "pipeline_mpi_check: OK"
// when every rank passed; the exit status is non-zero otherwise.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiComm.h"
#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/TrainingSession.h"
#include "tests/unit/runtime/pipeline_test_plan.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <vector>

using namespace zerosbp::runtime;

namespace {

std::vector<double> initialValue(const PlanVariable &variable) {
  static const std::map<std::string, std::vector<double>> values = {
      {"w", {1, 2, 3, 4}},
      {"u", {5, 6, 7, 8}},
      {"v", {10, 20, 30, 40}},
      {"t", {7, 7, 7, 7}}};
  return values.at(variable.name);
}

int failures = 0;

void expect(bool condition, int rank, const std::string &what) {
  if (condition)
    return;
  std::fprintf(stderr, "pipeline_mpi_check: rank %d: %s\n", rank, what.c_str());
  ++failures;
}

double step(TrainingSession &session, double x) {
  return session.step([x](int) { return std::vector<double>(4, x); });
}

void check(MpiSession &mpi, Communicator &comm) {
  PlanReadOptions options;
  options.verifyChecksum = false; // Written by hand.
  Plan plan =
      parsePlan(zerosbp::testing::kPipelinePlan, "pipeline.zplan", options);
  int rank = mpi.rank();
  TrainingSession session(
      plan, comm,
      [&mpi](const std::vector<double> &mine) {
        return mpi.gatherRecords(mine, std::chrono::seconds(30));
      },
      30);
  session.setSkipNonfiniteSteps(true);
  session.initialize(initialValue);
  double loss = step(session, NAN);
  expect(std::isnan(loss), rank, "step 1's loss is not nan");
  expect(session.lastSkip() == "step 1: the loss is nan", rank,
         "step 1 was not skipped");
  loss = step(session, 0.5);
  expect(loss == 12.5, rank, "step 2's loss is " + std::to_string(loss));
  loss = step(session, 0.5);
  expect(loss == 31.5, rank, "step 3's loss is " + std::to_string(loss));
  std::map<std::string, std::vector<double>> expected = {
      {"w", {0.25, 0.5, 0.75, 1}},
      {"u", {5, 6, 7, 8}},
      {"v", {90, 180, 270, 360}},
      {"t", {7, 7, 7, 7}}};
  for (size_t v = 0; v < plan.variables.size(); ++v)
    expect(session.globalValue(static_cast<int>(v)) ==
               expected[plan.variables[v].name],
           rank, "variable '" + plan.variables[v].name + "' differs");
  for (const RankRecord &record : session.records())
    expect(!record.bytesSent.empty() &&
               record.bytesSent
                       .back()[static_cast<int>(CollectiveKind::SendRecv)] ==
                   16,
           rank, "a rank did not send 16 bytes in the last step");
}

/// The plan of send and receive halves: stage 1 computes k = v + t before
/// it receives, and e = 2w + x + v + t.
void checkHalves(MpiSession &mpi, Communicator &comm) {
  PlanReadOptions options;
  options.verifyChecksum = false; // Written by hand.
  Plan plan = parsePlan(zerosbp::testing::kSplitPipelinePlan,
                        "split_pipeline.zplan", options);
  int rank = mpi.rank();
  TrainingSession session(
      plan, comm,
      [&mpi](const std::vector<double> &mine) {
        return mpi.gatherRecords(mine, std::chrono::seconds(30));
      },
      30);
  session.initialize(initialValue);
  double loss = step(session, 0.5);
  expect(loss == 19.5, rank,
         "halves: step 1's loss is " + std::to_string(loss));
  loss = step(session, 0.5);
  expect(loss == 38.5, rank,
         "halves: step 2's loss is " + std::to_string(loss));
  std::map<std::string, std::vector<double>> expected = {
      {"w", {0.25, 0.5, 0.75, 1}},
      {"u", {5, 6, 7, 8}},
      {"v", {90, 180, 270, 360}},
      {"t", {7, 7, 7, 7}}};
  for (size_t v = 0; v < plan.variables.size(); ++v)
    expect(session.globalValue(static_cast<int>(v)) ==
               expected[plan.variables[v].name],
           rank, "halves: variable '" + plan.variables[v].name + "' differs");
  for (const RankRecord &record : session.records())
    expect(!record.bytesSent.empty() &&
               record.bytesSent
                       .back()[static_cast<int>(CollectiveKind::SendRecv)] ==
                   16,
           rank, "halves: a rank did not send 16 bytes in the last step");
}

} // namespace

int main(int argc, char **argv) {
  try {
    MpiSession mpi(&argc, &argv, std::chrono::seconds(30));
    if (mpi.size() != 2) {
      std::fprintf(stderr, "pipeline_mpi_check: run it on 2 ranks\n");
      return 2;
    }
    std::unique_ptr<Communicator> comm = mpi.communicator();
    check(mpi, *comm);
    checkHalves(mpi, *comm);
    std::vector<double> all = mpi.gatherRecords({static_cast<double>(failures)},
                                                std::chrono::seconds(30));
    double total = std::accumulate(all.begin(), all.end(), 0.0);
    if (mpi.rank() == 0)
      std::printf(total == 0 ? "pipeline_mpi_check: OK\n"
                             : "pipeline_mpi_check: %g failures\n",
                  total);
    comm.reset();
    return total == 0 ? 0 : 1;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "pipeline_mpi_check: %s\n", error.what());
    return 1;
  }
}
