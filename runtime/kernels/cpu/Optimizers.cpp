//===- Optimizers.cpp - sgd, adam, adamw and the clipping factor ----------===//
//
// torch.optim's definitions, element by element in f32 with PyTorch's order
// of operations; Adam's bias corrections in double. The gradient is first
// divided by `grad_scale` (a loss scale). Results may lie in the bytes of the
// parameter and states they replace: forEachChunk reads a chunk before it
// writes it.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

#include <cmath>

namespace zerosbp::runtime::cpu {

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

/// Adam's per-element constants, in f32 as PyTorch applies them.
struct AdamConstants {
  float stepSize;            // lr / (1 - beta1^t)
  float biasCorrection2Sqrt; // sqrt(1 - beta2^t)
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2;
  float epsilon;
  float gradScale;
  bool hasCoupledDecay; // Adam: g += wd p
  float coupledDecay;
  bool hasDecay; // AdamW: p *= 1 - lr wd
  float decay;
};

ZEROSBP_CPU_CLONES
void adamChunk(const AdamConstants &c, const float *__restrict param,
               const float *__restrict grad, const float *__restrict expAvg,
               const float *__restrict expAvgSq, float *__restrict newParam,
               float *__restrict newExpAvg, float *__restrict newExpAvgSq,
               int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    float p = param[i];
    if (c.hasDecay)
      p = p * c.decay;
    float g = grad[i] / c.gradScale;
    if (c.hasCoupledDecay)
      g = g + c.coupledDecay * p;
    float m = c.beta1 * expAvg[i] + c.oneMinusBeta1 * g;
    float v = c.beta2 * expAvgSq[i] + c.oneMinusBeta2 * g * g;
    float denom = std::sqrt(v) / c.biasCorrection2Sqrt + c.epsilon;
    newParam[i] = p - c.stepSize * m / denom;
    newExpAvg[i] = m;
    newExpAvgSq[i] = v;
  }
}

void runAdam(std::string_view op, const AttrMap &attrs, const Tensors &operands,
             const Tensors &results, bool decoupled) {
  expectArity(op, operands, results, 5, 3);
  expectParamShapes(op, operands, 4, results);
  const TensorRef &stepTensor = operands[4];
  if (stepTensor.numel() != 1 ||
      (stepTensor.dtype != DType::I64 && stepTensor.dtype != DType::I32))
    fail(op, "step must be a 0-D i64");
  int64_t step = readInteger(stepTensor);
  if (step < 1)
    fail(op, "step " + std::to_string(step) + " is not positive");

  double lr = attrs.getFloat("lr");
  double beta1 = attrs.getFloat("beta1", 0.9);
  double beta2 = attrs.getFloat("beta2", 0.999);
  double weightDecay = attrs.getFloat("weight_decay", 0.0);
  // The bias corrections in double, as torch.optim computes them.
  double biasCorrection1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  double biasCorrection2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  AdamConstants c;
  c.stepSize = static_cast<float>(lr / biasCorrection1);
  c.biasCorrection2Sqrt = static_cast<float>(std::sqrt(biasCorrection2));
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

  forEachChunk<4, 3>(
      operands[0].numel(),
      {&operands[0], &operands[1], &operands[2], &operands[3]},
      {&results[0], &results[1], &results[2]},
      [&c](const float *const *in, float *const *out, int64_t count) {
        adamChunk(c, in[0], in[1], in[2], in[3], out[0], out[1], out[2], count);
      });
}
} // namespace

void sgdKernel(const AttrMap &attrs, const Tensors &operands,
               const Tensors &results) {
  constexpr std::string_view op = "nn.sgd";
  expectArity(op, operands, results, 2, 1);
  expectParamShapes(op, operands, 2, results);
  auto lr = static_cast<float>(attrs.getFloat("lr"));
  auto scale = static_cast<float>(attrs.getFloat("grad_scale", 1.0));
  forEachChunk<2, 1>(
      operands[0].numel(), {&operands[0], &operands[1]}, {&results[0]},
      [lr, scale](const float *const *in, float *const *out, int64_t count) {
        const float *param = in[0], *grad = in[1];
        float *newParam = out[0];
        for (int64_t i = 0; i < count; ++i)
          newParam[i] = param[i] - lr * (grad[i] / scale);
      });
}

void adamKernel(const AttrMap &attrs, const Tensors &operands,
                const Tensors &results) {
  runAdam("nn.adam", attrs, operands, results, /*decoupled=*/false);
}

void adamwKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results) {
  runAdam("nn.adamw", attrs, operands, results, /*decoupled=*/true);
}

void clipCoefficientKernel(const AttrMap &attrs, const Tensors &operands,
                           const Tensors &results) {
  constexpr std::string_view op = "nn.clip_coefficient";
  expectArity(op, operands, results, 1, 1);
  expectFloat(op, operands[0], "sum_squares");
  expectNumel(op, operands[0], 1, "sum_squares");
  expectFloat(op, results[0], "result");
  expectNumel(op, results[0], 1, "result");
  auto maxNorm = static_cast<float>(attrs.getFloat("max_norm"));
  auto gradScale = static_cast<float>(attrs.getFloat("grad_scale", 1.0));
  // torch.nn.utils.clip_grad_norm_: min(1, max_norm / (norm + 1e-6)); NaN
  // stays NaN.
  float norm = std::sqrt(readScalar(operands[0])) / gradScale;
  float coefficient = maxNorm / (norm + 1e-6f);
  writeScalar(results[0], coefficient > 1.0f ? 1.0f : coefficient);
}

} // namespace zerosbp::runtime::cpu
