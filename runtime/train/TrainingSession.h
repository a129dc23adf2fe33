//===- TrainingSession.h - a plan trained one step at a time ----*- C++ -*-===//
//
// The ranks this process runs, kept between steps: their executors (arena,
// communication stream) and communicators. A caller (zero-run's loop, the
// Python nn.Graph) initializes the variables, then feeds one step's global
// inputs at a time and reads the loss, the records and the variables.
//
// In process, every rank is a thread of this process; each step runs them
// all and joins them. Over a communicator (MPI), this process is one rank;
// `gather` collects equal-sized records from every rank (outside the
// communicator, so that it is not counted as training traffic) and every
// rank must call step() and globalValue() together.
//
// A rank that fails aborts its communicator, so the others stop with an
// error naming it; the step then throws the first failure, and the session
// is unusable afterwards.
//
// With pipeline stages every rank touches only what its stage holds
// (docs/runtime.md#pipeline-stages): variables, inputs and checkpoint blocks
// of other stages are skipped, and the loss reported is that of the first
// rank of the output's stage (rank 0 in the compiler's plans), on every
// process.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TRAIN_TRAININGSESSION_H
#define ZEROSBP_RUNTIME_TRAIN_TRAININGSESSION_H

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/comm/Communicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/MemoryTracker.h"
#include "runtime/plan/Plan.h"

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace zerosbp::runtime {

class InProcessWorld;

using KindBytes = std::array<int64_t, kNumCollectiveKinds>;
using AxisBytes = std::array<int64_t, kMaxHierarchyAxes>;

/// What one rank measured: its memory peaks, and per step its times and
/// bytes sent by collective kind and by hierarchy axis.
struct RankRecord {
  MemoryPeaks peaks;
  std::vector<StepTimes> times;
  std::vector<KindBytes> bytesSent;
  std::vector<AxisBytes> bytesSentOnAxis;
};

using GatherFn =
    std::function<std::vector<double>(const std::vector<double> &)>;
using ModelValuesFn = std::function<std::vector<double>(const PlanVariable &)>;

class TrainingSession {
public:
  /// All plan.world ranks as threads of this process, on `device` ("cpu"
  /// or "cuda", see findExecutor). `timeoutSeconds` bounds every wait for a
  /// peer.
  TrainingSession(const Plan &plan, double timeoutSeconds,
                  const std::string &device = "cpu");
  /// This process's rank of a run over `comm` (one process per rank).
  TrainingSession(const Plan &plan, Communicator &comm, GatherFn gather,
                  double timeoutSeconds, const std::string &device = "cpu");
  ~TrainingSession();
  TrainingSession(const TrainingSession &) = delete;
  TrainingSession &operator=(const TrainingSession &) = delete;

  const Plan &plan() const { return thePlan; }
  /// The rank this process reports for (0 in process).
  int rank() const;

  /// Sets every variable of every local rank to its shard of `model`'s
  /// value for it (the model tensor: PyTorch shape, row-major).
  void initialize(const ModelValuesFn &model);
  /// Sets variable `index` to its shards of `model` on every local rank.
  void setVariable(int index, const std::vector<double> &model);

  /// Runs one step. `globalInputs(index)` is the global value of input
  /// `index`. Returns the loss, which every rank holds; throws "step N: the
  /// loss is nan" (or inf) unless the plan scales the loss dynamically or
  /// non-finite steps are skipped.
  double step(const std::function<std::vector<double>(int)> &globalInputs);

  /// With `on`, a step whose loss is not finite makes no update: every
  /// variable and the step count stay as they were, step() returns the
  /// loss and lastSkip() says why. The executor stops the step before its
  /// first update, or, where it cannot, the session restores the variables
  /// from a copy taken before every step. Nothing changes for a plan that
  /// scales the loss dynamically: it skips overflowing updates itself.
  void setSkipNonfiniteSteps(bool on);
  /// "step N: the loss is nan" when the last step was skipped, else "".
  const std::string &lastSkip() const { return skipReason; }
  /// Steps skipped so far.
  int64_t stepsSkipped() const { return skippedSteps; }
  /// Batches read, skipped steps' included: the data position a checkpoint
  /// records (its `data.next_step`), which a resumed run reads on from.
  int64_t batchesRead() const { return batches; }

  /// Runs an inference plan once on `globalInputs` and returns its outputs,
  /// whole (docs/runtime.md#inference-plans). The step count is unchanged.
  std::vector<std::vector<double>>
  evaluate(const std::function<std::vector<double>(int)> &globalInputs);
  /// Runs this inference plan on `owner`'s parameters from now on: each
  /// variable is the owner's parameter of the same name, which must have
  /// the same dtype and shards, and the arena shrinks to the rest. `owner`
  /// runs the same ranks and must outlive this session.
  void shareVariablesWith(TrainingSession &owner);
  /// The arena bytes each rank holds: less the variables when shared.
  int64_t arenaBytesHeld() const;
  /// Inference runs so far.
  int64_t evaluationsRun() const { return evaluations; }

  /// The model tensor of variable `index`, followed by zeros up to its
  /// global element count (a ZeRO partition's padding). Over a
  /// communicator, collective.
  std::vector<double> globalValue(int index);

  /// Saves the whole training state after stepsRun() steps as a checkpoint
  /// in `directory` (docs/checkpoint.md), keeping the newest `keep` (0:
  /// all); returns its path. Every rank writes its own blocks; over a
  /// communicator, collective. The caller holds the directory's lock
  /// (DirectoryLock) in the reporting process. A failed save leaves the
  /// earlier checkpoints as they were and the session usable.
  std::string saveCheckpoint(const std::string &directory, int keep,
                             uint64_t seed);
  /// Loads a checkpoint (a step directory, or a directory with `latest`)
  /// saved at any world size and stage, and continues its step count.
  /// Every file is checked first: a checkpoint that does not check leaves
  /// the state as it was. Over a communicator, collective.
  CheckpointManifest loadCheckpoint(const std::string &path,
                                    LoadStats *stats = nullptr);

  /// Checks, before every optimizer update, that the gradient it reads is
  /// finite (see Executor::setGradientChecks).
  void setGradientChecks(bool on);
  /// In process: every rank's waiting or next collective throws
  /// RuntimeError(reason), so the step in flight stops (a signal stops the
  /// run this way, docs/runtime.md#signals). Over a communicator: nothing.
  void interrupt(const std::string &reason);
  /// Records a timeline of the following steps on every local rank.
  void setTracing(bool on);
  /// Sets every local rank's device options (CUDA graphs, TF32) before the
  /// first step; the CPU executor has none.
  void setDeviceOptions(const DeviceOptions &options);
  /// How this process's first rank launched its steps (CUDA graph or not).
  CudaGraphStatus cudaGraphStatus() const;
  /// What this process's first rank merged into multi-tensor launches.
  MultiTensorStatus multiTensorStatus() const;
  /// This process's first rank's device communicator (Executor.h).
  std::string deviceComm() const;
  /// The last traced step's timeline of each rank this process runs.
  std::vector<std::pair<int, StepTrace>> lastStepTraces() const;

  int64_t stepsRun() const { return steps; }
  /// Every rank's records, complete on every process.
  const std::vector<RankRecord> &records() const { return rankRecords; }

private:
  /// Runs `body(executor)` on every local rank; rethrows the first failure
  /// and marks the session failed.
  void onLocalRanks(const std::function<void(Executor &)> &body);
  /// Runs `body(rank)` on one thread per in-process rank; a rank that
  /// throws aborts its communicator, and the first failure is rethrown.
  void onRankThreads(const std::function<void(int)> &body);
  void checkUsable() const;
  /// Writes the inputs and runs the program once on every local rank;
  /// records it and returns outputs[0][0] of the first local rank.
  double runProgram(const std::function<std::vector<double>(int)> &inputs,
                    int64_t stepNumber);
  /// Runs `body(executor)` on every local rank, in parallel in process;
  /// returns the first failure's message ("" if none) without aborting
  /// the communicators, so the ranks can agree on the outcome.
  std::string tryOnLocalRanks(const std::function<void(Executor &)> &body);
  /// Over a communicator: every rank's `failed` flag; in process: itself.
  /// Returns the first failing rank, or -1.
  int firstFailedRank(bool failed);

  /// The rank whose loss the session reports: the first of the stage that
  /// holds the loss (every rank without pipeline stages).
  int lossRank() const;

  /// Every local rank's variables (those it holds), as stored, before a
  /// step that may be skipped (executors that cannot stop before the
  /// updates); and back.
  std::vector<std::vector<std::vector<unsigned char>>> copyVariables() const;
  void restoreVariables(
      const std::vector<std::vector<std::vector<unsigned char>>> &copy);

  const Plan &thePlan;
  std::unique_ptr<InProcessWorld> world;
  Communicator *externalComm = nullptr;
  GatherFn gather;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<RankRecord> rankRecords;
  int64_t steps = 0;
  int64_t batches = 0;
  int64_t evaluations = 0;
  bool skipNonfinite = false;
  bool restoreOnSkip = false;
  int64_t skippedSteps = 0;
  std::string skipReason;
  bool sharesVariables = false;
  std::string failure;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_TRAININGSESSION_H
