//===- Executor.h - runs a plan on one rank, on some device -----*- C++ -*-===//
//
// What a training session needs of one rank's executor, whatever the device:
// the CPU executor (RankExecutor) and the CUDA executor (runtime/cuda) both
// implement it. Values cross this interface as doubles in host memory; the
// executor moves them to and from its arena.
//
// Executors are made by name through a registry, so that a binary links the
// CUDA executor only where the CUDA toolkit was found at build time and
// still gives a clear error for `--device cuda` where it was not.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_EXECUTOR_H
#define ZEROSBP_RUNTIME_EXEC_EXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/exec/MemoryTracker.h"
#include "runtime/exec/StepTrace.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime {

/// Where the time of one step went, in milliseconds. Compute phases count
/// kernel time only; `commWait` is the time the compute stream was blocked
/// in collective_wait (communication not hidden), `commBusy` the time the
/// communication stream was running collectives.
struct StepTimes {
  double step = 0, forward = 0, backward = 0, optimizer = 0, commWait = 0,
         commBusy = 0;
  /// Waiting for transfers between arenas (offload), and the copy stream's
  /// busy time.
  double transferWait = 0, transferBusy = 0;
  /// The offloaded updates' kernels in host memory (part of `optimizer` on
  /// the CPU; on a GPU the host stream's busy time), and the part of the
  /// step that waited for them: all of it on the CPU; on a GPU, from the
  /// compute stream's first wait for a copy of an update's result (or the
  /// step's end) to the step's end.
  double hostUpdate = 0, hostExposed = 0;
};

/// How the CUDA executor launches a step (zero-run --cuda-graph): op by op,
/// or as one CUDA graph captured from a step and replayed after it. Auto
/// captures where that is known to work; On also captures where it has
/// not been verified (NCCL between ranks). Both launch op by op, saying
/// why, where a step cannot be captured (runtime/cuda/README.md).
enum class CudaGraphMode { Off, On, Auto };

/// How an executor launches its steps. The CPU executor reads only
/// `deferTransferWaits`.
struct DeviceOptions {
  CudaGraphMode cudaGraph = CudaGraphMode::Auto;
  /// f32 matrix products on TF32 tensor cores (zero-run --allow-tf32).
  bool allowTf32 = false;
  /// Consecutive optimizer updates (and casts) as one multi-tensor launch
  /// each (zero-run --multi-tensor, runtime/cuda/README.md).
  bool multiTensor = true;
  /// Transfer waits with nothing after them in the step that touches their
  /// bytes wait at the next step's first reader instead
  /// (zero-run --defer-transfer-waits, runtime/plan/DeferredTransfers.h).
  bool deferTransferWaits = true;
};

/// How many instructions the executor merged into multi-tensor launches.
struct MultiTensorStatus {
  /// The executor merges launches (CUDA); false on the CPU.
  bool applies = false;
  /// Instructions merged, and the launches that run them.
  int64_t instructions = 0;
  int64_t launches = 0;
  /// Each launch's op and the instructions it merged, in plan order.
  std::vector<std::pair<std::string, int64_t>> runs;
  /// Why some instructions that could be merged are not (the options, or
  /// the CPU executor); empty when nothing stood in the way.
  std::string reason;
};

/// Whether the steps ran as one CUDA graph, and why not.
struct CudaGraphStatus {
  /// A captured graph ran at least one step.
  bool used = false;
  /// The step captured (1-based, of this executor's steps); 0: none.
  int64_t capturedStep = 0;
  /// Steps run by launching the graph (the captured one included).
  int64_t graphSteps = 0;
  /// Why steps ran op by op; empty when every step after the first was
  /// a graph launch (but a traced one, which runs op by op).
  std::string reason;
};

class Executor {
public:
  virtual ~Executor() = default;

  virtual int rank() const = 0;
  /// "cpu" or "cuda".
  virtual const char *device() const = 0;

  /// Sets variable `index` to this rank's elements `localValues`. With
  /// pipeline stages, a rank that does not hold the variable (another
  /// stage's) writes nothing: those bytes are its own stage's buffers.
  virtual void writeVariable(int index,
                             const std::vector<double> &localValues) = 0;
  /// Writes this rank's shard of input `index` for the next step; nothing
  /// for another stage's input.
  virtual void writeInput(int index,
                          const std::vector<double> &localValues) = 0;
  /// Runs the program once with nn.step = `stepNumber`; returns the loss
  /// (outputs[0]), which every rank holds, but for the ranks of pipeline
  /// stages other than the loss's, which return 0.
  virtual double runStep(int64_t stepNumber) = 0;
  /// This rank's elements of variable `index`, which it must hold.
  virtual std::vector<double> variableShard(int index) const = 0;
  /// Output `index` of the last step, whole (every rank holds the
  /// outputs: the compiler gathers them); zeros on a rank of another
  /// pipeline stage than the output's.
  virtual std::vector<double> outputValue(int index) const = 0;

