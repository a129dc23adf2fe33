//===- PipelineSchedule.cpp - micro-batch schedules of a pipeline ---------===//

#include "passes/pipeline/PipelineSchedule.h"

#include <algorithm>

using namespace zerosbp::pipeline;

/// The k-th forward (or backward) of an interleaved stage: micro-batches
/// in groups of `stages`, each group through every model chunk before the
/// next, backwards through the chunks in reverse.
static Chunk interleavedChunk(int64_t k, Phase phase,
                              const Schedule &schedule) {
  int64_t group = schedule.stages * schedule.modelChunks;
  int64_t model = (k % group) / schedule.stages;
  if (phase == Phase::Backward)
    model = schedule.modelChunks - 1 - model;
  return {phase, (k / group) * schedule.stages + k % schedule.stages, model};
}

llvm::SmallVector<Chunk>
zerosbp::pipeline::scheduleOf(int64_t stage, const Schedule &schedule) {
  int64_t stages = schedule.stages, micro = schedule.microBatches;
  llvm::SmallVector<Chunk> order;
  if (schedule.gpipe) {
    for (int64_t m = 0; m < micro; ++m)
      order.push_back({Phase::Forward, m});
    for (int64_t m = 0; m < micro; ++m)
      order.push_back({Phase::Backward, m});
    return order;
  }
  int64_t chunks = schedule.modelChunks;
  int64_t total = micro * chunks;
  int64_t warmup = stages - 1 - stage;
  if (chunks > 1)
    warmup = micro == stages ? total : 2 * warmup + (chunks - 1) * stages;
  warmup = std::min(warmup, total);
  auto forwardAt = [&](int64_t k) {
    return chunks > 1 ? interleavedChunk(k, Phase::Forward, schedule)
                      : Chunk{Phase::Forward, k};
  };
  auto backwardAt = [&](int64_t k) {
    return chunks > 1 ? interleavedChunk(k, Phase::Backward, schedule)
                      : Chunk{Phase::Backward, k};
  };
  int64_t forward = 0, backward = 0;
  for (; forward < warmup; ++forward)
    order.push_back(forwardAt(forward));
  for (; forward < total; ++forward, ++backward) {
    order.push_back(forwardAt(forward));
    order.push_back(backwardAt(backward));
  }
  for (; backward < total; ++backward)
    order.push_back(backwardAt(backward));
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
    const Schedule &schedule, const std::map<StageChunk, double> &cost,
    const std::map<StageChunk, std::set<StageChunk>> &waitsFor) {
  auto costOf = [&](const StageChunk &key) {
    auto it = cost.find(key);
    return it == cost.end() ? 0.0 : it->second;
  };
  int64_t stages = schedule.stages;
  llvm::SmallVector<llvm::SmallVector<Chunk>> runs;
  for (int64_t s = 0; s < stages; ++s)
    runs.push_back(scheduleOf(s, schedule));
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
