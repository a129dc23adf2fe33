//===- PreparedProgram.h - a plan's instructions against an arena -*- C++ -*-=//
//
// What every executor works out once, before the first step, whatever its
// device: each instruction's operands and results as tensors in the rank's
// arena, the buffers it writes (for memory tracking), its staging buffer,
// and the phase of the step it belongs to; the instructions of the rank's
// pipeline stage; and the communicator groups the plan's collectives use.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_PREPAREDPROGRAM_H
#define ZEROSBP_RUNTIME_EXEC_PREPAREDPROGRAM_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/Tensor.h"
#include "runtime/plan/Plan.h"

#include <optional>
#include <string>
#include <vector>

namespace zerosbp::runtime {

/// Forward until the loss seed, backward until the first optimizer update
/// on the device. An offloaded update (in host memory) is of the optimizer
/// phase but does not start it: with overlap_comm it runs during the
/// backward (docs/design.md#offload).
enum class Phase { Forward, Backward, Optimizer };
/// "forward", "backward", "optimizer": the trace's categories.
const char *phaseName(Phase phase);

struct PreparedInstruction {
  std::vector<TensorRef> operands;
  std::vector<TensorRef> results;
  /// Buffers the instruction writes: its results', a copy's variable, its
  /// staging buffer.
  std::vector<int> writtenBuffers;
  void *staging = nullptr;
  Phase phase = Phase::Forward;
  /// For an optimizer update (operand 1 is its gradient): the parameter it
  /// updates, which gradient checks name; empty for other instructions.
  std::string updatedParameter;
};

/// Where each buffer of `plan` lives (host or device memory: nothing is
/// read): at `bases[arena] + offset`, the device arena's offsets counted
/// from `origin`; null in an NVMe arena, which only transfers reach, by file
/// offset. The buffer of variable `v` is at `variableStorage[v]` when that
/// list is given (an inference plan on a training plan's parameters,
/// docs/runtime.md#shared-parameters), null for another pipeline stage's.
std::vector<unsigned char *>
bufferAddresses(const Plan &plan, const std::vector<unsigned char *> &bases,
                int64_t origin = 0,
                const std::vector<void *> &variableStorage = {});

/// The bytes at the start of the arena that only variables use (the memory
/// planner puts them first); every other buffer lies at or past it. Throws
/// if the plan places another buffer among the variables.
int64_t variablePrefixBytes(const Plan &plan);

/// Value `id` of `plan`, its buffer at `addresses[buffer]` (data null for a
/// value in an NVMe arena).
TensorRef arenaTensor(const Plan &plan,
                      const std::vector<unsigned char *> &addresses, int id);

/// Every instruction of `plan` resolved against the buffers' `addresses`.
std::vector<PreparedInstruction>
prepareInstructions(const Plan &plan,
                    const std::vector<unsigned char *> &addresses);

/// Throws "step N: the gradient of '<parameter>' is not finite (element i
/// of n on this rank is nan)" at the first NaN or Inf of `gradient`, the
/// values optimizer update `entry` reads.
void checkGradientFinite(const PreparedInstruction &entry,
                         const std::vector<double> &gradient,
                         int64_t stepNumber);

/// Where a step whose loss is not finite stops, so that no variable is
/// written (docs/runtime.md#non-finite-numbers): the first optimizer update,
/// provided the loss (output 0) is final by then, computed or reduced by a
/// collective started before it. None where the plan has no update or its
/// loss comes later.
struct LossCheckPoint {
  size_t firstUpdate = 0;
  /// The bucket of the collective that reduces the loss; -1: none.
  int lossBucket = -1;
};
std::optional<LossCheckPoint>
findLossCheckPoint(const Plan &plan,
                   const std::vector<PreparedInstruction> &prepared);

/// What rank `rank`'s offloaded updates (kernels in host memory) do per
/// step: the bytes they read and write, each operand and result once, and
/// the parameter elements the optimizer updates among them update.
struct HostUpdateWork {
  int64_t kernels = 0, bytes = 0, params = 0;
};
HostUpdateWork hostUpdateWork(const Plan &plan, int rank);

/// Per instruction of `plan`, 1 where rank `rank` runs it: every
/// instruction of its pipeline stage (all of them without a pipeline).
std::vector<char> instructionsRunBy(const Plan &plan, int rank);

/// Throws unless rank `rank` holds variable `index`: another pipeline
/// stage's variable has no bytes on it, and where they would be lie the
/// rank's own stage's buffers.
void checkHoldsVariable(const Plan &plan, int rank, int index);

/// The group of every hierarchy axis a collective of `plan` uses, indexed by
/// axis (null where none does), created on `comm` in axis order: every rank
/// calls this together.
std::vector<CommGroup *> createAxisGroups(const Plan &plan, int rank,
                                          Communicator &comm);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_PREPAREDPROGRAM_H
