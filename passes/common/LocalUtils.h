//===- LocalUtils.h - helpers for the local-view passes ---------*- C++ -*-===//
//
// Shared by zero-bucketing, zero-schedule, zero-memory-plan and
// zero-export-plan, which work on per-rank tensors after zero-partition.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_COMMON_LOCALUTILS_H
#define ZEROSBP_PASSES_COMMON_LOCALUTILS_H

#include "dialects/sbp/IR/SbpOps.h"
#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

namespace zerosbp {

/// Elements of a statically shaped tensor type (0 for other types).
int64_t numElements(mlir::Type type);

/// Elements a collective counts against its bucket limit: the full-size
/// side of each segment.
int64_t bucketElements(mlir::sbp::CollectiveStartOp start);

/// True for a stage-3 parameter gather: an all-gather of variable shards.
bool isParameterGather(mlir::sbp::CollectiveStartOp start);

/// The wait that completes `start` (null if it has none).
mlir::sbp::CollectiveWaitOp waitOf(mlir::sbp::CollectiveStartOp start);

/// `op` moved right before (after) `target` in `target`'s block, keeping
/// the other ops' order: Operation::moveBefore splices, which drops the
/// order of the whole block, and a pass that moves thousands of ops and
/// asks isBeforeInBlock in between would renumber the block each time.
/// Only `op` is left to number.
void moveBeforeInBlock(mlir::Operation *op, mlir::Operation *target);
void moveAfterInBlock(mlir::Operation *op, mlir::Operation *target);

/// The pipeline stage whose ranks run `op` (docs/design.md#pipeline-
/// parallelism): its `zero.pipeline_stage`, else that of the first operand's
/// producer that has one (a bucket's start and wait, made after the stages
/// were set, run where their inputs are); -1 without stages. An sbp.send
/// runs on its source stage, an sbp.recv on its target stage.
int64_t pipelineStageOf(mlir::Operation *op);

/// The parts of a block under a micro-batch loop (docs/design.md#the-
/// micro-batch-loop): the ops before the loop, each chunk's
/// (`zero.loop_chunk`) and those after it. The loop runs each chunk once
/// per micro-batch, so a pass that moves or fuses ops keeps each in its
/// part. Without a loop every op is in one part.
class LoopParts {
public:
  static constexpr int64_t kBefore = -1;
  static constexpr int64_t kAfter = INT64_MAX;

  explicit LoopParts(mlir::Block &block);
  bool hasLoop() const { return !firstOp.empty(); }
  /// `op`'s part: its chunk, or for an op without a chunk, kBefore or
  /// kAfter by where it was when the parts were read (kAfter for an op
  /// made since).
  int64_t of(mlir::Operation *op) const;
  /// The first op of the loop's parts after `part` (the terminator when
  /// none is). Receives do not count: until zero-schedule moves them, they
  /// sit with their sends.
  mlir::Operation *firstAfter(int64_t part) const;
  /// The first op of `part`, or for a part without ops the one after.
  mlir::Operation *firstOf(int64_t part) const;

private:
  llvm::DenseMap<mlir::Operation *, int64_t> partOf;
  /// The first op of each chunk and of the part after the loop.
  std::map<int64_t, mlir::Operation *> firstOp;
  mlir::Operation *terminator = nullptr;
};

/// Position of every op of a block, in order.
class OpPositions {
public:
  explicit OpPositions(mlir::Block &block);
  int64_t operator[](mlir::Operation *op) const { return positions.at(op); }
  /// The first position at which `value` exists (-1 for block arguments).
  int64_t definedAt(mlir::Value value) const;
  /// The earliest position that uses a result of `op`, or `end` when none.
  int64_t firstUse(mlir::Operation *op, int64_t end) const;
  /// The latest position that uses `value` (its definition when unused).
  int64_t lastUse(mlir::Value value) const;
  /// Where writing `value` begins: a collective writes its results from its
  /// start on; variables (and block arguments) hold their value from before
  /// the first op (-1).
  int64_t writeStart(mlir::Value value) const;
  /// Where reading `value` ends, at least where it is written (and at least
  /// 0): a collective reads its inputs until its wait. Reads by `ignore` do
  /// not count.
  int64_t readEnd(mlir::Value value, mlir::Operation *ignore = nullptr) const;

private:
  llvm::DenseMap<mlir::Operation *, int64_t> positions;
};

/// The position where the backward pass begins: the loss seed of
/// zero-autodiff (the terminator when there is none).
int64_t backwardStart(mlir::Block &block, const OpPositions &positions);

} // namespace zerosbp

#endif // ZEROSBP_PASSES_COMMON_LOCALUTILS_H
