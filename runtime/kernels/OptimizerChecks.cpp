//===- OptimizerChecks.cpp - the checks of sgd, adam and clipping ---------===//

#include "runtime/kernels/OptimizerChecks.h"

namespace zerosbp::runtime::checks {

namespace {
/// Every float operand in `operands[0..count)` and every result has the
/// shape of operand 0.
void expectParamShapes(std::string_view op, const Tensors &operands,
                       size_t count, const Tensors &results) {
  static const char *const names[] = {"param", "grad", "exp_avg", "exp_avg_sq"};
  const std::vector<int64_t> &shape = operands[0].shape;
  for (size_t k = 0; k < count; ++k) {
    expectFloat(op, operands[k], names[k]);
    expectShape(op, operands[k], shape, names[k]);
  }
  for (const TensorRef &result : results) {
    expectFloat(op, result, "result");
    expectShape(op, result, shape, "result");
  }
}
} // namespace

void checkSgd(std::string_view op, const Tensors &operands,
              const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  expectParamShapes(op, operands, 2, results);
}

void checkAdam(std::string_view op, const Tensors &operands,
               const Tensors &results) {
  expectArity(op, operands, results, 5, 3);
  expectParamShapes(op, operands, 4, results);
  const TensorRef &step = operands[4];
  if (step.numel() != 1 ||
      (step.dtype != DType::I64 && step.dtype != DType::I32))
    fail(op, "step must be a 0-D i64");
}

ValueMessage adamStepMessage() { return {"step ", " is not positive"}; }

AdamConstants adamConstants(const AttrMap &attrs, bool decoupled) {
  double lr = attrs.getFloat("lr");
  double beta1 = attrs.getFloat("beta1", 0.9);
  double beta2 = attrs.getFloat("beta2", 0.999);
  double weightDecay = attrs.getFloat("weight_decay", 0.0);
  AdamConstants c;
  c.lr = lr;
  c.beta1Double = beta1;
  c.beta2Double = beta2;
  c.beta1 = static_cast<float>(beta1);
  c.oneMinusBeta1 = static_cast<float>(1.0 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.oneMinusBeta2 = static_cast<float>(1.0 - beta2);
  c.epsilon = static_cast<float>(attrs.getFloat("eps", 1e-8));
  c.gradScale = static_cast<float>(attrs.getFloat("grad_scale", 1.0));
  c.hasCoupledDecay = !decoupled && weightDecay != 0.0;
  c.coupledDecay = static_cast<float>(weightDecay);
  c.hasDecay = decoupled && weightDecay != 0.0;
  c.decay = static_cast<float>(1.0 - lr * weightDecay);
  return c;
}

void checkClipCoefficient(std::string_view op, const Tensors &operands,
                          const Tensors &results) {
  expectArity(op, operands, results, 1, 1);
  expectScalar(op, operands[0], "sum_squares");
  expectScalar(op, results[0], "result");
}

} // namespace zerosbp::runtime::checks
