//===- Trainer.cpp - trains a plan for K steps across ranks ---------------===//

#include "runtime/train/Trainer.h"

#include "runtime/comm/InProcessComm.h"
#include "runtime/core/Error.h"
#include "runtime/exec/Distribution.h"
#include "runtime/io/Npy.h"
#include "runtime/kernels/Kernel.h"
#include "runtime/train/ModelData.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

namespace zerosbp::runtime {

namespace {

KindBytes bytesDelta(const CommStats &now, const CommStats &before) {
  KindBytes delta;
  for (int kind = 0; kind < kNumCollectiveKinds; ++kind)
    delta[kind] = now.bytesSent[kind] - before.bytesSent[kind];
  return delta;
}

void writeInputs(const Plan &plan, const InputFeed &feed,
                 RankExecutor &executor, int64_t step) {
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    executor.writeInput(static_cast<int>(i),
                        shardOf(plan.inputs[i], executor.rank(),
                                feed.globalInput(static_cast<int>(i), step)));
}

void pickThreads(const TrainOptions &options, int ranksHere) {
  int threads = options.threads;
  if (threads <= 0) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    threads = std::max(1, static_cast<int>(cores) / ranksHere);
  }
  setCpuKernelThreads(threads);
}

} // namespace

std::string progressLine(const TrainResult &result, int64_t step,
                         int64_t steps) {
  double stepMs = 0;
  for (const RankRecord &rank : result.ranks)
    if (step < static_cast<int64_t>(rank.times.size()))
      stepMs = std::max(stepMs, rank.times[step].step);
  char head[160];
  std::snprintf(
      head, sizeof(head),
      "step %*lld/%lld  loss %.6f  %.0f tokens/s  %.1f ms  peak MiB/rank",
      static_cast<int>(std::to_string(steps).size()),
      static_cast<long long>(step + 1), static_cast<long long>(steps),
      result.losses[step],
      stepMs > 0 ? result.tokensPerStep / (stepMs / 1000) : 0.0, stepMs);
  std::string line = head;
  for (const RankRecord &rank : result.ranks) {
    char cell[32];
    std::snprintf(cell, sizeof(cell), " %.2f", rank.peaks.total / 1048576.0);
    line += cell;
  }
  return line;
}

std::vector<SavedParameter> savedParameters(const Plan &plan) {
  std::vector<SavedParameter> saved;
  for (size_t i = 0; i < plan.variables.size(); ++i) {
    if (plan.variables[i].role != Role::Param)
      continue;
    SavedParameter entry{static_cast<int>(i), static_cast<int>(i)};
    for (size_t j = 0; j < plan.variables.size(); ++j)
      if (plan.variables[j].copyOf == plan.variables[i].name)
        entry.source = static_cast<int>(j);
    saved.push_back(entry);
  }
  return saved;
}

void saveModel(const Plan &plan, const std::string &dir,
               const std::function<std::vector<double>(int, int)> &shard) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw RuntimeError(dir + ": cannot create directory (" + error.message() +
                       ")");
  for (const SavedParameter &saved : savedParameters(plan)) {
    const PlanVariable &param = plan.variables[saved.param];
    const PlanVariable &variable = plan.variables[saved.source];
    std::vector<double> global(numElements(variable.globalShape), 0.0);
    for (int rank = 0; rank < plan.world; ++rank)
      placeShard(variable, rank, shard(rank, saved.source), global);
    NpyArray array;
    array.dtype = DType::F32;
    array.shape = param.modelShape();
    int64_t count = numElements(array.shape);
    array.data.resize(count * 4);
    for (int64_t e = 0; e < count; ++e) {
      float value = static_cast<float>(global[e]);
      std::memcpy(array.data.data() + e * 4, &value, 4);
    }
    writeNpy(dir + "/" + param.name + ".npy", array);
  }
}

