//===- Normalization.cu - layer_norm and its gradient ---------------------===//
//
// Over the last axis, biased variance, row statistics summed in double, as
// on the CPU (Normalization.cpp, with the same checks,
// runtime/kernels/NormalizationChecks.h): one block per row. The gradient's
// gamma and beta sums run down the columns in chunks of rows whose partial sums
// (double) a last kernel adds in order.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/NormalizationChecks.h"

#include <algorithm>

namespace zerosbp::runtime::gpu {

namespace {
struct RowStats {
  float mean;
  float rstd; // 1 / sqrt(var + epsilon)
};

/// The statistics of row `x[base, base + n)`, in every thread of the block.
__device__ RowStats rowStats(FloatRef x, int64_t base, int64_t n,
                             double epsilon, double *shared) {
  double sum = 0.0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    sum += load(x, base + j);
  double mean = blockSum(sum, shared) / static_cast<double>(n);
  double squares = 0.0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    double d = static_cast<double>(load(x, base + j)) - mean;
    squares += d * d;
  }
  double variance = blockSum(squares, shared) / static_cast<double>(n);
  return {static_cast<float>(mean),
          static_cast<float>(1.0 / sqrt(variance + epsilon))};
}

__global__ void layerNormRows(FloatRef x, FloatRef gamma, FloatRef beta,
                              FloatRef y, int64_t rows, int64_t n,
                              double epsilon) {
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * n;
    RowStats stats = rowStats(x, base, n, epsilon, shared);
    // Each thread reads element j before writing it: y may replace x.
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      storeFloat(y.data, y.type, base + j,
                 (load(x, base + j) - stats.mean) * stats.rstd *
                         load(gamma, j) +
                     load(beta, j));
  }
}

/// Per row of the gradient: the statistics, and the means of g dy and of
/// g dy xhat that dx needs.
struct GradRow {
  float mean;
  float rstd;
  float meanScaled;
  float meanProjection;
};

__global__ void layerNormGradRows(FloatRef dy, FloatRef x, FloatRef gamma,
                                  int64_t rows, int64_t n, double epsilon,
                                  GradRow *out) {
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * n;
    RowStats stats = rowStats(x, base, n, epsilon, shared);
    double sumScaled = 0.0, sumProjection = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      float xhat = (load(x, base + j) - stats.mean) * stats.rstd;
      float scaled = load(dy, base + j) * load(gamma, j);
      sumScaled += static_cast<double>(scaled);
      sumProjection += static_cast<double>(scaled) * static_cast<double>(xhat);
    }
    sumScaled = blockSum(sumScaled, shared);
    sumProjection = blockSum(sumProjection, shared);
    if (threadIdx.x == 0)
      out[row] = {stats.mean, stats.rstd,
                  static_cast<float>(sumScaled / static_cast<double>(n)),
                  static_cast<float>(sumProjection / static_cast<double>(n))};
  }
}

/// dx = rstd (g dy - mean(g dy) - xhat mean(g dy xhat)), element by element.
__global__ void layerNormGradInput(FloatRef dy, FloatRef x, FloatRef gamma,
                                   const GradRow *stats, FloatRef dx, int64_t n,
                                   int64_t numel) {
  ZEROSBP_GRID_LOOP(i, numel) {
    int64_t row = i / n, j = i - row * n;
    GradRow s = stats[row];
    float xhat = (load(x, i) - s.mean) * s.rstd;
    float scaled = load(dy, i) * load(gamma, j);
    storeFloat(dx.data, dx.type, i,
               s.rstd * (scaled - s.meanScaled - xhat * s.meanProjection));
  }
}

/// Rows [blockIdx.y * chunkRows, ...) of the gamma and beta sums, per column.
__global__ void layerNormGradColumns(FloatRef dy, FloatRef x,
                                     const GradRow *stats, int64_t rows,
                                     int64_t n, int64_t chunkRows,
                                     double *partialGamma,
                                     double *partialBeta) {
  int64_t begin = blockIdx.y * chunkRows;
  int64_t end = min(rows, begin + chunkRows);
  ZEROSBP_GRID_LOOP(j, n) {
    double dgamma = 0.0, dbeta = 0.0;
    for (int64_t row = begin; row < end; ++row) {
      float xhat = (load(x, row * n + j) - stats[row].mean) * stats[row].rstd;
      float d = load(dy, row * n + j);
      dgamma += static_cast<double>(d) * static_cast<double>(xhat);
      dbeta += static_cast<double>(d);
    }
    partialGamma[blockIdx.y * n + j] = dgamma;
    partialBeta[blockIdx.y * n + j] = dbeta;
  }
}

