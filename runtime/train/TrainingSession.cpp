//===- TrainingSession.cpp - a plan trained one step at a time ------------===//

#include "runtime/train/TrainingSession.h"

#include "runtime/comm/InProcessComm.h"
#include "runtime/core/Error.h"
#include "runtime/exec/Distribution.h"
#include "runtime/exec/PreparedProgram.h"
#include "runtime/io/Npy.h"

#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

namespace zerosbp::runtime {

namespace {

std::chrono::milliseconds toMilliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

/// Bytes sent during a step: counters after it less counters before.
template <size_t N>
std::array<int64_t, N> bytesDelta(const std::array<int64_t, N> &now,
                                  const std::array<int64_t, N> &before) {
  std::array<int64_t, N> delta;
  for (size_t i = 0; i < N; ++i)
    delta[i] = now[i] - before[i];
  return delta;
}

/// One rank's step record as a flat vector, for gathering, and back.
std::vector<double> flatten(const StepTimes &times, const KindBytes &sent,
                            const AxisBytes &sentOnAxis,
                            const MemoryPeaks &peaks) {
  std::vector<double> flat = {times.step,
                              times.forward,
                              times.backward,
                              times.optimizer,
                              times.commWait,
                              times.commBusy,
                              double(peaks.total),
                              double(peaks.modelStates),
                              double(peaks.highWater)};
  for (int64_t bytes : sent)
    flat.push_back(static_cast<double>(bytes));
  for (int64_t bytes : peaks.byRole)
    flat.push_back(static_cast<double>(bytes));
  flat.push_back(static_cast<double>(peaks.deviceHeld));
  flat.push_back(times.transferWait);
  flat.push_back(times.transferBusy);
  flat.push_back(times.hostUpdate);
  flat.push_back(times.hostExposed);
  for (const ArenaPeaks *arena : {&peaks.host, &peaks.nvme}) {
    flat.push_back(static_cast<double>(arena->total));
    for (int64_t bytes : arena->byRole)
      flat.push_back(static_cast<double>(bytes));
  }
  for (int64_t bytes : sentOnAxis)
    flat.push_back(static_cast<double>(bytes));
  return flat;
}

void unflatten(const double *at, RankRecord &record) {
  record.times.push_back({at[0], at[1], at[2], at[3], at[4], at[5]});
  record.peaks.total = static_cast<int64_t>(at[6]);
  record.peaks.modelStates = static_cast<int64_t>(at[7]);
  record.peaks.highWater = static_cast<int64_t>(at[8]);
  KindBytes bytes;
  for (int kind = 0; kind < kNumCollectiveKinds; ++kind)
    bytes[kind] = static_cast<int64_t>(at[9 + kind]);
  record.bytesSent.push_back(bytes);
  for (int role = 0; role < kNumRoles; ++role)
    record.peaks.byRole[role] =
        static_cast<int64_t>(at[9 + kNumCollectiveKinds + role]);
  record.peaks.deviceHeld =
      static_cast<int64_t>(at[9 + kNumCollectiveKinds + kNumRoles]);
  const double *rest = at + 10 + kNumCollectiveKinds + kNumRoles;
  record.times.back().transferWait = rest[0];
  record.times.back().transferBusy = rest[1];
  record.times.back().hostUpdate = rest[2];
  record.times.back().hostExposed = rest[3];
  rest += 4;
  for (ArenaPeaks *arena : {&record.peaks.host, &record.peaks.nvme}) {
    arena->total = static_cast<int64_t>(*rest++);
    for (int role = 0; role < kNumRoles; ++role)
      arena->byRole[role] = static_cast<int64_t>(*rest++);
  }
  AxisBytes onAxis;
  for (int axis = 0; axis < kMaxHierarchyAxes; ++axis)
    onAxis[axis] = static_cast<int64_t>(*rest++);
  record.bytesSentOnAxis.push_back(onAxis);
}

/// "step N: the loss is nan" (or inf, -inf).
std::string nonfiniteLossText(double loss, int64_t stepNumber) {
  return "step " + std::to_string(stepNumber) + ": the loss is " +
         (std::isnan(loss) ? "nan"
          : loss > 0       ? "inf"
                           : "-inf");
}

/// `loss`, unless it is NaN or Inf: the updates of that step read
/// non-finite gradients, so training stops with the step. With dynamic loss
/// scaling such a step is an overflow whose updates were skipped
/// (docs/runtime.md#non-finite-numbers).
double finiteLoss(const Plan &plan, double loss, int64_t stepNumber) {
  if (std::isfinite(loss) || plan.scalesLossDynamically())
    return loss;
  throw RuntimeError(nonfiniteLossText(loss, stepNumber));
}

/// The parameter of `owner` that inference variable `variable` runs on:
/// same name, role, dtype and shards on every rank.
int sharedVariableIndex(const PlanVariable &variable, const Plan &owner) {
  const PlanVariable *match = owner.findVariable(variable.name);
  std::string what = "parameter '" + variable.name + "'";
  if (!match || match->role != Role::Param)
    throw RuntimeError(what + " is not a parameter of the training graph");
  // Both plans run on the same ranks (the caller checks the placement).
  bool sameShards = true;
  for (int rank = 0; sameShards && rank < owner.world; ++rank)
    sameShards = match->shard(rank) == variable.shard(rank);
  if (match->dtype != variable.dtype || !sameShards ||
      match->globalShape != variable.globalShape ||
      match->modelShape() != variable.modelShape() ||
      match->modelSplit != variable.modelSplit)
    throw RuntimeError(
        what + " is laid out as " + std::string(dtypeName(variable.dtype)) +
        " " + npyShapeText(variable.localShape) + " per rank here and as " +
        dtypeName(match->dtype) + " " + npyShapeText(match->localShape) +
        " in the training graph; compile both with the same "
        "ZeRO stage, precision and world");
  return static_cast<int>(match - owner.variables.data());
}

} // namespace

TrainingSession::TrainingSession(const Plan &plan, double timeoutSeconds,
                                 const std::string &device)
    : thePlan(plan), world(std::make_unique<InProcessWorld>(plan.world)) {
  checkRankCount(plan, plan.world);
  const ExecutorFactory &makeExecutor = findExecutor(device);
  executors.resize(plan.world);
  rankRecords.resize(plan.world);
  // Executors create their groups collectively, so each on its rank's thread.
  onRankThreads([&](int rank) {
    Communicator &comm = world->communicator(rank);
    comm.setTimeout(toMilliseconds(timeoutSeconds));
    executors[rank] = makeExecutor(thePlan, rank, comm);
  });
}

TrainingSession::TrainingSession(const Plan &plan, Communicator &comm,
                                 GatherFn gather, double timeoutSeconds,
                                 const std::string &device)
    : thePlan(plan), externalComm(&comm), gather(std::move(gather)) {
  checkRankCount(plan, comm.worldSize());
  comm.setTimeout(toMilliseconds(timeoutSeconds));
  executors.push_back(findExecutor(device)(plan, comm.rank(), comm));
  rankRecords.resize(plan.world);
}

TrainingSession::~TrainingSession() = default;

int TrainingSession::rank() const {
  return externalComm ? externalComm->rank() : 0;
}

void TrainingSession::interrupt(const std::string &reason) {
  if (world)
    world->interrupt(reason);
}

void TrainingSession::checkUsable() const {
  if (!failure.empty())
    throw RuntimeError("training stopped after an earlier failure: " + failure);
}

void TrainingSession::onLocalRanks(
    const std::function<void(Executor &)> &body) {
  checkUsable();
  if (externalComm) {
    try {
      body(*executors[0]);
    } catch (const std::exception &error) {
      failure = error.what();
      externalComm->abort(error.what());
      throw;
    }
    return;
  }
  onRankThreads([&](int rank) { body(*executors[rank]); });
}

void TrainingSession::onRankThreads(const std::function<void(int)> &body) {
  std::mutex mutex;
  std::string firstError;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world->size(); ++rank)
    threads.emplace_back([&, rank] {
      try {
        body(rank);
      } catch (const std::exception &error) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (firstError.empty())
            firstError = "rank " + std::to_string(rank) + ": " + error.what();
        }
        world->communicator(rank).abort(error.what());
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  if (!firstError.empty()) {
    failure = firstError;
    throw RuntimeError(firstError);
  }
}

void TrainingSession::initialize(const ModelValuesFn &model) {
  onLocalRanks(
      [&](Executor &executor) { executor.initializeVariables(model); });
}

void TrainingSession::setVariable(int index, const std::vector<double> &model) {
  checkUsable();
  const PlanVariable &variable = thePlan.variables.at(index);
  for (auto &executor : executors)
    if (thePlan.holds(variable, executor->rank()))
      executor->writeVariable(index,
                              shardOf(variable, executor->rank(), model));
}

int TrainingSession::lossRank() const {
  if (thePlan.outputs.empty())
    return 0;
  for (int rank = 0; rank < thePlan.world; ++rank)
    if (thePlan.valueOnStage(thePlan.outputs[0], thePlan.stageOf(rank)))
      return rank;
  return 0;
}

double TrainingSession::step(
    const std::function<std::vector<double>(int)> &globalInputs) {
  if (thePlan.inference)
    throw RuntimeError(thePlan.source +
                       ": an inference plan does not train; evaluate it");
  int64_t stepNumber = steps + 1;
  skipReason.clear();
  std::vector<std::vector<std::vector<unsigned char>>> before;
  if (restoreOnSkip)
    before = copyVariables();
  double loss = runProgram(globalInputs, stepNumber);
  ++batches;
  if (skipNonfinite && !std::isfinite(loss)) {
    if (restoreOnSkip)
      restoreVariables(before);
    ++skippedSteps;
    skipReason = nonfiniteLossText(loss, stepNumber);
    return loss;
  }
  ++steps;
  return finiteLoss(thePlan, loss, stepNumber);
}

void TrainingSession::setSkipNonfiniteSteps(bool on) {
  checkUsable();
  skipNonfinite = on && !thePlan.inference && !thePlan.scalesLossDynamically();
  // One way for every local rank: they all stop before the updates, or
  // none does and the session restores.
  bool stops = true;
  for (auto &executor : executors)
    stops = executor->setSkipNonfiniteSteps(skipNonfinite) && stops;
  restoreOnSkip = skipNonfinite && !stops;
  if (restoreOnSkip)
    for (auto &executor : executors)
      executor->setSkipNonfiniteSteps(false);
}

std::vector<std::vector<std::vector<unsigned char>>>
TrainingSession::copyVariables() const {
  std::vector<std::vector<std::vector<unsigned char>>> copy;
  for (const auto &executor : executors) {
    std::vector<std::vector<unsigned char>> &mine = copy.emplace_back();
    for (size_t v = 0; v < thePlan.variables.size(); ++v) {
      const PlanValue &value = thePlan.values[thePlan.variables[v].value];
      // Another stage's variable stays empty, and is not restored.
      if (!thePlan.holds(thePlan.variables[v], executor->rank())) {
        mine.emplace_back();
        continue;
      }
      std::vector<unsigned char> &bytes = mine.emplace_back(value.bytes());
      executor->readVariableBytes(static_cast<int>(v), 0, bytes.data(),
                                  value.bytes());
    }
  }
  return copy;
}

void TrainingSession::restoreVariables(
    const std::vector<std::vector<std::vector<unsigned char>>> &copy) {
  for (size_t local = 0; local < executors.size(); ++local)
    for (size_t v = 0; v < thePlan.variables.size(); ++v)
      if (thePlan.holds(thePlan.variables[v], executors[local]->rank()))
        executors[local]->writeVariableBytes(
            static_cast<int>(v), 0, copy[local][v].data(),
            static_cast<int64_t>(copy[local][v].size()));
}

std::vector<std::vector<double>> TrainingSession::evaluate(
    const std::function<std::vector<double>(int)> &globalInputs) {
  if (!thePlan.inference)
    throw RuntimeError(thePlan.source +
                       ": a training plan updates its parameters; compile an "
                       "inference plan to evaluate");
  runProgram(globalInputs, steps);
  ++evaluations;
  // In process, from a rank of the outputs' stage.
  Executor &holder = externalComm ? *executors[0] : *executors[lossRank()];
  std::vector<std::vector<double>> outputs;
  for (size_t k = 0; k < thePlan.outputs.size(); ++k)
    outputs.push_back(holder.outputValue(static_cast<int>(k)));
  return outputs;
}

void TrainingSession::shareVariablesWith(TrainingSession &owner) {
  checkUsable();
  const Plan &other = owner.plan();
  if (!thePlan.inference)
    throw RuntimeError(thePlan.source +
                       ": only an inference plan runs on another plan's "
                       "parameters");
  if (other.world != thePlan.world || other.device != thePlan.device ||
      owner.executors.size() != executors.size() || owner.rank() != rank())
    throw RuntimeError(thePlan.source + ": runs on " +
                       std::to_string(thePlan.world) + " " + thePlan.device +
                       " ranks, the parameters' plan on " +
                       std::to_string(other.world) + " " + other.device);
  std::vector<int> source;
  for (const PlanVariable &variable : thePlan.variables)
    source.push_back(sharedVariableIndex(variable, other));
  for (size_t local = 0; local < executors.size(); ++local) {
    std::vector<void *> storage;
    int rank = executors[local]->rank();
    // Another pipeline stage's parameter is not on this rank: null.
    for (size_t v = 0; v < source.size(); ++v)
      storage.push_back(thePlan.holds(thePlan.variables[v], rank)
                            ? owner.executors[local]->variableStorage(source[v])
                            : nullptr);
    executors[local]->shareVariables(storage);
  }
  sharesVariables = true;
}

int64_t TrainingSession::arenaBytesHeld() const {
  return sharesVariables ? thePlan.arenaBytes - variablePrefixBytes(thePlan)
                         : thePlan.arenaBytes;
}

double TrainingSession::runProgram(
    const std::function<std::vector<double>(int)> &globalInputs,
    int64_t stepNumber) {
  std::vector<std::vector<double>> inputs;
  for (size_t i = 0; i < thePlan.inputs.size(); ++i)
    inputs.push_back(globalInputs(static_cast<int>(i)));
  std::vector<double> losses(executors.size(), 0.0);
  std::vector<KindBytes> sent(executors.size());
  std::vector<AxisBytes> sentOnAxis(executors.size());
  onLocalRanks([&](Executor &executor) {
    size_t local = externalComm ? 0 : executor.rank();
    for (size_t i = 0; i < thePlan.inputs.size(); ++i)
      if (thePlan.holds(thePlan.inputs[i], executor.rank()))
        executor.writeInput(
            static_cast<int>(i),
            shardOf(thePlan.inputs[i], executor.rank(), inputs[i]));
    CommStats before = executor.commStats();
    losses[local] = executor.runStep(stepNumber);
    const CommStats &after = executor.commStats();
    sent[local] = bytesDelta(after.bytesSent, before.bytesSent);
    sentOnAxis[local] =
        bytesDelta(after.bytesSentOnAxis, before.bytesSentOnAxis);
  });
  if (!externalComm) {
    for (auto &executor : executors) {
      RankRecord &record = rankRecords[executor->rank()];
      record.times.push_back(executor->lastStepTimes());
      record.bytesSent.push_back(sent[executor->rank()]);
      record.bytesSentOnAxis.push_back(sentOnAxis[executor->rank()]);
      record.peaks = executor->memoryPeaks();
    }
    return losses[lossRank()];
  }
  Executor &executor = *executors[0];
  std::vector<double> mine = flatten(executor.lastStepTimes(), sent[0],
                                     sentOnAxis[0], executor.memoryPeaks());
  // The loss last: with pipeline stages only the output's stage holds it,
  // and every process must see the same one (to stop or skip together).
  mine.push_back(losses[0]);
  std::vector<double> all = gather(mine);
  for (int r = 0; r < thePlan.world; ++r)
    unflatten(all.data() + r * mine.size(), rankRecords[r]);
  return all[(lossRank() + 1) * mine.size() - 1];
}

void TrainingSession::setGradientChecks(bool on) {
  for (auto &executor : executors)
    executor->setGradientChecks(on);
}

void TrainingSession::setTracing(bool on) {
  for (auto &executor : executors)
    executor->setTracing(on);
}

void TrainingSession::setDeviceOptions(const DeviceOptions &options) {
  for (auto &executor : executors)
    executor->setDeviceOptions(options);
}

CudaGraphStatus TrainingSession::cudaGraphStatus() const {
  return executors[0]->cudaGraphStatus();
}

MultiTensorStatus TrainingSession::multiTensorStatus() const {
  return executors[0]->multiTensorStatus();
}

std::string TrainingSession::deviceComm() const {
  return executors[0]->deviceComm();
}

std::vector<std::pair<int, StepTrace>> TrainingSession::lastStepTraces() const {
  std::vector<std::pair<int, StepTrace>> traces;
  for (const auto &executor : executors)
    traces.emplace_back(executor->rank(), executor->lastStepTrace());
  return traces;
}

std::string
TrainingSession::tryOnLocalRanks(const std::function<void(Executor &)> &body) {
  std::mutex mutex;
  std::string firstError;
  auto run = [&](Executor &executor) {
    try {
      body(executor);
    } catch (const std::exception &error) {
      std::lock_guard<std::mutex> lock(mutex);
      if (firstError.empty())
        firstError = error.what();
    }
  };
  if (externalComm) {
    run(*executors[0]);
    return firstError;
  }
  std::vector<std::thread> threads;
  for (auto &executor : executors)
    threads.emplace_back([&run, &executor] { run(*executor); });
  for (std::thread &thread : threads)
    thread.join();
  return firstError;
}

int TrainingSession::firstFailedRank(bool failed) {
  if (!externalComm)
    return failed ? 0 : -1;
  std::vector<double> flags = gather({failed ? 1.0 : 0.0});
  for (size_t r = 0; r < flags.size(); ++r)
    if (flags[r] != 0)
      return static_cast<int>(r);
  return -1;
}

std::string TrainingSession::saveCheckpoint(const std::string &directory,
                                            int keep, uint64_t seed) {
  checkUsable();
  bool reporter = rank() == 0;
  std::string partial = partialCheckpointPath(directory, steps);
  std::string error;
  if (reporter) {
    try {
      beginCheckpoint(directory, steps);
    } catch (const std::exception &failure) {
      error = failure.what();
    }
  }
  if (firstFailedRank(!error.empty()) >= 0)
    throw RuntimeError(error.empty() ? "checkpoint: rank 0 could not begin "
                                       "the save"
                                     : error);
  // Each local rank writes its file; the digests go to the manifest.
  std::vector<FileDigest> digests(thePlan.world);
  error = tryOnLocalRanks([&](Executor &executor) {
    digests[executor.rank()] = writeRankCheckpoint(
        thePlan, executor.rank(), partial,
        [&executor](int index, int64_t offset, void *out, int64_t bytes) {
          executor.readVariableBytes(index, offset, out, bytes);
        });
  });
  int failedRank = firstFailedRank(!error.empty());
  if (externalComm) {
    // Every rank's digest, for rank 0's manifest.
    const FileDigest &mine = digests[rank()];
    std::vector<double> all = gather(
        {static_cast<double>(mine.bytes), static_cast<double>(mine.crc32)});
    for (int r = 0; r < thePlan.world; ++r)
      digests[r] = {static_cast<int64_t>(all[2 * r]),
                    static_cast<uint32_t>(all[2 * r + 1])};
  }
  if (failedRank >= 0) {
    if (reporter)
      abandonCheckpoint(partial);
    throw RuntimeError(!error.empty()
                           ? error
                           : "checkpoint: rank " + std::to_string(failedRank) +
                                 " could not write its file");
  }
  std::string path;
  if (reporter) {
    CheckpointManifest manifest = manifestOfPlan(thePlan, steps, seed);
    manifest.dataNextStep = batches;
    for (CheckpointFile &file : manifest.files) {
      file.bytes = digests[file.rank].bytes;
      file.crc32 = digests[file.rank].crc32;
    }
    try {
      path = commitCheckpoint(directory, partial, manifest, keep);
    } catch (const std::exception &failure) {
      error = failure.what();
      abandonCheckpoint(partial);
    }
  }
  if (firstFailedRank(!error.empty()) >= 0)
    throw RuntimeError(error.empty() ? "checkpoint: rank 0 could not commit "
                                       "the save"
                                     : error);
  return path;
}

CheckpointManifest TrainingSession::loadCheckpoint(const std::string &path,
                                                   LoadStats *stats) {
  checkUsable();
  // Every check before anything is written: a failure leaves the state.
  std::string error;
  OpenedCheckpoint checkpoint;
  try {
    checkpoint = openCheckpoint(path);
    checkCompatible(checkpoint, thePlan);
    std::vector<bool> verified(checkpoint.manifest.world, false);
    for (auto &executor : executors)
      for (int file : filesReadBy(checkpoint, thePlan, executor->rank()))
        if (!verified[file]) {
          verifyCheckpointFile(checkpoint, file);
          verified[file] = true;
        }
  } catch (const std::exception &failure) {
    error = failure.what();
  }
  int failedRank = firstFailedRank(!error.empty());
  if (failedRank >= 0)
    throw RuntimeError(!error.empty()
                           ? error
                           : "checkpoint: rank " + std::to_string(failedRank) +
                                 " could not check its files");
  if (externalComm) {
    // Each process resolved `latest` itself; a save in between could have
    // moved it.
    std::vector<double> stepsSeen =
        gather({static_cast<double>(checkpoint.manifest.step)});
    for (size_t r = 0; r < stepsSeen.size(); ++r)
      if (stepsSeen[r] != stepsSeen[0])
        throw RuntimeError(path + ": rank " + std::to_string(r) +
                           " found the checkpoint of step " +
                           std::to_string(static_cast<int64_t>(stepsSeen[r])) +
                           ", rank 0 that of step " +
                           std::to_string(static_cast<int64_t>(stepsSeen[0])) +
                           " (was it saved to while loading?)");
  }
  std::mutex mutex;
  LoadStats total;
  error = tryOnLocalRanks([&](Executor &executor) {
    LoadStats mine;
    loadRankCheckpoint(
        checkpoint, thePlan, executor.rank(),
        [&executor](int index, int64_t offset, const void *data,
                    int64_t bytes) {
          executor.writeVariableBytes(index, offset, data, bytes);
        },
        &mine);
    std::lock_guard<std::mutex> lock(mutex);
    total.bytesRead += mine.bytesRead;
    total.bufferBytes += mine.bufferBytes;
  });
  if (!error.empty()) {
    // Checked files that fail now (changed underneath): the state is mixed.
    failure = "loading " + path + " failed halfway: " + error;
    if (externalComm)
      externalComm->abort(failure);
    throw RuntimeError(failure);
  }
  if (stats)
    *stats = total;
  steps = checkpoint.manifest.step;
  batches = checkpoint.manifest.dataNextStep;
  return checkpoint.manifest;
}

std::vector<double> TrainingSession::globalValue(int index) {
  checkUsable();
  const PlanVariable &variable = thePlan.variables.at(index);
  std::vector<double> global(numElements(variable.globalShape), 0.0);
  // Only the ranks of the variable's stage hold it.
  if (!externalComm) {
    for (auto &executor : executors)
      if (thePlan.holds(variable, executor->rank()))
        placeShard(variable, executor->rank(), executor->variableShard(index),
                   global);
    return global;
  }
  // Every rank's shard has the variable's local shape, so shards gather as
  // equal parts; a rank of another stage sends zeros.
  int64_t count = numElements(variable.localShape);
  std::vector<double> all = gather(thePlan.holds(variable, executors[0]->rank())
                                       ? executors[0]->variableShard(index)
                                       : std::vector<double>(count, 0.0));
  for (int r = 0; r < thePlan.world; ++r)
    if (thePlan.holds(variable, r))
      placeShard(variable, r,
                 std::vector<double>(all.begin() + r * count,
                                     all.begin() + (r + 1) * count),
                 global);
  return global;
}

} // namespace zerosbp::runtime
