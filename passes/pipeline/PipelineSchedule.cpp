//===- PipelineSchedule.cpp - micro-batch schedules of a pipeline ---------===//

#include "passes/pipeline/PipelineSchedule.h"

#include <algorithm>

using namespace zerosbp::pipeline;

llvm::SmallVector<Chunk> zerosbp::pipeline::scheduleOf(int64_t stage,
                                                       int64_t stages,
                                                       int64_t microBatches,
                                                       bool gpipe) {
  llvm::SmallVector<Chunk> order;
  if (gpipe) {
    for (int64_t m = 0; m < microBatches; ++m)
      order.push_back({Phase::Forward, m});
    for (int64_t m = 0; m < microBatches; ++m)
      order.push_back({Phase::Backward, m});
    return order;
  }
  int64_t warmup = std::min(stages - 1 - stage, microBatches);
  int64_t forward = 0, backward = 0;
  for (; forward < warmup; ++forward)
    order.push_back({Phase::Forward, forward});
  for (; forward < microBatches; ++forward, ++backward) {
    order.push_back({Phase::Forward, forward});
    order.push_back({Phase::Backward, backward});
  }
  for (; backward < microBatches; ++backward)
    order.push_back({Phase::Backward, backward});
  return order;
}

double PlannedStep::bubble() const {
  double total = 0;
  for (double time : busy)
    total += time;
  return step > 0 ? 1.0 - total / (static_cast<double>(busy.size()) * step)
                  : 0.0;
}

ScheduleResult zerosbp::pipeline::planStep(
    int64_t stages, int64_t microBatches, bool gpipe,
    const std::map<StageChunk, double> &cost,
    const std::map<StageChunk, std::set<StageChunk>> &waitsFor) {
  auto costOf = [&](const StageChunk &key) {
    auto it = cost.find(key);
    return it == cost.end() ? 0.0 : it->second;
  };
  llvm::SmallVector<llvm::SmallVector<Chunk>> runs;
  for (int64_t s = 0; s < stages; ++s)
    runs.push_back(scheduleOf(s, stages, microBatches, gpipe));
  std::map<StageChunk, double> finish;
  llvm::SmallVector<double> freeAt(stages, 0.0);
  llvm::SmallVector<size_t> next(stages, 0);
  // Each pass runs every stage as far as what it receives allows.
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s)
      while (next[s] < runs[s].size()) {
        StageChunk key{s, runs[s][next[s]]};
        double start = freeAt[s];
        bool ready = true;
        if (auto waits = waitsFor.find(key); waits != waitsFor.end())
          for (const StageChunk &from : waits->second) {
            auto it = finish.find(from);
            if (it == finish.end()) {
              ready = false;
              break;
            }
            start = std::max(start, it->second);
          }
        if (!ready)
          break;
        finish[key] = freeAt[s] = start + costOf(key);
        ++next[s];
        progress = true;
      }
  }
  PlannedStep planned;
  for (int64_t s = 0; s < stages; ++s) {
    if (next[s] < runs[s].size())
      return {std::nullopt, StageChunk{s, runs[s][next[s]]}};
    planned.step = std::max(planned.step, freeAt[s]);
    double busy = 0;
    for (const Chunk &chunk : runs[s])
      busy += costOf({s, chunk});
    planned.busy.push_back(busy);
  }
  return {planned, StageChunk{}};
}
