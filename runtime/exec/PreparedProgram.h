//===- PreparedProgram.h - a plan's instructions against an arena -*- C++ -*-=//
//
// What every executor works out once, before the first step, whatever its
// device: each instruction's operands and results as tensors in the rank's
// arena, the buffers it writes (for memory tracking), its staging buffer,
// and the phase of the step it belongs to; and the communicator groups the
// plan's collectives use.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_PREPAREDPROGRAM_H
#define ZEROSBP_RUNTIME_EXEC_PREPAREDPROGRAM_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/Tensor.h"
#include "runtime/plan/Plan.h"

#include <vector>

namespace zerosbp::runtime {

/// Forward until the loss seed, backward until the first optimizer update.
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
};

/// Value `id` of `plan` in the arena that starts at `arena` (host or device
/// memory: nothing is read).
TensorRef arenaTensor(const Plan &plan, unsigned char *arena, int id);

/// Every instruction of `plan` resolved against `arena`.
std::vector<PreparedInstruction> prepareInstructions(const Plan &plan,
                                                     unsigned char *arena);

/// The group of every hierarchy axis a collective of `plan` uses, indexed by
/// axis (null where none does), created on `comm` in axis order: every rank
/// calls this together.
std::vector<CommGroup *> createAxisGroups(const Plan &plan, int rank,
                                          Communicator &comm);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_PREPAREDPROGRAM_H
