//===- MemoryTracker.h - live bytes by role, as the program runs -*- C++
//-*-===//
//
// The executor marks a buffer live when an instruction first writes it and
// dead when an instruction's `free` lists it; variables and the step count
// are live throughout, inputs from the start to their last read. The tracker
// keeps the peak of live bytes, in total, by role and for model states (param +
// grad + master + opt_state), and the highest arena byte any live buffer
// reaches, which must stay within the plan's arena.
//
// A rank of a pipeline stage counts its stage's buffers and those of every
// stage only: the others' bytes are not its own, even where an instruction
// it runs (a send_recv) names one.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_MEMORYTRACKER_H
#define ZEROSBP_RUNTIME_EXEC_MEMORYTRACKER_H

#include "runtime/plan/Plan.h"

#include <vector>

namespace zerosbp::runtime {

/// The peaks of an offload arena (host memory, NVMe).
struct ArenaPeaks {
  int64_t total = 0;
  int64_t byRole[kNumRoles] = {};
};

/// The peaks of the device arena, and of the host and NVMe arenas when the
/// plan offloads (docs/runtime.md#offload).
struct MemoryPeaks {
  int64_t total = 0;
  int64_t modelStates = 0;
  int64_t highWater = 0; // Largest offset + bytes of a live buffer.
  int64_t byRole[kNumRoles] = {};
  /// Device memory the executor held at its peak, measured from the
  /// allocator (CUDA: the arena plus scratch and library workspaces); 0 on
  /// the CPU, whose arena is `highWater` at most.
  int64_t deviceHeld = 0;
  ArenaPeaks host, nvme;
};

class MemoryTracker {
public:
  /// Tracks the buffers the ranks of pipeline stage `stage` use.
  MemoryTracker(const Plan &plan, int stage);

  /// Marks the persistent buffers (variables, steps) and the inputs live
  /// and every other buffer dead: the state at the start of a step.
  void beginStep();
  void markLive(int buffer);
  void markDead(int buffer);
  /// The variables' buffers belong to another executor (an inference plan
  /// run on a training plan's parameters) and are not counted; the arena
  /// starts at `origin` (docs/runtime.md#shared-parameters).
  void shareVariables(int64_t origin);
  /// Folds the current live bytes into the peaks.
  void sample();

  const MemoryPeaks &peaks() const { return peak; }

private:
  const Plan &plan;
  std::vector<char> live;
  std::vector<char> persistent;
  std::vector<char> initiallyLive; // Inputs: live at the start, then freed.
  std::vector<char> external;
  int64_t origin = 0;
  /// Device-arena live bytes; the offload arenas' in `offload`.
  int64_t current[kNumRoles] = {};
  int64_t currentTotal = 0;
  ArenaPeaks offload[2]; // Live now: host, NVMe.
  /// The current and peak bytes of buffer `buffer`'s arena, if offloaded.
  ArenaPeaks *offloadLive(int buffer);
  ArenaPeaks *offloadPeak(int buffer);
  int64_t currentHighWater = 0;
  MemoryPeaks peak;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_MEMORYTRACKER_H
