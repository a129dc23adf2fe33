//===- PipelineSchedule.h - micro-batch schedules of a pipeline -*- C++ -*-===//
//
// The order in which each pipeline stage runs its micro-batches' forwards
// and backwards (1F1B, interleaved 1F1B or GPipe), and the step those orders
// take when each chunk costs a planned time
// (docs/design.md#pipeline-parallelism).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_PIPELINE_PIPELINESCHEDULE_H
#define ZEROSBP_PASSES_PIPELINE_PIPELINESCHEDULE_H

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace zerosbp::pipeline {

/// A forward or a backward of one micro-batch.
enum class Phase { Forward, Backward };

/// The forward or backward of one micro-batch through one of a stage's
/// model chunks: its only one, or with an interleaved schedule the
/// `model`-th of the layer ranges the stage holds (virtual stage
/// model * stages + stage).
struct Chunk {
  Phase phase = Phase::Forward;
  int64_t micro = 0;
  int64_t model = 0;

  friend bool operator==(const Chunk &a, const Chunk &b) {
    return std::tie(a.phase, a.micro, a.model) ==
           std::tie(b.phase, b.micro, b.model);
  }
  friend bool operator<(const Chunk &a, const Chunk &b) {
    return std::tie(a.phase, a.micro, a.model) <
           std::tie(b.phase, b.micro, b.model);
  }
};
/// A chunk on one stage.
using StageChunk = std::pair<int64_t, Chunk>;

/// How the micro-batches flow through the stages.
struct Schedule {
  int64_t stages = 1;
  int64_t microBatches = 1;
  /// Model chunks per stage (Megatron's virtual pipeline stages); more than
  /// one needs 1F1B and micro-batches in groups of `stages`.
  int64_t modelChunks = 1;
  bool gpipe = false;
};

/// The chunks stage `stage` runs, in order:
/// - GPipe: every forward, then every backward.
/// - 1F1B: the forwards that fill the pipeline behind the stage, then one
///   backward per forward, then the rest.
/// - Interleaved 1F1B (Megatron's): the same over the stage's model chunks,
///   taking micro-batches in groups of `stages` through one model chunk
///   after another, forwards through the chunks in order and backwards in
///   reverse, with (stages - 1 - stage) * 2 + (modelChunks - 1) * stages
///   forwards ahead (all of them when there are `stages` micro-batches).
llvm::SmallVector<Chunk> scheduleOf(int64_t stage, const Schedule &schedule);

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
planStep(const Schedule &schedule, const std::map<StageChunk, double> &cost,
         const std::map<StageChunk, std::set<StageChunk>> &waitsFor);

} // namespace zerosbp::pipeline

#endif // ZEROSBP_PASSES_PIPELINE_PIPELINESCHEDULE_H
