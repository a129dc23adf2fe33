//===- NormalizationChecks.cpp - the checks of layer_norm -----------------===//

#include "runtime/kernels/NormalizationChecks.h"

namespace zerosbp::runtime::checks {

namespace {
constexpr double kDefaultEpsilon = 1e-5;

/// The size of the normalized (last) axis; checks that the 1-D `param` has
/// it.
int64_t normalizedSize(std::string_view op, const TensorRef &input,
                       const TensorRef &param, const char *what) {
  if (input.rank() < 1)
    fail(op, "input must have at least one dim");
  int64_t n = input.shape.back();
  expectFloat(op, param, what);
  expectShape(op, param, {n}, what);
  return n;
}

LayerNormShape layerNormShape(const AttrMap &attrs, const TensorRef &input,
                              int64_t n) {
  return {n ? input.numel() / n : 0, n,
          attrs.getFloat("epsilon", kDefaultEpsilon)};
}
} // namespace

LayerNormShape checkLayerNorm(std::string_view op, const AttrMap &attrs,
                              const Tensors &operands, const Tensors &results) {
  expectArity(op, operands, results, 3, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectFloat(op, input, "input");
  int64_t n = normalizedSize(op, input, operands[1], "gamma");
  normalizedSize(op, input, operands[2], "beta");
  expectFloat(op, result, "result");
  expectShape(op, result, input.shape, "result");
  return layerNormShape(attrs, input, n);
}

LayerNormShape checkLayerNormGrad(std::string_view op, const AttrMap &attrs,
                                  const Tensors &operands,
                                  const Tensors &results) {
  expectArity(op, operands, results, 3, 3);
  const TensorRef &gradOutput = operands[0], &input = operands[1];
  const TensorRef &gamma = operands[2];
  expectFloat(op, gradOutput, "grad_output");
  expectFloat(op, input, "input");
  expectShape(op, gradOutput, input.shape, "grad_output");
  int64_t n = normalizedSize(op, input, gamma, "gamma");
  const char *names[] = {"grad_input", "grad_gamma", "grad_beta"};
  for (int k = 0; k < 3; ++k) {
    expectFloat(op, results[k], names[k]);
    expectShape(op, results[k], k == 0 ? input.shape : gamma.shape, names[k]);
  }
  return layerNormShape(attrs, input, n);
}

} // namespace zerosbp::runtime::checks
