//===- PipelineSchedule.h - micro-batch schedules of a pipeline -*- C++ -*-===//
//
// The order in which each pipeline stage runs its micro-batches' forwards
// and backwards (1F1B or GPipe), and the step those orders take when each
// chunk costs a planned time (docs/design.md#pipeline-parallelism).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_PIPELINE_PIPELINESCHEDULE_H
#define ZEROSBP_PASSES_PIPELINE_PIPELINESCHEDULE_H

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace zerosbp::pipeline {

/// A forward or a backward of one micro-batch.
enum class Phase { Forward, Backward };
using Chunk = std::pair<Phase, int64_t>;
/// A chunk on one stage.
using StageChunk = std::pair<int64_t, Chunk>;

/// The chunks stage `stage` of `stages` runs, in order: GPipe's every
/// forward then every backward, or 1F1B's forwards that fill the pipeline
/// behind the stage, then one backward per forward, then the rest.
llvm::SmallVector<Chunk> scheduleOf(int64_t stage, int64_t stages,
                                    int64_t microBatches, bool gpipe);

/// The step of a schedule and each stage's busy time.
struct PlannedStep {
  double step = 0;
  llvm::SmallVector<double> busy;
  /// The share of the stages' time they wait: 1 - sum(busy) / (P step).
  double bubble() const;
};

/// Runs each stage's chunks in schedule order, a chunk taking `cost` (0
/// when absent) from when its stage is free and the chunks it `waitsFor`
/// have finished. The stage and chunk that wait forever, when one does.
using ScheduleResult = std::pair<std::optional<PlannedStep>, StageChunk>;
ScheduleResult
planStep(int64_t stages, int64_t microBatches, bool gpipe,
         const std::map<StageChunk, double> &cost,
         const std::map<StageChunk, std::set<StageChunk>> &waitsFor);

} // namespace zerosbp::pipeline

#endif // ZEROSBP_PASSES_PIPELINE_PIPELINESCHEDULE_H
