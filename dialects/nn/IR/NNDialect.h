//===- NNDialect.h - nn dialect ---------------------------------*- C++ -*-===//

#ifndef ZEROSBP_DIALECTS_NN_IR_NNDIALECT_H
#define ZEROSBP_DIALECTS_NN_IR_NNDIALECT_H

#include "dialects/sbp/IR/SbpDialect.h"
#include "mlir/IR/Dialect.h"

#include "dialects/nn/IR/NNDialect.h.inc"
#include "dialects/nn/IR/NNEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/IR/NNAttrs.h.inc"

namespace mlir::nn {

/// A forward op of activation-checkpointing segment N (an i64): zero-remat
/// recomputes the segment in the backward instead of keeping its
/// activations (docs/design.md#activation-checkpointing). Set by the graph
/// builder around a checkpointed module.
inline constexpr llvm::StringLiteral kCheckpointAttr = "zero.checkpoint";

/// The pipeline stage (an i64) of an op: which stage's ranks run it
/// (docs/design.md#pipeline-parallelism). Set by the graph builder on the
/// forward ops of the layers it cuts into stages; zero-autodiff copies it
/// onto each op's gradient, and zero-pipeline-stages places the rest.
inline constexpr llvm::StringLiteral kPipelineStageAttr =
    "zero.pipeline_stage";

/// The micro-batch (an i64) a forward op's copy computes (zero-accumulate);
/// zero-autodiff copies it onto the op's gradient. The pipeline schedule
/// orders the micro-batches by it.
inline constexpr llvm::StringLiteral kMicroBatchAttr = "zero.micro_batch";

} // namespace mlir::nn

#endif // ZEROSBP_DIALECTS_NN_IR_NNDIALECT_H