  /// Where this rank's shard of variable `index` lives: host memory for the
  /// CPU executor, device memory for CUDA.
  virtual void *variableStorage(int index) = 0;
  /// From now on the variables are `storage[v]`, another executor's (the
  /// same rank's, on the same device) with the same dtype and shard, and
  /// this executor's arena holds the rest only: an inference plan run on a
  /// training plan's parameters (docs/runtime.md#shared-parameters). The
  /// other executor must outlive this one.
  virtual void shareVariables(const std::vector<void *> &storage) = 0;

  /// Bytes [offset, offset + bytes) of this rank's shard of variable
  /// `index`, as stored (its dtype, row-major): checkpoints move state
  /// through these, bit for bit and a bounded chunk at a time. The caller
  /// keeps the range inside the shard. Reading another pipeline stage's
  /// variable throws; writing one does nothing.
  virtual void readVariableBytes(int index, int64_t offset, void *out,
                                 int64_t bytes) const = 0;
  virtual void writeVariableBytes(int index, int64_t offset, const void *data,
                                  int64_t bytes) = 0;

  /// Sets every variable this rank holds to its shard of the model tensor
  /// `modelValues` returns (PyTorch shape, row-major).
  void initializeVariables(
      const std::function<std::vector<double>(const PlanVariable &)>
          &modelValues);

  virtual const MemoryPeaks &memoryPeaks() const = 0;
  virtual const StepTimes &lastStepTimes() const = 0;
  /// Bytes sent and calls by collective kind since the executor was made.
  virtual const CommStats &commStats() const = 0;

  /// With `on`, each step checks, before every optimizer update, that the
  /// gradient it reads is finite, and throws naming the step and the
  /// parameter otherwise (zero-run --check-gradients).
  virtual void setGradientChecks(bool on) = 0;
  /// With `on`, a step whose loss is not finite stops right before its
  /// first optimizer update, once its started collectives and transfers are
  /// done: no variable is written (docs/runtime.md#non-finite-numbers).
  /// Every rank holds the same reduced loss, so all stop together. Returns
  /// false where the executor cannot stop a step there; the caller then
  /// restores the variables itself.
  virtual bool setSkipNonfiniteSteps(bool on) { return !on; }
  /// Records a timeline of every following step (the last one is kept).
  virtual void setTracing(bool on) = 0;
  /// Both streams' events of the last traced step, in start order per stream.
  virtual const StepTrace &lastStepTrace() const = 0;

  /// Sets the launch options before the first step.
  virtual void setDeviceOptions(const DeviceOptions &options) = 0;
  /// How the steps so far were launched.
  virtual CudaGraphStatus cudaGraphStatus() const {
    return {false, 0, 0,
            std::string("the ") + device() + " executor has no CUDA graphs"};
  }

  /// What the steps so far merged into multi-tensor launches.
  /// The communicator between device ranks ("nccl", "shared_device"); empty
  /// where the host communicator runs the collectives (cpu).
  virtual std::string deviceComm() const { return ""; }
  virtual MultiTensorStatus multiTensorStatus() const {
    MultiTensorStatus status;
    status.reason = std::string("the ") + device() +
                    " executor calls each kernel on the host: there are no "
                    "launches to merge";
    return status;
  }

protected:
  virtual const Plan &plan() const = 0;
};

/// Makes rank `rank`'s executor. `hostComm` connects this rank to the
/// others over host memory (threads or MPI): the CPU executor runs its
/// collectives on it, the CUDA executor bootstraps NCCL over it. Every rank
/// calls the factory together (it creates groups collectively).
using ExecutorFactory = std::function<std::unique_ptr<Executor>(
    const Plan &plan, int rank, Communicator &hostComm)>;

/// Registers the executor of `device`; a static initializer of the library
/// that provides it calls this.
bool registerExecutor(const std::string &device, ExecutorFactory factory);
/// The executor of `device`, or a RuntimeError that says why there is none:
/// an unknown name, or a device this binary was built without.
const ExecutorFactory &findExecutor(const std::string &device);
/// The devices this binary can run on, "cpu" first.
std::vector<std::string> executorDevices();

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_EXECUTOR_H
