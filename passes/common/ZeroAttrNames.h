//===- ZeroAttrNames.h - discardable attributes of the passes ---*- C++ -*-===//
//
// The `zero.*` attributes that one pass writes and later passes, the
// estimators or zero-export-plan read (docs/ir.md#the-local-view), spelled
// once. The memory plan's attributes are in passes/memory/PlanAttrs.h and
// `zero.inference` in passes/inference/InferenceAttrs.h.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_COMMON_ZEROATTRNAMES_H
#define ZEROSBP_PASSES_COMMON_ZEROATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace zerosbp {

/// The prefix of every discardable attribute of the passes; the plan drops
/// them from an op's attributes.
inline constexpr llvm::StringLiteral kZeroAttrPrefix = "zero.";

/// func: the ZeRO stage (zero-stage).
inline constexpr llvm::StringLiteral kStageAttr = "zero.stage";

/// func: the matmul FLOPs per step that zero-remat's recomputation adds,
/// over the global batch (2 m n k per product; other ops are not counted).
inline constexpr llvm::StringLiteral kRecomputeFlopsAttr =
    "zero.recompute_flops";

/// nn.fill: marks the seed of the backward, d loss / d loss (zero-autodiff).
inline constexpr llvm::StringLiteral kLossSeedAttr = "zero.loss_seed";

/// nn.variable: a master's parameter, whose initial value it copies
/// (zero-amp).
inline constexpr llvm::StringLiteral kCopyOfAttr = "zero.copy_of";

/// nn.add: adds one more contribution to a gradient (zero-autodiff: a
/// value read several times, a tied parameter). zero-memory-plan may write
/// the sum over its first operand, the running total, as a `.grad` buffer
/// accumulates, so that the total is one buffer from its first
/// contribution on.
inline constexpr llvm::StringLiteral kGradSumAttr = "zero.grad_sum";

/// shard.grid: the placement the grid stands for (zero-partition).
inline constexpr llvm::StringLiteral kPlacementAttr = "zero.placement";

/// nn.variable, nn.input: the global type in the local view
/// (zero-partition).
inline constexpr llvm::StringLiteral kGlobalTypeAttr = "zero.global_type";

/// An op of the local view: its results live in this memory kind
/// (`#sbp.memory<host>` or `<nvme>`), read off their global types by
/// zero-partition; without it, in device memory (docs/design.md#offload).
inline constexpr llvm::StringLiteral kMemoryKindAttr = "zero.memory_kind";

/// func: the pipeline's stages, micro-batches, schedule, planned bubble and
/// each stage's FLOPs (zero-pipeline-stages).
inline constexpr llvm::StringLiteral kPipelineAttr = "zero.pipeline";

/// func: the step is a loop of this many micro-batches over one
/// micro-batch's graph (zero-accumulate with `loop`), run by the pipeline
/// schedule (docs/design.md#the-micro-batch-loop).
inline constexpr llvm::StringLiteral kMicroBatchLoopAttr =
    "zero.micro_batch_loop";

/// An op of the micro-batch loop whose result replaces its first operand
/// from one micro-batch to the next: a running total (a gradient's, the
/// loss's) that a fill made zero before the loop. zero-memory-plan writes
/// it in the bytes of that operand, and what reads it after the loop reads
/// the last micro-batch's total.
inline constexpr llvm::StringLiteral kLoopCarriedAttr = "zero.loop_carried";

/// nn.slice: the dim along which the micro-batch loop's micro-batch m
/// takes index m (the graph holds micro-batch 0's slice).
inline constexpr llvm::StringLiteral kMicroBatchDimAttr =
    "zero.micro_batch_dim";

/// An op of the micro-batch loop: the index of its chunk, one stage's
/// forward or backward of one model chunk, in `zero.pipeline`'s `loop`
/// (zero-pipeline-stages). Ops without it run once, before or after the
/// loop.
inline constexpr llvm::StringLiteral kLoopChunkAttr = "zero.loop_chunk";

/// sbp.cast between pipeline stages in the micro-batch loop: the chunk
/// whose ops first read it on the receiving stage, where zero-partition
/// puts its receive.
inline constexpr llvm::StringLiteral kLoopReceiveChunkAttr =
    "zero.loop_receive_chunk";

/// func: the rank a per-rank program is for (zero-partition with `rank=N`).
inline constexpr llvm::StringLiteral kRankAttr = "zero.rank";

} // namespace zerosbp

#endif // ZEROSBP_PASSES_COMMON_ZEROATTRNAMES_H
