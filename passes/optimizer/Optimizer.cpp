//===- Optimizer.cpp - zero-optimizer -------------------------------------===//
//
// Turns `nn.gradient "p", %g` into the update of `p` and of its optimizer
// state, following torch.optim's SGD, Adam and AdamW
// (docs/design.md#numerics).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"

#include "llvm/ADT/StringMap.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

using zerosbp::OptimizerKind;

namespace {

struct ZeroOptimizerPass
    : public zerosbp::impl::ZeroOptimizerBase<ZeroOptimizerPass> {
  using ZeroOptimizerBase::ZeroOptimizerBase;

  void runOnOperation() override;

private:
  LogicalResult checkOptions();
  /// A zero-initialized optimizer state variable of `param`, placed after
  /// `after` so that variables keep a stable, rank-independent order.
  nn::VariableOp createState(OpBuilder &builder, nn::VariableOp param,
                             Operation *after, StringRef suffix);
};

} // namespace

LogicalResult ZeroOptimizerPass::checkOptions() {
  func::FuncOp func = getOperation();
  if (!(lr >= 0) || std::isinf(lr))
    return func.emitError("zero-optimizer: lr must be finite and "
                          "non-negative, got ")
           << lr;
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return func.emitError("zero-optimizer: betas must lie in [0, 1)");
  if (!(eps >= 0) || !(weightDecay >= 0))
    return func.emitError(
        "zero-optimizer: eps and weight-decay must be non-negative");
  return success();
}

nn::VariableOp ZeroOptimizerPass::createState(OpBuilder &builder,
                                              nn::VariableOp param,
                                              Operation *after,
                                              StringRef suffix) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfter(after);
  auto type = cast<RankedTensorType>(param.getResult().getType());
  // A state variable has the parameter's shape and, where the parameter was
  // captured with one, its layout (a model-axis split, tensor parallelism):
  // each rank keeps the states of its part. Otherwise propagation gives it
  // one.
  if (auto encoding = sbp::getGlobalEncoding(type))
    type = RankedTensorType::get(type.getShape(), type.getElementType(),
                                 encoding.withRole(sbp::Role::opt_state));
  else
    type = RankedTensorType::get(type.getShape(), type.getElementType());
  return nn::VariableOp::create(
      builder, param.getLoc(), type,
      builder.getStringAttr((param.getName() + suffix).str()),
      sbp::RoleAttr::get(builder.getContext(), sbp::Role::opt_state),
      nn::InitializerAttr::get(builder.getContext(), nn::Initializer::zeros),
      builder.getF64FloatAttr(0.0), /*frozen=*/nullptr,
      /*logical_shape=*/nullptr, /*model_split=*/nullptr);
}

void ZeroOptimizerPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  if (failed(checkOptions()))
    return signalPassFailure();
  OptimizerKind kind = optimizer;

  llvm::StringMap<nn::VariableOp> variables;
  func.walk([&](nn::VariableOp op) { variables[op.getName()] = op; });
  SmallVector<nn::GradientOp> gradients;
  func.walk([&](nn::GradientOp op) { gradients.push_back(op); });
  if (gradients.empty())
    return;

  OpBuilder builder(func.getContext());
  Value step;
  if (kind != OptimizerKind::SGD) {
    // One step count per graph: dropout may already read it.
    auto existing = func.getBody().front().getOps<nn::StepOp>();
    if (!existing.empty()) {
      step = (*existing.begin()).getResult();
    } else {
      builder.setInsertionPointToStart(&func.getBody().front());
      step =
          nn::StepOp::create(builder, func.getLoc(),
                             RankedTensorType::get({}, builder.getI64Type()));
    }
  }

  for (nn::GradientOp gradient : gradients) {
    nn::VariableOp param = variables.lookup(gradient.getName());
    if (!param) {
      gradient.emitOpError("names no variable");
      return signalPassFailure();
    }
    builder.setInsertionPoint(gradient);
    Location loc = gradient.getLoc();
    Value p = param.getResult(), g = gradient.getValue();
    auto lr = builder.getF64FloatAttr(this->lr);
    if (kind == OptimizerKind::SGD) {
      // torch.optim.SGD's weight decay adds wd * p to the gradient.
      if (weightDecay > 0)
        g = nn::AddOp::create(
            builder, loc, g,
            nn::ScaleOp::create(builder, loc, p,
                                builder.getF64FloatAttr(weightDecay)));
      Value updated = nn::SgdOp::create(builder, loc, p, g, lr,
                                        builder.getF64FloatAttr(1.0));
      nn::AssignOp::create(builder, loc, param.getName(), updated);
    } else {
      nn::VariableOp mVar = createState(builder, param, param, ".exp_avg");
      nn::VariableOp vVar = createState(builder, param, mVar, ".exp_avg_sq");
      Value m = mVar.getResult(), v = vVar.getResult();
      // Adam and AdamW share their operands, attributes and results.
      auto create = [&](auto opTag) {
        using OpTy = decltype(opTag);
        auto update = OpTy::create(
            builder, loc, p, g, m, v, step, lr, builder.getF64FloatAttr(beta1),
            builder.getF64FloatAttr(beta2), builder.getF64FloatAttr(eps),
            builder.getF64FloatAttr(weightDecay), builder.getF64FloatAttr(1.0));
        nn::AssignOp::create(builder, loc, param.getName(),
                             update.getNewParam());
        nn::AssignOp::create(builder, loc, (param.getName() + ".exp_avg").str(),
                             update.getNewExpAvg());
        nn::AssignOp::create(builder, loc,
                             (param.getName() + ".exp_avg_sq").str(),
                             update.getNewExpAvgSq());
      };
      if (kind == OptimizerKind::Adam)
        create(nn::AdamOp());
      else
        create(nn::AdamWOp());
    }
    gradient.erase();
  }
}
