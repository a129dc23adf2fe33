//===- Trainer.cpp - trains a plan for K steps across ranks ---------------===//

#include "runtime/train/Trainer.h"

#include "runtime/core/Error.h"
#include "runtime/exec/Distribution.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/Npy.h"
#include "runtime/kernels/Kernel.h"
#include "runtime/train/Interrupt.h"
#include "runtime/train/ModelData.h"
#include "runtime/train/Report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <malloc.h>
#include <map>
#include <memory>
#include <thread>
#include <unistd.h>

namespace zerosbp::runtime {

void pickKernelThreads(int threads, int ranksHere) {
  if (threads <= 0) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    threads = std::max(1, static_cast<int>(cores) / std::max(1, ranksHere));
  }
  setCpuKernelThreads(threads);
}

int mpiRanksOnThisMachine() {
  const char *text = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int ranks = text ? std::atoi(text) : 0;
  return ranks > 0 ? ranks : 1;
}

std::string progressLine(const TrainResult &result, int64_t step,
                         int64_t steps) {
  double stepMs = 0;
  for (const RankRecord &rank : result.ranks)
    if (step < static_cast<int64_t>(rank.times.size()))
      stepMs = std::max(stepMs, rank.times[step].step);
  char head[160];
  std::snprintf(
      head, sizeof(head),
      "%s %*lld/%lld  loss %.6f  %.0f tokens/s  %.1f ms  peak MiB/rank",
      result.evaluation ? "batch" : "step",
      static_cast<int>(std::to_string(result.firstStep + steps).size()),
      static_cast<long long>(result.firstStep + step + 1),
      static_cast<long long>(result.firstStep + steps), result.losses[step],
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

namespace {

std::string withoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  return path;
}

/// `path`'s directory ("." for a bare name) and its last component.
std::pair<std::string, std::string> splitPath(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

/// Every occurrence of `from` in `text` replaced by `to`.
std::string replaceAll(std::string text, const std::string &from,
                       const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

} // namespace

SaveTarget::SaveTarget(const std::string &path)
    : dir(withoutTrailingSlashes(path)) {
  auto [parent, name] = splitPath(dir);
  createDirectories(parent);
  lock = std::make_unique<PathLock>(dir);
  std::error_code error;
  // Replacing the directory as a whole removes what else it holds: only a
  // saved model (.npy files) is replaced.
  if (std::filesystem::exists(dir, error)) {
    if (!std::filesystem::is_directory(dir, error))
      throw RuntimeError(dir + ": exists and is not a directory");
    for (const auto &entry : std::filesystem::directory_iterator(dir, error)) {
      std::string file = entry.path().filename().string();
      if (!entry.is_regular_file(error) || file.size() < 5 ||
          file.compare(file.size() - 4, 4, ".npy") != 0)
        throw RuntimeError(dir + ": holds '" + file +
                           "', which is not a saved parameter (.npy); "
                           "not replacing it");
    }
  }
  // What a killed save left (the lock says no save runs now).
  std::string stale = "." + name + ".partial-";
  std::vector<std::string> leftovers;
  for (const auto &entry : std::filesystem::directory_iterator(parent, error))
    if (entry.path().filename().string().rfind(stale, 0) == 0)
      leftovers.push_back(entry.path().string());
  for (const std::string &leftover : leftovers)
    removeTree(leftover);
}

void SaveTarget::write(
    const Plan &plan,
    const std::function<std::vector<double>(int)> &globalValue) {
  writeDirectory(
      [&](const std::string &into) { writeFiles(plan, into, globalValue); });
}

void SaveTarget::writeArrays(
    const std::vector<std::pair<std::string, NpyArray>> &arrays) {
  writeDirectory([&](const std::string &into) {
    for (const auto &[name, array] : arrays)
      writeNpy(into + "/" + name + ".npy", array);
  });
}

void SaveTarget::writeDirectory(
    const std::function<void(const std::string &into)> &writeFilesInto) {
  // Every file goes into a sibling directory that then replaces `dir` in
  // one step (docs/runtime.md#files-are-whole-or-absent): a full disk, a
  // kill or a failed write leaves the previous model as it was.
  auto [parent, name] = splitPath(dir);
  std::string partial = (parent == "." ? "" : parent + "/") + "." + name +
                        ".partial-" +
                        std::to_string(static_cast<long>(::getpid()));
  removeTree(partial);
  std::error_code error;
  std::filesystem::create_directory(partial, error);
  if (error)
    throw RuntimeError(dir + ": cannot create " + partial + " next to it (" +
                       error.message() + ")");
  try {
    writeFilesInto(partial);
    syncDirectory(partial);
    replaceDirectory(partial, dir);
  } catch (const RuntimeError &failure) {
    removeTree(partial);
    // Name the files where the user will look for them.
    throw RuntimeError(replaceAll(failure.what(), partial, dir));
  }
}

void SaveTarget::writeFiles(
    const Plan &plan, const std::string &into,
    const std::function<std::vector<double>(int)> &globalValue) {
  for (const SavedParameter &saved : savedParameters(plan)) {
    const PlanVariable &param = plan.variables[saved.param];
    std::vector<double> global = globalValue(saved.source);
    NpyArray array;
    array.dtype = DType::F32;
    array.shape = param.modelShape();
    int64_t count = numElements(array.shape);
    array.data.resize(count * 4);
    for (int64_t e = 0; e < count; ++e) {
      float value = static_cast<float>(global[e]);
      std::memcpy(array.data.data() + e * 4, &value, 4);
    }
    writeNpy(into + "/" + param.name + ".npy", array);
  }
}

void saveModel(const Plan &plan, const std::string &dir,
               const std::function<std::vector<double>(int)> &globalValue) {
  SaveTarget(dir).write(plan, globalValue);
}

namespace {

/// Saves a checkpoint of the session's state and reports it.
void saveCheckpoint(TrainingSession &session, const TrainOptions &options,
                    uint64_t seed, bool reporter, std::ostream &progress,
                    TrainResult &result) {
  auto begin = std::chrono::steady_clock::now();
  std::string path =
      session.saveCheckpoint(*options.checkpointDir, options.keep, seed);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - begin)
                  .count();
  result.checkpoints.push_back({session.stepsRun(), path, ms});
  if (reporter && options.progress)
    progress << "checkpoint " << path << " saved in "
             << static_cast<int64_t>(ms) << " ms" << std::endl;
}

/// --eval goes with an inference plan, and a training plan without it;
/// what trains (checkpoints, --save, gradient checks) does not evaluate.
void checkEvaluationFlags(const Plan &plan, const TrainOptions &options) {
  if (plan.inference && !options.eval)
    throw RuntimeError(options.planPath +
                       " is an inference plan (zero-compile --eval): run it "
                       "with --eval");
  if (!plan.inference && options.eval)
    throw RuntimeError("--eval: " + options.planPath +
                       " is a training plan; compile an inference plan with "
                       "zero-compile --eval");
  if (!options.eval && options.outputsDir)
    throw RuntimeError("--outputs needs --eval");
  if (!options.eval)
    return;
  const char *trainingOnly = options.checkpointDir    ? "--checkpoint-dir"
                             : options.saveDir        ? "--save"
                             : options.checkGradients ? "--check-gradients"
                             : options.skipNonfiniteSteps
                                 ? "--skip-nonfinite-steps"
                                 : nullptr;
  if (trainingOnly)
    throw RuntimeError(std::string(trainingOnly) +
                       " trains; --eval runs the forward only");
}

/// The first 0-D output of an inference plan (its loss, if it has one).
std::optional<int> scalarOutput(const Plan &plan) {
  for (size_t k = 0; k < plan.outputs.size(); ++k)
    if (plan.values[plan.outputs[k]].shape.empty())
      return static_cast<int>(k);
  return std::nullopt;
}

/// --eval: batch b reads data row b; every output of every batch is kept
/// for --outputs, stacked along a new first axis.
void evaluateBatches(TrainingSession &session, const TrainOptions &options,
                     uint64_t seed, SaveTarget *outputs, bool reporter,
                     std::ostream &progress, TrainResult &result) {
  const Plan &plan = session.plan();
  InputFeed feed(plan, options.dataDir, options.steps, seed);
  result.tokensPerStep = feed.tokensPerStep();
  result.evaluation = true;
  // Batches count from 1 whatever step the parameters were saved at.
  result.firstStep = 0;
  std::optional<int> scalar = scalarOutput(plan);
  std::vector<NpyArray> stacked(plan.outputs.size());
  for (size_t k = 0; k < stacked.size(); ++k) {
    const std::vector<int64_t> &shape = plan.values[plan.outputs[k]].shape;
    stacked[k].dtype = DType::F32;
    stacked[k].shape = {options.steps};
    stacked[k].shape.insert(stacked[k].shape.end(), shape.begin(), shape.end());
  }
  for (int64_t batch = 0; batch < options.steps; ++batch) {
    throwIfInterrupted();
    std::vector<std::vector<double>> values = session.evaluate(
        [&](int input) { return feed.globalInput(input, batch); });
    result.losses.push_back(scalar ? values[*scalar][0] : 0.0);
    result.ranks = session.records();
    result.cudaGraph = session.cudaGraphStatus();
    result.multiTensor = session.multiTensorStatus();
    result.deviceComm = session.deviceComm();
    if (options.outputsDir)
      for (size_t k = 0; k < values.size(); ++k)
        for (double value : values[k]) {
          float narrowed = static_cast<float>(value);
          const auto *bytes =
              reinterpret_cast<const unsigned char *>(&narrowed);
          stacked[k].data.insert(stacked[k].data.end(), bytes, bytes + 4);
        }
    if (reporter && options.progress)
      progress << progressLine(result, batch, options.steps) << std::endl;
  }
  throwIfInterrupted();
  if (outputs) {
    std::vector<std::pair<std::string, NpyArray>> files;
    for (size_t k = 0; k < stacked.size(); ++k)
      files.emplace_back("output" + std::to_string(k), std::move(stacked[k]));
    outputs->writeArrays(files);
  }
}

/// The step loop both backends share: initial values (or a checkpoint's),
/// one step per input row, a progress line per step, checkpoints, the
/// saved model.
TrainResult runSteps(TrainingSession &session, const TrainOptions &options,
                     bool reporter, std::ostream &progress) {
  const Plan &plan = session.plan();
  if (options.resumeDir && options.initDir)
    throw RuntimeError("--init and --resume both set the parameters; give "
                       "one");
  // Overflowing gradients are routine there: the step is skipped.
  if (options.checkGradients && plan.scalesLossDynamically())
    throw RuntimeError("--check-gradients: the plan scales the loss "
                       "dynamically (fp16), and steps whose gradients are "
                       "not finite skip their updates");
  checkEvaluationFlags(plan, options);
  session.setGradientChecks(options.checkGradients);
  session.setSkipNonfiniteSteps(options.skipNonfiniteSteps);
  session.setDeviceOptions(options.deviceOptions);
  // Only the reporting process writes the manifest, so it holds the lock;
  // a second run saving into the directory stops here, before training.
  std::unique_ptr<DirectoryLock> lock;
  // Likewise --save: its directory is locked and checked before training.
  std::unique_ptr<SaveTarget> saveTarget;
  if (options.saveDir && reporter)
    saveTarget = std::make_unique<SaveTarget>(*options.saveDir);
  if (options.outputsDir && reporter)
    saveTarget = std::make_unique<SaveTarget>(*options.outputsDir);
  if (options.checkpointDir && reporter) {
    createDirectories(*options.checkpointDir);
    lock = std::make_unique<DirectoryLock>(*options.checkpointDir);
    // What a killed run's save left (docs/checkpoint.md#saving).
    std::string removed = removePartialCheckpoints(*options.checkpointDir);
    if (!removed.empty())
      std::cerr << "zero-run: " << removed << std::endl;
  }
  TrainResult result;
  uint64_t seed = options.seed;
  if (options.resumeDir) {
    auto begin = std::chrono::steady_clock::now();
    CheckpointManifest manifest =
        session.loadCheckpoint(*options.resumeDir, &result.load);
    result.loadMilliseconds = std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - begin)
                                  .count();
    if (options.seedGiven && options.seed != manifest.seed)
      throw RuntimeError("--seed " + std::to_string(options.seed) +
                         " differs from the checkpoint's seed " +
                         std::to_string(manifest.seed) +
                         " (the data would not continue where it stopped)");
    seed = manifest.seed;
    // Steps skipped for a non-finite loss read their rows too.
    result.firstStep = manifest.dataNextStep;
    if (reporter && options.progress)
      progress << "resumed from " << *options.resumeDir << " at step "
               << manifest.step << " (saved on " << manifest.world
               << " ranks, stage "
               << (manifest.stage ? std::to_string(*manifest.stage) : "-")
               << ")" << std::endl;
  } else {
    InitialModel model(plan, options.initDir, seed);
    session.initialize(
        [&](const PlanVariable &variable) { return model.valuesOf(variable); });
  }
  if (options.eval) {
    evaluateBatches(session, options, seed, saveTarget.get(), reporter,
                    progress, result);
    return result;
  }
  // Step s of the whole training (resumed steps included) reads data row s.
  InputFeed feed(plan, options.dataDir, result.firstStep + options.steps, seed);
  result.tokensPerStep = feed.tokensPerStep();
  for (int64_t step = 0; step < options.steps; ++step) {
    // SIGINT or SIGTERM (zero-run in process): stop between steps.
    throwIfInterrupted();
    if (options.tracePath && step + 1 == options.steps)
      session.setTracing(true);
    int64_t dataRow = result.firstStep + step;
    result.losses.push_back(session.step(
        [&](int input) { return feed.globalInput(input, dataRow); }));
    result.ranks = session.records();
    bool skipped = !session.lastSkip().empty();
    if (skipped) {
      // Numbered as the progress lines are; the state's step count (Adam's,
      // dropout's, a checkpoint's) counts the updates made.
      result.skippedSteps.push_back(dataRow + 1);
      double loss = result.losses.back();
      if (reporter)
        std::cerr << "zero-run: step " << dataRow + 1 << ": the loss is "
                  << (std::isnan(loss) ? "nan"
                      : loss > 0       ? "inf"
                                       : "-inf")
                  << "; skipped (parameters, optimizer state and step count "
                     "unchanged)"
                  << std::endl;
    } else if (reporter && options.progress) {
      progress << progressLine(result, step, options.steps) << std::endl;
    }
    result.cudaGraph = session.cudaGraphStatus();
    result.multiTensor = session.multiTensorStatus();
    result.deviceComm = session.deviceComm();
    bool last = step + 1 == options.steps;
    // The last step saves even when skipped: the state is the last
    // checkpoint's, but the data position (rows read) has moved on.
    if (options.checkpointDir &&
        (last || (!skipped && options.checkpointEvery > 0 &&
                  session.stepsRun() % options.checkpointEvery == 0)))
      saveCheckpoint(session, options, seed, reporter, progress, result);
  }
  // Freed set-up memory (initial values, data) may stay in malloc's heap;
  // handed back, what is resident is what the run holds.
  ::malloc_trim(0);
  result.residentBytes = processStatusBytes("VmRSS");
  throwIfInterrupted();
  if (options.tracePath) {
    // Under MPI every process writes its own rank's timeline.
    std::string path = *options.tracePath;
    if (!reporter)
      path += ".rank" + std::to_string(session.rank());
    writeOutputFile(path, chromeTraceJson(session.lastStepTraces()) + "\n",
                    "trace");
  }
  if (options.saveDir) {
    // Collective over a communicator: every rank gathers, one writes.
    std::map<int, std::vector<double>> values;
    for (const SavedParameter &saved : savedParameters(plan))
      values[saved.source] = session.globalValue(saved.source);
    throwIfInterrupted();
    if (saveTarget)
      saveTarget->write(plan,
                        [&](int variable) { return values.at(variable); });
  }
  return result;
}

} // namespace

std::string runDevice(const Plan &plan, const TrainOptions &options) {
  return options.device.empty() ? plan.device : options.device;
}

TrainResult trainInProcess(const Plan &plan, const TrainOptions &options,
                           std::ostream &progress) {
  checkRankCount(plan, options.ranks);
  pickKernelThreads(options.threads, options.ranks);
  TrainingSession session(plan, options.timeoutSeconds,
                          runDevice(plan, options));
  // A signal also stops the step in flight, at its ranks' next collective.
  InterruptHook hook([&session](int signal) {
    session.interrupt("interrupted by " + signalName(signal));
  });
  return runSteps(session, options, /*reporter=*/true, progress);
}

TrainResult trainOneRank(const Plan &plan, const TrainOptions &options,
                         Communicator &comm, const GatherFn &gather,
                         std::ostream &progress) {
  checkRankCount(plan, comm.worldSize());
  pickKernelThreads(options.threads, mpiRanksOnThisMachine());
  TrainingSession session(plan, comm, gather, options.timeoutSeconds,
                          runDevice(plan, options));
  return runSteps(session, options, /*reporter=*/comm.rank() == 0, progress);
}

} // namespace zerosbp::runtime
