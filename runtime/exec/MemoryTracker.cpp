//===- MemoryTracker.cpp - live bytes by role -----------------------------===//

#include "runtime/exec/MemoryTracker.h"

#include <algorithm>

namespace zerosbp::runtime {

MemoryTracker::MemoryTracker(const Plan &plan, int stage)
    : plan(plan), live(plan.buffers.size(), 0),
      persistent(plan.buffers.size(), 0), initiallyLive(plan.buffers.size(), 0),
      external(plan.buffers.size(), 0) {
  for (const PlanVariable &variable : plan.variables)
    persistent[plan.values[variable.value].buffer] = 1;
  // Inputs and the step number are written before the first instruction
  // but die at their last read, as the plan frees them: the arena reuses
  // their bytes after that.
  for (const PlanInput &input : plan.inputs)
    initiallyLive[plan.values[input.value].buffer] = 1;
  for (int step : plan.steps)
    initiallyLive[plan.values[step].buffer] = 1;
  // Other stages' buffers are never this rank's to count.
  for (size_t buffer = 0; buffer < plan.buffers.size(); ++buffer)
    if (!plan.bufferOnStage(static_cast<int>(buffer), stage))
      external[buffer] = 1;
}

ArenaPeaks *MemoryTracker::offloadLive(int buffer) {
  switch (plan.memoryOf(buffer)) {
  case MemoryKind::Host:
    return &offload[0];
  case MemoryKind::Nvme:
    return &offload[1];
  default:
    return nullptr;
  }
}

ArenaPeaks *MemoryTracker::offloadPeak(int buffer) {
  switch (plan.memoryOf(buffer)) {
  case MemoryKind::Host:
    return &peak.host;
  case MemoryKind::Nvme:
    return &peak.nvme;
  default:
    return nullptr;
  }
}

void MemoryTracker::beginStep() {
  std::fill(live.begin(), live.end(), 0);
  std::fill(std::begin(current), std::end(current), 0);
  offload[0] = offload[1] = ArenaPeaks();
  currentTotal = 0;
  currentHighWater = 0;
  for (size_t buffer = 0; buffer < persistent.size(); ++buffer)
    if (persistent[buffer] || initiallyLive[buffer])
      markLive(static_cast<int>(buffer));
  sample();
}

void MemoryTracker::shareVariables(int64_t arenaOrigin) {
  for (const PlanVariable &variable : plan.variables) {
    int buffer = plan.values[variable.value].buffer;
    persistent[buffer] = 0;
    external[buffer] = 1;
  }
  origin = arenaOrigin;
}

void MemoryTracker::markLive(int buffer) {
  if (live[buffer] || external[buffer])
    return;
  live[buffer] = 1;
  const PlanBuffer &entry = plan.buffers[buffer];
  if (ArenaPeaks *arena = offloadLive(buffer)) {
    arena->byRole[static_cast<int>(entry.role)] += entry.bytes;
    arena->total += entry.bytes;
    ArenaPeaks &top = *offloadPeak(buffer);
    top.total = std::max(top.total, arena->total);
    for (int role = 0; role < kNumRoles; ++role)
      top.byRole[role] = std::max(top.byRole[role], arena->byRole[role]);
    return;
  }
  current[static_cast<int>(entry.role)] += entry.bytes;
  currentTotal += entry.bytes;
  currentHighWater =
      std::max(currentHighWater, entry.offset + entry.bytes - origin);
}

void MemoryTracker::markDead(int buffer) {
  if (!live[buffer] || persistent[buffer] || external[buffer])
    return;
  live[buffer] = 0;
  const PlanBuffer &entry = plan.buffers[buffer];
  if (ArenaPeaks *arena = offloadLive(buffer)) {
    arena->byRole[static_cast<int>(entry.role)] -= entry.bytes;
    arena->total -= entry.bytes;
    return;
  }
  current[static_cast<int>(entry.role)] -= entry.bytes;
  currentTotal -= entry.bytes;
}

void MemoryTracker::sample() {
  peak.total = std::max(peak.total, currentTotal);
  peak.highWater = std::max(peak.highWater, currentHighWater);
  int64_t states = current[static_cast<int>(Role::Param)] +
                   current[static_cast<int>(Role::Grad)] +
                   current[static_cast<int>(Role::Master)] +
                   current[static_cast<int>(Role::OptState)];
  peak.modelStates = std::max(peak.modelStates, states);
  for (int role = 0; role < kNumRoles; ++role)
    peak.byRole[role] = std::max(peak.byRole[role], current[role]);
}

} // namespace zerosbp::runtime
