//===- Normalization.cpp - layer_norm and its gradient --------------------===//
//
// Over the last axis, biased variance. Row statistics are summed in double;
// the forward and the gradient compute them identically.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/NormalizationChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

#include <cmath>

namespace zerosbp::runtime::cpu {

namespace {
struct RowStats {
  float mean;
  float rstd; // 1 / sqrt(var + epsilon)
};

ZEROSBP_INLINE RowStats rowStats(const float *x, int64_t n, double epsilon) {
  double mean = sumOf(x, n) / static_cast<double>(n);
  double variance = squaredDeviationOf(x, n, mean) / static_cast<double>(n);
  return {static_cast<float>(mean),
          static_cast<float>(1.0 / std::sqrt(variance + epsilon))};
}

ZEROSBP_CPU_CLONES
void layerNormRow(const float *__restrict x, const float *__restrict gamma,
                  const float *__restrict beta, float *__restrict y, int64_t n,
                  double epsilon) {
  RowStats stats = rowStats(x, n, epsilon);
  float mean = stats.mean, rstd = stats.rstd;
  for (int64_t j = 0; j < n; ++j)
    y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
}

/// One row of the gradient: writes dx and adds to the gamma and beta sums.
/// `xhat` and `scaled` are scratch rows.
ZEROSBP_CPU_CLONES
void layerNormGradRow(const float *__restrict dy, const float *__restrict x,
                      const float *__restrict gamma, float *__restrict dx,
                      float *__restrict xhat, float *__restrict scaled,
                      double *__restrict dgamma, double *__restrict dbeta,
                      int64_t n, double epsilon) {
  RowStats stats = rowStats(x, n, epsilon);
  float mean = stats.mean, rstd = stats.rstd;
  for (int64_t j = 0; j < n; ++j) {
    xhat[j] = (x[j] - mean) * rstd;
    scaled[j] = dy[j] * gamma[j];
  }
  // dx = rstd (g dy - mean(g dy) - xhat mean(g dy xhat))
  double sumScaled, sumProjection;
  sumAndDotOf(scaled, xhat, n, sumScaled, sumProjection);
  auto meanScaled = static_cast<float>(sumScaled / static_cast<double>(n));
  auto meanProjection =
      static_cast<float>(sumProjection / static_cast<double>(n));
  for (int64_t j = 0; j < n; ++j) {
    dx[j] = rstd * (scaled[j] - meanScaled - xhat[j] * meanProjection);
    dgamma[j] += static_cast<double>(dy[j]) * static_cast<double>(xhat[j]);
    dbeta[j] += static_cast<double>(dy[j]);
  }
}

} // namespace

void layerNormKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
  constexpr std::string_view op = "nn.layer_norm";
  checks::LayerNormShape shape =
      checks::checkLayerNorm(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (input.numel() == 0)
    return;

  FloatInput x(input), gamma(operands[1]), beta(operands[2]);
  FloatOutput out(result, overlapsAny(result, operands));
  const float *g = gamma.data(), *b = beta.data();
  int64_t n = shape.size;
  for (int64_t row = 0; row < shape.rows; ++row)
    layerNormRow(x.data() + row * n, g, b, out.data() + row * n, n,
                 shape.epsilon);
  out.finish();
}

void layerNormGradKernel(const AttrMap &attrs, const Tensors &operands,
                         const Tensors &results) {
  constexpr std::string_view op = "nn.layer_norm_grad";
  checks::LayerNormShape shape =
      checks::checkLayerNormGrad(op, attrs, operands, results);
  const TensorRef &gradOutput = operands[0], &input = operands[1];
  const TensorRef &gamma = operands[2];
  int64_t n = shape.size;

  FloatInput dy(gradOutput), x(input), g(gamma);
  FloatOutput dx(results[0], overlapsAny(results[0], operands));
  std::vector<double> dgamma(static_cast<size_t>(n), 0.0);
  std::vector<double> dbeta(static_cast<size_t>(n), 0.0);
  std::vector<float> xhat(static_cast<size_t>(n)),
      scaled(static_cast<size_t>(n));
  for (int64_t row = 0; row < shape.rows; ++row)
    layerNormGradRow(dy.data() + row * n, x.data() + row * n, g.data(),
                     dx.data() + row * n, xhat.data(), scaled.data(),
                     dgamma.data(), dbeta.data(), n, shape.epsilon);
  dx.finish();
  std::vector<float> sums(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    sums[j] = static_cast<float>(dgamma[j]);
  narrow(sums.data(), n, results[1], 0);
  for (int64_t j = 0; j < n; ++j)
    sums[j] = static_cast<float>(dbeta[j]);
  narrow(sums.data(), n, results[2], 0);
}

} // namespace zerosbp::runtime::cpu
