//===- SbpUtils.h - helpers shared by the SBP passes ------------*- C++ -*-===//

#ifndef ZEROSBP_PASSES_COMMON_SBPUTILS_H
#define ZEROSBP_PASSES_COMMON_SBPUTILS_H

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpInterfaces.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "mlir/IR/Builders.h"

#include <limits>
#include <optional>

namespace zerosbp {

/// Bytes one rank sends in a collective of `kind` over `groupSize` ranks
/// moving a tensor of `bytes` bytes, counted on its full-size side
/// (docs/ir.md#boxing).
double collectiveBytes(mlir::sbp::CollectiveKind kind, int64_t bytes,
                       int64_t groupSize);

/// Bytes one rank sends to change `from` into `to` on one hierarchy axis of
/// `groupSize` ranks for a tensor of `bytes` bytes (docs/ir.md#boxing).
/// Infinity when no collective does it (P(sum) to P(max)).
double boxingBytes(mlir::sbp::SbpAttr from, mlir::sbp::SbpAttr to,
                   int64_t bytes, int64_t groupSize);

/// The same for a whole SBP list on `placement`.
double boxingBytes(llvm::ArrayRef<mlir::sbp::SbpAttr> from,
                   llvm::ArrayRef<mlir::sbp::SbpAttr> to, int64_t bytes,
                   mlir::sbp::PlacementAttr placement);

/// The multi-index of the `linear`-th rank of a placement whose hierarchy
/// is `hierarchy` (row-major, as the placement lays its ranks out).
llvm::SmallVector<int64_t, 2> rankCoordinates(llvm::ArrayRef<int64_t> hierarchy,
                                              int64_t linear);

/// The first split that does not divide evenly (`dim` < 0: none).
struct UnevenSplit {
  int64_t dim = -1, size = 0, parts = 1, axis = 0;
  explicit operator bool() const { return dim >= 0; }
};

/// The shape the rank at `coords` (one index per hierarchy axis) holds of a
/// tensor of `shape` laid out as `sbp` over `hierarchy`: nested balanced
/// splits, larger shares first. Empty `coords` stands for every rank
/// (SPMD), where each split is taken as even and the first uneven one is
/// reported in `uneven`.
llvm::SmallVector<int64_t> localShape(llvm::ArrayRef<int64_t> shape,
                                      llvm::ArrayRef<mlir::sbp::SbpAttr> sbp,
                                      llvm::ArrayRef<int64_t> hierarchy,
                                      llvm::ArrayRef<int64_t> coords,
                                      UnevenSplit *uneven = nullptr);

/// Size in bytes of one element of a tensor type.
int64_t elementBytes(mlir::RankedTensorType type);

/// Size in bytes of a tensor type's logical value.
int64_t tensorBytes(mlir::RankedTensorType type);

/// tensorBytes() of a static shape, or nullopt where the product overflows
/// int64 (tensorBytes() would wrap).
std::optional<int64_t> checkedTensorBytes(mlir::RankedTensorType type);

/// An SBP list as messages show it: `[S(0), B]`.
std::string sbpString(llvm::ArrayRef<mlir::sbp::SbpAttr> sbp);

/// `type` (shape and element type kept) with a `#sbp.global` encoding.
mlir::RankedTensorType globalTensorType(mlir::RankedTensorType type,
                                        llvm::ArrayRef<mlir::sbp::SbpAttr> sbp,
                                        mlir::sbp::PlacementAttr placement,
                                        mlir::sbp::Role role);

/// The same SBP on every hierarchy axis of `placement`.
llvm::SmallVector<mlir::sbp::SbpAttr>
uniformSbp(mlir::sbp::SbpAttr sbp, mlir::sbp::PlacementAttr placement);

/// `value` cast to `sbp` (same placement and role); `value` itself when it
/// already has it.
mlir::Value castTo(mlir::OpBuilder &builder, mlir::Location loc,
                   mlir::Value value, llvm::ArrayRef<mlir::sbp::SbpAttr> sbp);

/// The optimizer updates of `func`, in order.
llvm::SmallVector<mlir::nn::OptimizerUpdateOpInterface>
collectOptimizerUpdates(mlir::Operation *func);

/// A global sum of 0-D per-rank terms (overflow counts, squared norms).
/// Terms that are whole on every rank (broadcast on every axis) are added
/// as they are; the others join a partial sum that one scalar all-reduce
/// completes. Broadcast terms never become partial sums: B -> P would need
/// each rank's index, which a plan cannot compute.
class ScalarSum {
public:
  explicit ScalarSum(mlir::sbp::PlacementAttr placement)
      : placement(placement) {}
  void add(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value term);
  /// The sum, broadcast; null when no term was added.
  mlir::Value broadcast(mlir::OpBuilder &builder, mlir::Location loc) const;

private:
  mlir::sbp::PlacementAttr placement;
  mlir::Value partial, whole;
};

/// Recomputes `op`'s result shapes and element types with its type
/// inference, keeping each result's encoding.
mlir::LogicalResult reinferResultTypes(mlir::Operation *op);

/// Moves the ops computing each update's gradient operand that sit below the
/// first update (stage 1 reduce-scatters right before each update) above
/// it, so a pass can read every gradient before any update runs.
void hoistGradientsAboveUpdates(
    llvm::ArrayRef<mlir::nn::OptimizerUpdateOpInterface> updates);

/// `op`'s pipeline mark `mark` (nn::kPipelineStageAttr or
/// nn::kMicroBatchAttr), or -1 when it has none (or is null).
int64_t pipelineMark(mlir::Operation *op, llvm::StringRef mark);

/// Gives the ops `builder` built after `before` (null: from the start of
/// its block) up to its insertion point `from`'s pipeline marks (stage and
/// micro-batch): ops a pass builds to compute what `from` computes, or its
/// gradient, run where and when `from` does
/// (docs/design.md#pipeline-parallelism).
void copyPipelineMarks(mlir::Operation *from, mlir::Operation *before,
                       mlir::OpBuilder &builder);

} // namespace zerosbp

#endif // ZEROSBP_PASSES_COMMON_SBPUTILS_H
