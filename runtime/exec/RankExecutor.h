//===- RankExecutor.h - runs a plan on one rank -----------------*- C++ -*-===//
//
// One rank's arenas (one allocation sized by the plan for device memory,
// one for host memory and an anonymous file for NVMe when the plan offloads,
// docs/runtime.md#offload), its compute stream (the calling thread runs
// kernels in plan order), its communication stream (collectives between a
// start and its wait run on their own thread, overlapping the kernels in
// between) and its copy stream (transfers between arenas, likewise). It
// measures the live bytes by role and the time per phase of every step.
//
// A rank of a pipeline stage runs its stage's instructions only and writes
// only its stage's values (docs/runtime.md#pipeline-stages): the arena's
// bytes of other stages' buffers are its own stage's.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_RANKEXECUTOR_H
#define ZEROSBP_RUNTIME_EXEC_RANKEXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/Tensor.h"
#include "runtime/exec/CommStream.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/MemoryTracker.h"
#include "runtime/exec/PreparedProgram.h"
#include "runtime/exec/StepTrace.h"
#include "runtime/io/SwapFile.h"
#include "runtime/kernels/Kernel.h"
#include "runtime/plan/DeferredTransfers.h"
#include "runtime/plan/Plan.h"

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace zerosbp::runtime {

class RankExecutor : public Executor {
public:
  RankExecutor(const Plan &plan, int rank, Communicator &comm);
  ~RankExecutor();
  RankExecutor(const RankExecutor &) = delete;
  RankExecutor &operator=(const RankExecutor &) = delete;

  int rank() const override { return myRank; }
  const char *device() const override { return "cpu"; }
  /// The bytes of value `id` in this rank's arena.
  TensorRef tensor(int id) const;

  void writeVariable(int index,
                     const std::vector<double> &localValues) override;
  void writeInput(int index, const std::vector<double> &localValues) override;
  double runStep(int64_t stepNumber) override;
  std::vector<double> variableShard(int index) const override;
  std::vector<double> outputValue(int index) const override;
  void *variableStorage(int index) override;
  void shareVariables(const std::vector<void *> &storage) override;
  void readVariableBytes(int index, int64_t offset, void *out,
                         int64_t bytes) const override;
  void writeVariableBytes(int index, int64_t offset, const void *data,
                          int64_t bytes) override;

  const MemoryPeaks &memoryPeaks() const override { return tracker.peaks(); }
  const StepTimes &lastStepTimes() const override { return times; }
  const CommStats &commStats() const override { return comm.stats(); }
  void setGradientChecks(bool on) override { checkGradients = on; }
  bool setSkipNonfiniteSteps(bool on) override;
  void setTracing(bool on) override { tracing = on; }
  void setDeviceOptions(const DeviceOptions &options) override {
    deferWaits = options.deferTransferWaits;
  }
  const StepTrace &lastStepTrace() const override { return trace; }

protected:
  const Plan &plan() const override { return thePlan; }

private:
  void execute(size_t index);
  /// Allocates `bytes` of zeroed arena, aligned like the planner's offsets.
  void allocateArena(int64_t bytes);
  /// The host and NVMe arenas the plan asks for.
  void allocateOffloadArenas();
  /// Whether this step's loss, final before its first update, is not
  /// finite; waits for the collective that reduces it if need be.
  bool lossNotFinite();
  /// Runs transfer instruction `index` (on the copy stream).
  void transfer(const Instruction &instruction,
                const PreparedInstruction &entry);
  /// Whether instruction `index` is a transfer_wait left to the next step.
  bool defersWait(size_t index) const {
    return deferWaits && !variablesShared && deferred.deferred[index];
  }
  /// Waits for the transfers an earlier step left unwaited that touch the
  /// bytes of value `id`; of every value without one.
  void settleTransfers(std::optional<int> id = std::nullopt) const;

  const Plan &thePlan;
  int myRank;
  /// The rank's pipeline stage (0 without a pipeline).
  int myStage;
  Communicator &comm;
  unsigned char *arena = nullptr;
  unsigned char *hostArena = nullptr;
  std::unique_ptr<SwapFile> swap;
  /// Each plan arena's base address; null for NVMe.
  std::vector<unsigned char *> bases;
  std::unique_ptr<CommStream> copyStream;
  std::vector<unsigned char *> addresses; // Of each buffer.
  std::vector<PreparedInstruction> prepared;
  std::vector<KernelFn> kernels; // By instruction; null for non-kernels.
  std::vector<char> runs;        // By instruction: of this rank's stage.
  std::vector<AttrMap> attrs;    // By instruction, as this rank sees them.
  std::vector<CommGroup *> groupsByAxis;
  MemoryTracker tracker;
  std::unique_ptr<CommStream> stream;
  StepTimes times;
  bool checkGradients = false;
  /// Where a step with a non-finite loss stops, when skipNonfinite.
  LossCheckPoint lossCheck;
  bool skipNonfinite = false;
  bool tracing = false;
  StepTrace trace;
  /// The transfer waits a step leaves to the next (deferWaits), and by
  /// transfer whether one is still unwaited. Not while another executor
  /// shares the variables, which would not wait for them.
  DeferredTransfers deferred;
  bool deferWaits = true;
  bool variablesShared = false;
  mutable std::vector<char> unsettled;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_RANKEXECUTOR_H