__global__ void layerNormGradParams(const double *partialGamma,
                                    const double *partialBeta, int64_t chunks,
                                    int64_t n, FloatRef dgamma,
                                    FloatRef dbeta) {
  ZEROSBP_GRID_LOOP(j, n) {
    double gammaSum = 0.0, betaSum = 0.0;
    for (int64_t c = 0; c < chunks; ++c) {
      gammaSum += partialGamma[c * n + j];
      betaSum += partialBeta[c * n + j];
    }
    storeFloat(dgamma.data, dgamma.type, j, static_cast<float>(gammaSum));
    storeFloat(dbeta.data, dbeta.type, j, static_cast<float>(betaSum));
  }
}

} // namespace

void layerNormKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.layer_norm";
  checks::LayerNormShape shape =
      checks::checkLayerNorm(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (input.numel() == 0)
    return;

  ResultTarget out(op, ctx, result,
                   overlapsOtherThanReplaced(result, operands));
  int64_t rows = shape.rows, n = shape.size;
  layerNormRows<<<rowBlocks(rows), rowThreads(n), 0, ctx.stream()>>>(
      ref(input), ref(operands[1]), ref(operands[2]), ref(out.tensor()), rows,
      n, shape.epsilon);
  checkLaunch(op);
  out.finish();
}

void layerNormGradKernel(const AttrMap &attrs, const Tensors &operands,
                         const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.layer_norm_grad";
  checks::LayerNormShape shape =
      checks::checkLayerNormGrad(op, attrs, operands, results);
  const TensorRef &gradOutput = operands[0], &input = operands[1];
  const TensorRef &gamma = operands[2];
  int64_t rows = shape.rows, n = shape.size;
  if (n == 0)
    return;

  DeviceScratch stats(op, ctx, rows * sizeof(GradRow));
  if (rows > 0) {
    layerNormGradRows<<<rowBlocks(rows), rowThreads(n), 0, ctx.stream()>>>(
        ref(gradOutput), ref(input), ref(gamma), rows, n, shape.epsilon,
        stats.as<GradRow>());
    checkLaunch(op);
  }

  // The column sums read dy and x before dx, which may replace either, is
  // written. About 64K threads: on an H200, 256K made this op slower (5.0
  // to 5.4 ms a bf16 GPT-2 small step), unlike reduce_sum's columns.
  constexpr int64_t kTargetThreads = 1 << 16;
  constexpr int64_t kMinChunk = 32, kMaxChunks = 65535;
  int64_t chunks = std::clamp<int64_t>(
      std::min(kTargetThreads / n, (rows + kMinChunk - 1) / kMinChunk), 1,
      kMaxChunks);
  int64_t chunkRows = std::max<int64_t>((rows + chunks - 1) / chunks, 1);
  chunks = std::max<int64_t>((rows + chunkRows - 1) / chunkRows, 1);
  DeviceScratch partial(op, ctx, 2 * chunks * n * sizeof(double));
  double *partialGamma = partial.as<double>();
  double *partialBeta = partialGamma + chunks * n;
  constexpr int kThreads = 256;
  dim3 grid(gridFor(n, kThreads), static_cast<unsigned>(chunks));
  layerNormGradColumns<<<grid, kThreads, 0, ctx.stream()>>>(
      ref(gradOutput), ref(input), stats.as<GradRow>(), rows, n, chunkRows,
      partialGamma, partialBeta);
  checkLaunch(op);

  int64_t numel = input.numel();
  if (numel > 0) {
    ResultTarget dx(op, ctx, results[0],
                    overlapsOtherThanReplaced(results[0], operands));
    layerNormGradInput<<<gridFor(numel, kThreads), kThreads, 0, ctx.stream()>>>(
        ref(gradOutput), ref(input), ref(gamma), stats.as<GradRow>(),
        ref(dx.tensor()), n, numel);
    checkLaunch(op);
    dx.finish();
  }
  layerNormGradParams<<<gridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      partialGamma, partialBeta, chunks, n, ref(results[1]), ref(results[2]));
  checkLaunch(op);
}

} // namespace zerosbp::runtime::gpu
