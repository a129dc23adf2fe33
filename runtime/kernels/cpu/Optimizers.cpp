//===- Optimizers.cpp - sgd, adam, adamw and the clipping factor ----------===//
//
// torch.optim's definitions, element by element in f32 with PyTorch's order
// of operations; Adam's bias corrections in double. The gradient is first
// divided by `grad_scale` (a loss scale). Results may lie in the bytes of the
// parameter and states they replace: forEachChunkInParallel reads a chunk
// before it writes it. Large updates run on the host threads (HostThreads.h),
// as offloaded updates do.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/OptimizerChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

#include <cmath>
#include <limits>

namespace zerosbp::runtime::cpu {

namespace {
/// One chunk of the update; `stepSize` is lr / (1 - beta1^t) and
/// `biasCorrection2Sqrt` sqrt(1 - beta2^t), both of this step.
ZEROSBP_CPU_CLONES
void adamChunk(const checks::AdamConstants &c, float stepSize,
               float biasCorrection2Sqrt, const float *__restrict param,
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
    float denom = std::sqrt(v) / biasCorrection2Sqrt + c.epsilon;
    newParam[i] = p - stepSize * m / denom;
    newExpAvg[i] = m;
    newExpAvgSq[i] = v;
  }
}

void runAdam(std::string_view op, const AttrMap &attrs, const Tensors &operands,
             const Tensors &results, bool decoupled) {
  checks::checkAdam(op, operands, results);
  int64_t step = readInteger(operands[4]);
  if (step < 1)
    fail(op, checks::adamStepMessage().about(step));

  checks::AdamConstants c = checks::adamConstants(attrs, decoupled);
  // The bias corrections in double, as torch.optim computes them.
  double biasCorrection1 =
      1.0 - std::pow(c.beta1Double, static_cast<double>(step));
  double biasCorrection2 =
      1.0 - std::pow(c.beta2Double, static_cast<double>(step));
  auto stepSize = static_cast<float>(c.lr / biasCorrection1);
  auto biasCorrection2Sqrt = static_cast<float>(std::sqrt(biasCorrection2));

  forEachChunkInParallel<4, 3>(
      operands[0].numel(),
      {&operands[0], &operands[1], &operands[2], &operands[3]},
      {&results[0], &results[1], &results[2]},
      [&](const float *const *in, float *const *out, int64_t count) {
        adamChunk(c, stepSize, biasCorrection2Sqrt, in[0], in[1], in[2], in[3],
                  out[0], out[1], out[2], count);
      });
}
} // namespace

void sgdKernel(const AttrMap &attrs, const Tensors &operands,
               const Tensors &results) {
  constexpr std::string_view op = "nn.sgd";
  checks::checkSgd(op, operands, results);
  auto lr = static_cast<float>(attrs.getFloat("lr"));
  auto scale = static_cast<float>(attrs.getFloat("grad_scale", 1.0));
  forEachChunkInParallel<2, 1>(
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
  checks::checkClipCoefficient(op, operands, results);
  auto maxNorm = static_cast<float>(attrs.getFloat("max_norm"));
  auto gradScale = static_cast<float>(attrs.getFloat("grad_scale", 1.0));
  // torch.nn.utils.clip_grad_norm_: min(1, max_norm / (norm + 1e-6)); NaN
  // stays NaN, written as the IEEE quiet NaN whatever the operand's payload,
  // as the CUDA kernel writes it.
  float norm = std::sqrt(readScalar(operands[0])) / gradScale;
  float coefficient = maxNorm / (norm + 1e-6f);
  float clipped = coefficient > 1.0f ? 1.0f : coefficient;
  writeScalar(results[0], std::isnan(clipped)
                              ? std::numeric_limits<float>::quiet_NaN()
                              : clipped);
}

} // namespace zerosbp::runtime::cpu
