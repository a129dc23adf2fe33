//===- GradClip.cpp - zero-grad-clip --------------------------------------===//
//
// Global-norm gradient clipping on the gradients as the updates read them,
// so that split gradients need one scalar all-reduce, not a full one.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"

#include "dialects/nn/IR/NNOps.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROGRADCLIP
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

struct ZeroGradClipPass
    : public zerosbp::impl::ZeroGradClipBase<ZeroGradClipPass> {
  using ZeroGradClipBase::ZeroGradClipBase;
  void runOnOperation() override;
};

/// `type`'s shape and element type with `sbp`, `placement` and `role`.
RankedTensorType annotated(ArrayRef<int64_t> shape, Type element,
                           ArrayRef<SbpAttr> sbp, PlacementAttr placement,
                           Role role = Role::activation) {
  return globalTensorType(RankedTensorType::get(shape, element), sbp, placement,
                          role);
}

} // namespace

void ZeroGradClipPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  if (!(maxNorm > 0) || std::isinf(maxNorm)) {
    func.emitError("zero-grad-clip: max-norm must be finite and positive");
    return signalPassFailure();
  }
  SmallVector<nn::OptimizerUpdateOpInterface> updates =
      collectOptimizerUpdates(func);
  if (updates.empty())
    return;

  hoistGradientsAboveUpdates(updates);
  MLIRContext *ctx = func.getContext();
  OpBuilder builder(updates.front());
  Location loc = updates.front()->getLoc();
  Type f32 = builder.getF32Type();
  double gradScale = 1.0;
  SmallVector<Value> sums;
  PlacementAttr placement;
  for (nn::OptimizerUpdateOpInterface update : updates) {
    Value grad = update.getGradient();
    auto type = cast<RankedTensorType>(grad.getType());
    GlobalTensorAttr encoding = getGlobalEncoding(type);
    if (!encoding) {
      update->emitOpError("has an unannotated gradient; run zero-grad-clip "
                          "after zero-sbp-propagation and zero-stage");
      return signalPassFailure();
    }
    if (llvm::any_of(encoding.getSbp(),
                     [](SbpAttr sbp) { return sbp.isPartial(); })) {
      update->emitOpError("reads a partial gradient");
      return signalPassFailure();
    }
    placement = encoding.getPlacement();
    if (FloatAttr scale = update.getGradScaleAttr())
      gradScale = scale.getValueAsDouble();

    // Each rank's sum of squares: whole for a broadcast gradient, a partial
    // sum over shards for a split one.
    ArrayRef<SbpAttr> sbp = encoding.getSbp();
    Value wide = grad;
    if (!type.getElementType().isF32())
      wide = nn::CastOp::create(
          builder, loc,
          RankedTensorType::get(type.getShape(), f32,
                                encoding.withRole(Role::activation)),
          grad);
    else if (encoding.getRole() != Role::activation)
      wide = nn::ReshapeOp::create(
          builder, loc,
          RankedTensorType::get(type.getShape(), f32,
                                encoding.withRole(Role::activation)),
          grad);
    Value squares = nn::MulOp::create(builder, loc, wide.getType(), wide, wide);
    SmallVector<SbpAttr> reduced;
    for (SbpAttr axis : sbp)
      reduced.push_back(axis.isSplit() ? SbpAttr::getPartial(ctx) : axis);
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      axes.push_back(i);
    Value sum = nn::ReduceSumOp::create(
        builder, loc, annotated({}, f32, reduced, placement), squares,
        builder.getDenseI64ArrayAttr(axes));
    sums.push_back(sum);
  }
  // The one collective: the global sum of squares on every rank.
  ScalarSum globalSum(placement);
  for (Value sum : sums)
    globalSum.add(builder, loc, sum);
  Value total = globalSum.broadcast(builder, loc);
  Value coefficient = nn::ClipCoefficientOp::create(
      builder, loc, total.getType(), total, builder.getF64FloatAttr(maxNorm),
      builder.getF64FloatAttr(gradScale));

  for (nn::OptimizerUpdateOpInterface update : updates) {
    builder.setInsertionPoint(update);
    Value grad = update.getGradient();
    auto type = cast<RankedTensorType>(grad.getType());
    Value factor = coefficient;
    if (!type.getElementType().isF32())
      factor = nn::CastOp::create(
          builder, loc,
          annotated({}, type.getElementType(),
                    uniformSbp(SbpAttr::getBroadcast(ctx), placement),
                    placement),
          coefficient);
    Value clipped =
        nn::MulOp::create(builder, update->getLoc(), type, grad, factor);
    update.getGradientMutable().set(clipped);
  }
}
