//===- LossScale.cpp - zero-loss-scale ------------------------------------===//
//
// Dynamic loss scaling, finished where the updates read their gradients
// (after zero-stage): a global overflow check with one scalar all-reduce,
// unscaling in fp32, skipped updates on overflow, and the scaler's step.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"

#include "dialects/nn/IR/NNOps.h"
#include "llvm/ADT/StringMap.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROLOSSSCALE
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

struct ZeroLossScalePass
    : public zerosbp::impl::ZeroLossScaleBase<ZeroLossScalePass> {
  using ZeroLossScaleBase::ZeroLossScaleBase;
  void runOnOperation() override;
};

} // namespace

void ZeroLossScalePass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  if (window < 1 || hysteresis < 1 || !(minScale > 0)) {
    func.emitError("zero-loss-scale: window and hysteresis must be positive "
                   "and min-scale greater than 0");
    return signalPassFailure();
  }
  llvm::StringMap<nn::VariableOp> variables;
  func.walk([&](nn::VariableOp op) { variables[op.getName()] = op; });
  nn::VariableOp scale = variables.lookup("amp.loss_scale");
  nn::VariableOp goodSteps = variables.lookup("amp.good_steps");
  nn::VariableOp hysteresisLeft = variables.lookup("amp.hysteresis");
  if (!scale || !goodSteps || !hysteresisLeft) {
    func.emitError("zero-loss-scale: no amp.loss_scale state; run zero-amp "
                   "with loss-scale=0 first");
    return signalPassFailure();
  }
  SmallVector<nn::OptimizerUpdateOpInterface> updates =
      collectOptimizerUpdates(func);
  if (updates.empty())
    return;
  hoistGradientsAboveUpdates(updates);
  GlobalTensorAttr scaleEncoding =
      getGlobalEncoding(scale.getResult().getType());
  if (!scaleEncoding) {
    func.emitError("zero-loss-scale: run it after zero-sbp-propagation");
    return signalPassFailure();
  }
  PlacementAttr placement = scaleEncoding.getPlacement();
  MLIRContext *ctx = func.getContext();
  auto scalarType = [&](SbpAttr sbp) {
    return globalTensorType(RankedTensorType::get({}, Float32Type::get(ctx)),
                            uniformSbp(sbp, placement), placement,
                            Role::activation);
  };
  SbpAttr broadcast = SbpAttr::getBroadcast(ctx);
  SbpAttr partial = SbpAttr::getPartial(ctx);

  // Overflow anywhere: per-rank counts over what each rank holds, one
  // scalar all-reduce.
  OpBuilder builder(updates.front());
  Location loc = updates.front()->getLoc();
  ScalarSum total(placement);
  for (nn::OptimizerUpdateOpInterface update : updates) {
    Value grad = update.getGradient();
    GlobalTensorAttr encoding = getGlobalEncoding(grad.getType());
    if (!encoding || llvm::any_of(encoding.getSbp(), [](SbpAttr sbp) {
          return sbp.isPartial();
        })) {
      update->emitOpError("reads an unannotated or partial gradient; run "
                          "zero-loss-scale after zero-stage");
      return signalPassFailure();
    }
    SmallVector<SbpAttr> counted;
    for (SbpAttr axis : encoding.getSbp())
      counted.push_back(axis.isSplit() ? partial : axis);
    Value count = nn::NonfiniteCountOp::create(
        builder, loc,
        globalTensorType(RankedTensorType::get({}, Float32Type::get(ctx)),
                         counted, placement, Role::activation),
        grad);
    total.add(builder, loc, count);
  }
  Value overflow = total.broadcast(builder, loc);
  Value scaleValue =
      castTo(builder, loc, scale.getResult(), uniformSbp(broadcast, placement));
  if (scaleValue.getType() != scalarType(broadcast))
    scaleValue =
        nn::ReshapeOp::create(builder, loc, scalarType(broadcast), scaleValue);

  for (nn::OptimizerUpdateOpInterface update : updates) {
    // Unscale in fp32, on the shard the update reads.
    builder.setInsertionPoint(update);
    Value grad = update.getGradient();
    auto type = cast<RankedTensorType>(grad.getType());
    auto encoding = getGlobalEncoding(type);
    auto wideType =
        RankedTensorType::get(type.getShape(), Float32Type::get(ctx), encoding);
    Value wide =
        type.getElementType().isF32()
            ? grad
            : nn::CastOp::create(builder, loc, wideType, grad).getResult();
    update.getGradientMutable().set(
        nn::DivOp::create(builder, loc, wideType, wide, scaleValue));

    // On overflow the update keeps every value as it was.
    builder.setInsertionPointAfter(update);
    for (OpResult result : update->getResults()) {
      Value before = update.getUpdatedOperand(result).get();
      auto kept = nn::SelectOp::create(builder, loc, result.getType(), overflow,
                                       before, result);
      result.replaceAllUsesExcept(kept, kept);
    }
  }

  // The scaler's step, after the last update.
  builder.setInsertionPointAfter(updates.back());
  auto castState = [&](nn::VariableOp variable) {
    return castTo(builder, loc, variable.getResult(),
                  uniformSbp(broadcast, placement));
  };
  auto step = nn::LossScaleUpdateOp::create(
      builder, loc,
      TypeRange{scale.getResult().getType(), goodSteps.getResult().getType(),
                hysteresisLeft.getResult().getType()},
      castState(scale), castState(goodSteps), castState(hysteresisLeft),
      overflow, builder.getI64IntegerAttr(window),
      builder.getF64FloatAttr(minScale), builder.getI64IntegerAttr(hysteresis));
  nn::AssignOp::create(builder, loc, "amp.loss_scale", step.getNewScale());
  nn::AssignOp::create(builder, loc, "amp.good_steps", step.getNewGoodSteps());
  nn::AssignOp::create(builder, loc, "amp.hysteresis",
                       step.getNewHysteresisLeft());
}
