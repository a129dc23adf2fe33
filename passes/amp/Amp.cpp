//===- Amp.cpp - zero-amp -------------------------------------------------===//
//
// Mixed precision the way DeepSpeed's fp16/bf16 modes do it: the model
// computes in half precision, each update runs on an fp32 master copy with
// fp32 state, and the gradient crosses over inside the update, where it is
// widened and divided by the loss scale.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>

namespace zerosbp {
#define GEN_PASS_DEF_ZEROAMP
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

struct ZeroAmpPass : public zerosbp::impl::ZeroAmpBase<ZeroAmpPass> {
  using ZeroAmpBase::ZeroAmpBase;
  void runOnOperation() override;

private:
  LogicalResult addMasters(func::FuncOp func, OpBuilder &builder);
  LogicalResult reinferTypes(func::FuncOp func, OpBuilder &builder);
  /// The scaler's state variables; the backward seed becomes the scale.
  void addDynamicScale(func::FuncOp func, OpBuilder &builder);
  Type low;
};

/// `type` with another element type, its encoding kept.
RankedTensorType withElementType(Type type, Type element) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), element,
                               tensor.getEncoding());
}

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

/// `value` converted to `element` by a new nn.cast at the builder's point;
/// `value` itself when it already is.
Value castElements(OpBuilder &builder, Location loc, Value value,
                   Type element) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == element)
    return value;
  return nn::CastOp::create(
      builder, loc, RankedTensorType::get(type.getShape(), element), value);
}

} // namespace

LogicalResult ZeroAmpPass::addMasters(func::FuncOp func, OpBuilder &builder) {
  for (nn::OptimizerUpdateOpInterface update : collectOptimizerUpdates(func)) {
    auto param = update.getParameter().getDefiningOp<nn::VariableOp>();
    if (!param || param.getRole() != Role::param)
      return update->emitOpError(
          "updates a value that is not a parameter variable; run zero-amp "
          "right after zero-optimizer");
    if (!isF32Tensor(param.getResult().getType()))
      return param.emitOpError("zero-amp expects fp32 parameters");

    // The fp32 master copy, next to its parameter.
    builder.setInsertionPointAfter(param);
    Type masterType = param.getResult().getType();
    if (GlobalTensorAttr encoding = getGlobalEncoding(masterType))
      masterType = withEncoding(cast<RankedTensorType>(masterType),
                                encoding.withRole(Role::master));
    std::string masterName = (param.getName() + ".master").str();
    auto master = nn::VariableOp::create(
        builder, param.getLoc(), masterType, builder.getStringAttr(masterName),
        RoleAttr::get(builder.getContext(), Role::master), param.getInitAttr(),
        param.getInitScaleAttr(), /*frozen=*/nullptr,
        /*logical_shape=*/nullptr, /*model_split=*/nullptr);
    // The runtime draws the master's initial value as the parameter's.
    master->setAttr(kCopyOfAttr, param.getNameAttr());

    update.getParameterMutable().set(master.getResult());
    // A dynamic scale is divided out by zero-loss-scale instead.
    if (lossScale > 0)
      update.setGradScaleAttr(builder.getF64FloatAttr(lossScale));

    // The update now yields the master; the parameter gets it narrowed.
    OpResult updated = update.getUpdatedParameter();
    for (OpOperand &use : llvm::make_early_inc_range(updated.getUses())) {
      auto assign = dyn_cast<nn::AssignOp>(use.getOwner());
      if (!assign || assign.getName() != param.getName())
        continue;
      builder.setInsertionPoint(assign);
      nn::AssignOp::create(builder, assign.getLoc(), masterName, updated);
      assign.getValueMutable().assign(
          castElements(builder, assign.getLoc(), updated, low));
    }
  }
  return success();
}

