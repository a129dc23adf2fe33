//===- Trainer.h - trains a plan for K steps across ranks -------*- C++ -*-===//
//
// The loop behind `zero-run`: every rank initializes its shard of the
// variables, then for each step writes its shard of the inputs, runs the
// plan and records the loss, its times, its bytes sent and its memory. A
// rank that fails tells the others through its communicator; the run then
// ends with the first failure's message.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TRAIN_TRAINER_H
#define ZEROSBP_RUNTIME_TRAIN_TRAINER_H

#include "runtime/comm/Communicator.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/Npy.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/TrainingSession.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace zerosbp::runtime {

struct TrainOptions {
  std::string planPath;
  int ranks = 1;
  std::string backend = "inprocess";
  /// "cpu" or "cuda"; empty runs on the plan's placement device.
  std::string device;
  int64_t steps = 1;
  std::optional<std::string> dataDir;
  std::optional<std::string> initDir;
  std::optional<std::string> saveDir;
  /// Continue from this checkpoint (docs/checkpoint.md) instead of --init.
  std::optional<std::string> resumeDir;
  /// Save checkpoints here: every `checkpointEvery` steps (0: only at the
  /// end) and after the last step, keeping the newest `keep` (0: all).
  std::optional<std::string> checkpointDir;
  int64_t checkpointEvery = 0;
  int keep = 0;
  /// Chrome trace-event JSON of the last step (this process's ranks).
  std::optional<std::string> tracePath;
  uint64_t seed = 0;
  /// --seed was given: a resumed run must then use the checkpoint's seed.
  bool seedGiven = false;
  double timeoutSeconds = 300;
  int threads = 0; // Kernel threads per rank; 0 picks.
  /// Check every gradient an update reads, each step (--check-gradients).
  bool checkGradients = false;
  /// A step whose loss is not finite makes no update and the run goes on
  /// (--skip-nonfinite-steps); without it, the run stops there.
  bool skipNonfiniteSteps = false;
  /// CUDA graphs and TF32 matmuls on `cuda` (--cuda-graph, --allow-tf32).
  DeviceOptions deviceOptions;
  bool progress = true;
  /// Run an inference plan on `steps` batches (--eval) instead of training;
  /// `outputsDir` receives every output, stacked over the batches.
  bool eval = false;
  std::optional<std::string> outputsDir;
};

/// A checkpoint the run saved.
struct SavedCheckpoint {
  int64_t step = 0;
  std::string path;
  double milliseconds = 0;
};

struct TrainResult {
  /// Steps done before this run (those of the checkpoint it resumed).
  int64_t firstStep = 0;
  std::vector<SavedCheckpoint> checkpoints;
  /// Time to load the resumed checkpoint and the largest buffer held.
  double loadMilliseconds = 0;
  LoadStats load;
  /// An inference run: `losses` holds each batch's first 0-D output.
  bool evaluation = false;
  std::vector<double> losses;
  /// The steps skipped for a non-finite loss, numbered as the progress
  /// lines number them.
  std::vector<int64_t> skippedSteps;
  std::vector<RankRecord> ranks;
  int64_t tokensPerStep = 0;
  /// This process's resident bytes after the last step, its ranks' arenas
  /// still held (docs/runtime.md#offload).
  int64_t residentBytes = 0;
  /// How rank 0 launched its steps: one CUDA graph or op by op.
  CudaGraphStatus cudaGraph;
  /// What rank 0 merged into multi-tensor launches.
  MultiTensorStatus multiTensor;
  /// Rank 0's device communicator ("nccl", "shared_device"); empty on cpu.
  std::string deviceComm;
};

/// One thread per rank in this process, over the in-process communicator.
TrainResult trainInProcess(const Plan &plan, const TrainOptions &options,
                           std::ostream &progress);

/// This process's rank of a run over `comm` (MPI: one process per rank).
/// `gather` collects a fixed-size record from every rank (for the progress
/// line, the report and the saved model); only rank 0 prints and saves.
TrainResult trainOneRank(const Plan &plan, const TrainOptions &options,
                         Communicator &comm, const GatherFn &gather,
                         std::ostream &progress);

/// The device a run uses: options.device, else the plan's placement.
std::string runDevice(const Plan &plan, const TrainOptions &options);

/// Sets the kernels' threads: `threads`, or when it is 0 the cores
/// shared among the `ranksHere` ranks this process runs.
void pickKernelThreads(int threads, int ranksHere);

/// The ranks mpirun started on this machine (OMPI_COMM_WORLD_LOCAL_SIZE),
/// so that one process per rank does not give each rank every core; 1
/// when mpirun does not say.
int mpiRanksOnThisMachine();

/// The progress line of the run's step `step` (0-based in this run;
/// printed with the steps of the checkpoint it resumed counted).
std::string progressLine(const TrainResult &result, int64_t step,
                         int64_t steps);

/// A parameter and the variable its saved values come from: its fp32
/// master where there is one, else itself (indices into plan.variables).
struct SavedParameter {
  int param;
  int source;
};
std::vector<SavedParameter> savedParameters(const Plan &plan);

/// The directory `--save` writes, locked from construction (PathLock: a
/// second writer is refused) and checked to be absent or a saved model
/// (only .npy files), so that both are refused before training.
class SaveTarget {
public:
  explicit SaveTarget(const std::string &dir);

  /// Writes the full parameters (PyTorch names, shapes, float32) into a
  /// temporary sibling directory, flushes them and puts it in place of the
  /// directory as a whole; on any error the previous directory stays as it
  /// was. `globalValue(variable)` returns a variable's global elements. A
  /// parameter with an fp32 master is saved from the master.
  void write(const Plan &plan,
             const std::function<std::vector<double>(int)> &globalValue);
  /// Writes `arrays` as NAME.npy files the same way.
  void writeArrays(const std::vector<std::pair<std::string, NpyArray>> &arrays);

private:
  void writeDirectory(
      const std::function<void(const std::string &into)> &writeFilesInto);
  void writeFiles(const Plan &plan, const std::string &into,
                  const std::function<std::vector<double>(int)> &globalValue);

  std::string dir;
  std::unique_ptr<PathLock> lock;
};

/// SaveTarget(dir).write(plan, globalValue).
void saveModel(const Plan &plan, const std::string &dir,
               const std::function<std::vector<double>(int)> &globalValue);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_TRAINER_H
