//===- Inference.cpp - zero-inference -------------------------------------===//
//
// A forward graph compiled for prediction: no gradients, no optimizer, and
// dropout switched off (docs/compiler.md#inference-graphs).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/inference/InferenceAttrs.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROINFERENCE
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

struct ZeroInferencePass
    : public zerosbp::impl::ZeroInferenceBase<ZeroInferencePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("zero-inference: function '")
          << func.getSymName() << "' must have a single block";
      return signalPassFailure();
    }
    if (func.getNumResults() == 0) {
      func.emitError("zero-inference: function '")
          << func.getSymName() << "' returns nothing; an inference graph "
          << "returns its outputs";
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    for (Operation &op : body) {
      if (isa<nn::OptimizerUpdateOpInterface, nn::GradientOp, nn::AssignOp>(
              op)) {
        op.emitOpError("belongs to training; an inference graph has no "
                       "gradients, updates or assignments");
        return signalPassFailure();
      }
    }
    // Prediction keeps every activation: dropout is the identity.
    for (auto dropout :
         llvm::make_early_inc_range(body.getOps<nn::DropoutOp>())) {
      dropout.getResult().replaceAllUsesWith(dropout.getInput());
      dropout.erase();
    }
    // The step only fed dropout.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isa<nn::StepOp>(op) && isOpTriviallyDead(&op))
        op.erase();
    func->setAttr(zerosbp::kInferenceAttr, UnitAttr::get(func.getContext()));
  }
};

} // namespace