LogicalResult ZeroAmpPass::reinferTypes(func::FuncOp func, OpBuilder &builder) {
  for (Operation &op :
       llvm::make_early_inc_range(func.getBody().front().getOperations())) {
    if (auto variable = dyn_cast<nn::VariableOp>(op)) {
      if (variable.getRole() == Role::param &&
          isF32Tensor(variable.getResult().getType()))
        variable.getResult().setType(
            withElementType(variable.getResult().getType(), low));
      continue;
    }
    if (auto input = dyn_cast<nn::InputOp>(op)) {
      if (!isF32Tensor(input.getResult().getType()))
        continue;
      builder.setInsertionPointAfter(input);
      Value narrowed = castElements(builder, input.getLoc(), input, low);
      input.getResult().replaceAllUsesExcept(narrowed,
                                             narrowed.getDefiningOp());
      continue;
    }
    if (auto fill = dyn_cast<nn::FillOp>(op)) {
      // The seed stays fp32 and carries the loss scale; other fills follow
      // the compute precision.
      // A running total's zero (zero.loop_carried) takes the precision
      // of what it sums, as the total of copies would.
      auto carried = llvm::find_if(fill->getUses(), [](OpOperand &use) {
        return use.getOperandNumber() == 0 &&
               use.getOwner()->hasAttr(kLoopCarriedAttr);
      });
      if (fill->hasAttr(kLossSeedAttr))
        fill.setValueAttr(
            builder.getF64FloatAttr(lossScale == 0 ? 1.0 : lossScale));
      else if (carried != fill->getUses().end())
        fill.getResult().setType(withElementType(
            fill.getResult().getType(),
            getElementTypeOrSelf(carried->getOwner()->getOperand(1))));
      else if (isF32Tensor(fill.getResult().getType()))
        fill.getResult().setType(
            withElementType(fill.getResult().getType(), low));
      continue;
    }
    if (isa<nn::CastOp, nn::StepOp, nn::AssignOp, nn::GradientOp>(op))
      continue;
    if (auto reshape = dyn_cast<nn::ReshapeOp>(op)) {
      reshape.getResult().setType(
          withElementType(reshape.getResult().getType(),
                          reshape.getInput().getType().getElementType()));
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      func.setFunctionType(builder.getFunctionType(
          func.getArgumentTypes(), TypeRange(ret.getOperandTypes())));
      continue;
    }
    // The loss is fp32 like autocast's cross-entropy: nn.cross_entropy
    // computes in f32 from low-precision logits and returns f32, and its
    // gradient comes out in the logits' precision, so no cast (an f32 copy
    // of tokens x vocabulary) is needed.
    if (!isa<InferTypeOpInterface>(op))
      return op.emitOpError("zero-amp cannot retype this op");
    if (failed(reinferResultTypes(&op)))
      return failure();
  }
  return success();
}

void ZeroAmpPass::addDynamicScale(func::FuncOp func, OpBuilder &builder) {
  Block &body = func.getBody().front();
  builder.setInsertionPointToStart(&body);
  auto scalar = RankedTensorType::get({}, builder.getF32Type());
  auto state = [&](StringRef name, double value) {
    return nn::VariableOp::create(
        builder, func.getLoc(), scalar, builder.getStringAttr(name),
        RoleAttr::get(builder.getContext(), Role::opt_state),
        nn::InitializerAttr::get(builder.getContext(),
                                 nn::Initializer::constant),
        builder.getF64FloatAttr(value), /*frozen=*/nullptr,
        /*logical_shape=*/nullptr, /*model_split=*/nullptr);
  };
  auto scale = state("amp.loss_scale", std::ldexp(1.0, initialScalePower));
  state("amp.good_steps", 0.0);
  state("amp.hysteresis", static_cast<double>(hysteresis));
  for (auto fill : llvm::make_early_inc_range(body.getOps<nn::FillOp>())) {
    if (!fill->hasAttr(kLossSeedAttr))
      continue;
    fill.getResult().replaceAllUsesWith(scale.getResult());
    fill.erase();
  }
}

void ZeroAmpPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  OpBuilder builder(func.getContext());
  switch (precision) {
  case zerosbp::Precision::BF16:
    low = builder.getBF16Type();
    break;
  case zerosbp::Precision::FP16:
    low = builder.getF16Type();
    break;
  case zerosbp::Precision::FP32:
    // Only a caller building the options in C++ can ask for this.
    func.emitError("zero-amp: precision must be fp16 or bf16, got 'fp32'");
    return signalPassFailure();
  }
  if (!(lossScale >= 0) || std::isinf(lossScale)) {
    func.emitError("zero-amp: loss-scale must be finite and non-negative "
                   "(0 scales dynamically)");
    return signalPassFailure();
  }
  if (lossScale == 0 &&
      (initialScalePower < 0 || initialScalePower > 126 || hysteresis < 1)) {
    func.emitError("zero-amp: initial-scale-power must lie in [0, 126] and "
                   "hysteresis be positive");
    return signalPassFailure();
  }
  if (!func.getBody().hasOneBlock()) {
    func.emitError("zero-amp expects a single-block graph");
    return signalPassFailure();
  }
  if (failed(addMasters(func, builder)) || failed(reinferTypes(func, builder)))
    return signalPassFailure();
  if (lossScale == 0)
    addDynamicScale(func, builder);
}
