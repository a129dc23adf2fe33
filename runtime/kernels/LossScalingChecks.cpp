//===- LossScalingChecks.cpp - the checks of the loss scaler's ops --------===//

#include "runtime/kernels/LossScalingChecks.h"

namespace zerosbp::runtime::checks {

void checkNonfiniteCount(std::string_view op, const Tensors &operands,
                         const Tensors &results) {
  expectArity(op, operands, results, 1, 1);
  expectFloat(op, operands[0], "input");
  expectScalar(op, results[0], "result");
}

void checkSelect(std::string_view op, const Tensors &operands,
                 const Tensors &results) {
  expectArity(op, operands, results, 3, 1);
  expectScalar(op, operands[0], "predicate");
  const TensorRef &onTrue = operands[1], &onFalse = operands[2];
  const TensorRef &result = results[0];
  expectFloat(op, onTrue, "on_true");
  expectFloat(op, onFalse, "on_false");
  expectFloat(op, result, "result");
  expectShape(op, onFalse, onTrue.shape, "on_false");
  expectShape(op, result, onTrue.shape, "result");
}

LossScaleConfig checkLossScaleUpdate(std::string_view op, const AttrMap &attrs,
                                     const Tensors &operands,
                                     const Tensors &results) {
  expectArity(op, operands, results, 4, 3);
  const char *operandNames[] = {"scale", "good_steps", "hysteresis_left",
                                "overflow"};
  for (int k = 0; k < 4; ++k)
    expectScalar(op, operands[k], operandNames[k]);
  for (const TensorRef &result : results)
    expectScalar(op, result, "result");
  LossScaleConfig config{attrs.getInt("window"), attrs.getInt("hysteresis"),
                         attrs.getFloat("min_scale")};
  if (config.window < 1 || config.hysteresis < 1)
    fail(op, "window and hysteresis must be positive");
  return config;
}

} // namespace zerosbp::runtime::checks
