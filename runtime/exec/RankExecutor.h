//===- RankExecutor.h - runs a plan on one rank -----------------*- C++ -*-===//
//
// One rank's arena (one allocation sized by the plan), its compute stream
// (the calling thread runs kernels in plan order) and its communication
// stream (collectives between a start and its wait run on their own thread,
// overlapping the kernels in between). It measures the live bytes by role
// and the time per phase of every step.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_RANKEXECUTOR_H
#define ZEROSBP_RUNTIME_EXEC_RANKEXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/Tensor.h"
#include "runtime/exec/CommStream.h"
#include "runtime/exec/MemoryTracker.h"
#include "runtime/exec/StepTrace.h"
#include "runtime/kernels/Kernel.h"
#include "runtime/plan/Plan.h"

#include <functional>
#include <memory>
#include <vector>

namespace zerosbp::runtime {

/// Where the time of one step went, in milliseconds. Compute phases count
/// kernel time only; `commWait` is the time the compute stream was blocked
/// in collective_wait (communication not hidden), `commBusy` the time the
/// communication stream was running collectives.
struct StepTimes {
  double step = 0, forward = 0, backward = 0, optimizer = 0, commWait = 0,
         commBusy = 0;
};

class RankExecutor {
public:
  RankExecutor(const Plan &plan, int rank, Communicator &comm);
  ~RankExecutor();
  RankExecutor(const RankExecutor &) = delete;
  RankExecutor &operator=(const RankExecutor &) = delete;

  int rank() const { return myRank; }
  /// The bytes of value `id` in this rank's arena.
  TensorRef tensor(int id) const;

  /// Sets every variable to its shard of the model tensor `modelValues`
  /// returns (PyTorch shape, row-major).
  void initializeVariables(
      const std::function<std::vector<double>(const PlanVariable &)>
          &modelValues);
  /// Writes this rank's shard of input `index` for the next step.
  void writeInput(int index, const std::vector<double> &localValues);
  /// Runs the program once with nn.step = `stepNumber`; returns the loss
  /// (outputs[0]), which every rank holds.
  double runStep(int64_t stepNumber);

  /// This rank's elements of variable `index`.
  std::vector<double> variableShard(int index) const;

  const MemoryPeaks &memoryPeaks() const { return tracker.peaks(); }
  const StepTimes &lastStepTimes() const { return times; }
  /// Records a timeline of every following step (the last one is kept).
  void setTracing(bool on) { tracing = on; }
  /// Both streams' events of the last traced step, in start order per stream.
  const StepTrace &lastStepTrace() const { return trace; }
  Communicator &communicator() { return comm; }

private:
  enum class Phase { Forward, Backward, Optimizer };
  struct Prepared {
    KernelFn kernel = nullptr;
    std::vector<TensorRef> operands;
    std::vector<TensorRef> results;
    std::vector<int> writtenBuffers;
    void *staging = nullptr;
    CommGroup *group = nullptr;
    Phase phase = Phase::Forward;
  };

  void prepare();
  void execute(size_t index);

  const Plan &plan;
  int myRank;
  Communicator &comm;
  unsigned char *arena = nullptr;
  std::vector<Prepared> prepared;
  std::vector<CommGroup *> groupsByAxis;
  MemoryTracker tracker;
  std::unique_ptr<CommStream> stream;
  StepTimes times;
  bool tracing = false;
  StepTrace trace;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_RANKEXECUTOR_H
