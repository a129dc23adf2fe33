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

/// func: the rank a per-rank program is for (zero-partition with `rank=N`).
inline constexpr llvm::StringLiteral kRankAttr = "zero.rank";

} // namespace zerosbp

#endif // ZEROSBP_PASSES_COMMON_ZEROATTRNAMES_H