TrainResult trainInProcess(const Plan &plan, const TrainOptions &options,
                           std::ostream &progress) {
  checkRankCount(plan, options.ranks);
  InitialModel model(plan, options.initDir, options.seed);
  InputFeed feed(plan, options.dataDir, options.steps, options.seed);
  pickThreads(options, options.ranks);

  int n = options.ranks;
  InProcessWorld world(n);
  TrainResult result;
  result.tokensPerStep = feed.tokensPerStep();
  result.losses.assign(options.steps, 0.0);
  result.ranks.resize(n);
  std::vector<std::unique_ptr<RankExecutor>> executors(n);
  std::vector<int> finished(options.steps, 0);
  std::mutex mutex;
  std::string firstError;

  auto runRank = [&](int rank) {
    Communicator &comm = world.communicator(rank);
    comm.setTimeout(std::chrono::milliseconds(
        static_cast<int64_t>(options.timeoutSeconds * 1000)));
    try {
      executors[rank] = std::make_unique<RankExecutor>(plan, rank, comm);
      RankExecutor &executor = *executors[rank];
      executor.initializeVariables([&](const PlanVariable &variable) {
        return model.valuesOf(variable);
      });
      RankRecord &record = result.ranks[rank];
      for (int64_t step = 0; step < options.steps; ++step) {
        writeInputs(plan, feed, executor, step);
        CommStats before = comm.stats();
        double loss = executor.runStep(step + 1);
        std::lock_guard<std::mutex> lock(mutex);
        record.times.push_back(executor.lastStepTimes());
        record.bytesSent.push_back(bytesDelta(comm.stats(), before));
        record.peaks = executor.memoryPeaks();
        if (rank == 0)
          result.losses[step] = loss;
        if (++finished[step] == n && options.progress)
          progress << progressLine(result, step, options.steps) << std::endl;
      }
    } catch (const std::exception &error) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (firstError.empty())
          firstError = "rank " + std::to_string(rank) + ": " + error.what();
      }
      comm.abort(error.what());
    }
  };
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank)
    threads.emplace_back(runRank, rank);
  for (std::thread &thread : threads)
    thread.join();
  if (!firstError.empty())
    throw RuntimeError(firstError);
  if (options.saveDir)
    saveModel(plan, *options.saveDir, [&](int rank, int variable) {
      return executors[rank]->variableShard(variable);
    });
  return result;
}

TrainResult trainOneRank(
    const Plan &plan, const TrainOptions &options, Communicator &comm,
    const std::function<std::vector<double>(const std::vector<double> &)>
        &gather,
    std::ostream &progress) {
  checkRankCount(plan, comm.worldSize());
  InitialModel model(plan, options.initDir, options.seed);
  InputFeed feed(plan, options.dataDir, options.steps, options.seed);
  pickThreads(options, 1);
  comm.setTimeout(std::chrono::milliseconds(
      static_cast<int64_t>(options.timeoutSeconds * 1000)));
  int rank = comm.rank();
  int n = comm.worldSize();
  RankExecutor executor(plan, rank, comm);
  executor.initializeVariables(
      [&](const PlanVariable &variable) { return model.valuesOf(variable); });
  TrainResult result;
  result.tokensPerStep = feed.tokensPerStep();
  result.ranks.resize(n);
  for (int64_t step = 0; step < options.steps; ++step) {
    writeInputs(plan, feed, executor, step);
    CommStats before = comm.stats();
    double loss = executor.runStep(step + 1);
    KindBytes sent = bytesDelta(comm.stats(), before);
    const StepTimes &times = executor.lastStepTimes();
    const MemoryPeaks &peaks = executor.memoryPeaks();
    // One record per rank: times, bytes by kind, peaks by role.
    std::vector<double> mine = {times.step,
                                times.forward,
                                times.backward,
                                times.optimizer,
                                times.commWait,
                                times.commBusy,
                                double(peaks.total),
                                double(peaks.modelStates),
                                double(peaks.highWater)};
    for (int64_t bytes : sent)
      mine.push_back(static_cast<double>(bytes));
    for (int64_t bytes : peaks.byRole)
      mine.push_back(static_cast<double>(bytes));
    std::vector<double> all = gather(mine);
    size_t width = mine.size();
    for (int r = 0; r < n; ++r) {
      const double *at = all.data() + r * width;
      StepTimes record{at[0], at[1], at[2], at[3], at[4], at[5]};
      RankRecord &target = result.ranks[r];
      target.times.push_back(record);
      target.peaks.total = static_cast<int64_t>(at[6]);
      target.peaks.modelStates = static_cast<int64_t>(at[7]);
      target.peaks.highWater = static_cast<int64_t>(at[8]);
      KindBytes bytes;
      for (int kind = 0; kind < kNumCollectiveKinds; ++kind)
        bytes[kind] = static_cast<int64_t>(at[9 + kind]);
      target.bytesSent.push_back(bytes);
      for (int role = 0; role < kNumRoles; ++role)
        target.peaks.byRole[role] =
            static_cast<int64_t>(at[9 + kNumCollectiveKinds + role]);
    }
    result.losses.push_back(loss);
    if (rank == 0 && options.progress)
      progress << progressLine(result, step, options.steps) << std::endl;
  }
  if (options.saveDir) {
    // Every rank's shard of each saved variable; shards of a variable all
    // have its local shape, so they gather as equal parts.
    std::map<int, std::vector<std::vector<double>>> shards;
    for (const SavedParameter &saved : savedParameters(plan)) {
      int64_t count = numElements(plan.variables[saved.source].localShape);
      std::vector<double> all = gather(executor.variableShard(saved.source));
      std::vector<std::vector<double>> &parts = shards[saved.source];
      for (int r = 0; r < n; ++r)
        parts.emplace_back(all.begin() + r * count,
                           all.begin() + (r + 1) * count);
    }
    if (rank == 0)
      saveModel(plan, *options.saveDir,
                [&](int r, int variable) { return shards[variable][r]; });
  }
  return result;
}

} // namespace zerosbp::runtime
