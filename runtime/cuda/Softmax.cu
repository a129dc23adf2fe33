//===- Softmax.cu - softmax, its gradient and softmax cross-entropy -------===//
//
// One block per softmax row, as on the CPU (Softmax.cpp, Loss.cpp, with the
// same checks, runtime/kernels/SoftmaxChecks.h): the max in f32,
// exp(x - max) by the CPU's fastExp, its sum in double. A row is read in
// full before any of it is written, and each thread writes only the
// elements it reads, so a result may replace its input. With `causal` row i
// (the second-to-last index) sees keys j <= i and the masked entries are 0.
// The loss is the sum of the per-sample losses over `count` (default: the
// local sample count); per-sample losses go through a buffer and are added
// in order, so the loss never depends on timing.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/SoftmaxChecks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace zerosbp::runtime::gpu {

namespace {
using checks::SoftmaxLayout;

/// Where row `row` starts and how many of its entries are unmasked.
struct RowPlace {
  int64_t base;
  int64_t stride;
  int64_t valid;
};

__device__ __forceinline__ RowPlace rowPlace(const SoftmaxLayout &layout,
                                             int64_t row) {
  int64_t o = row / layout.inner, i = row - o * layout.inner;
  return {o * layout.size * layout.inner + i, layout.inner,
          layout.causal ? o % layout.size + 1 : layout.size};
}

/// max(x) over the row's first `valid` entries, and sum(exp(x - max)) in
/// double, in every thread.
__device__ void shiftedExpSum(FloatRef x, const RowPlace &place, float &max,
                              double &sum, float *sharedMax,
                              double *sharedSum) {
  float localMax = -INFINITY;
  for (int64_t j = threadIdx.x; j < place.valid; j += blockDim.x) {
    float v = load(x, place.base + j * place.stride);
    localMax = v > localMax ? v : localMax;
  }
  max = blockMax(localMax, sharedMax);
  double localSum = 0.0;
  for (int64_t j = threadIdx.x; j < place.valid; j += blockDim.x)
    localSum += fastExp(load(x, place.base + j * place.stride) - max);
  sum = blockSum(localSum, sharedSum);
}

__global__ void softmaxRows(FloatRef x, FloatRef y, SoftmaxLayout layout,
                            int64_t rows) {
  __shared__ float sharedMax[32];
  __shared__ double sharedSum[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    RowPlace place = rowPlace(layout, row);
    float max;
    double sum;
    shiftedExpSum(x, place, max, sum, sharedMax, sharedSum);
    auto inverse = static_cast<float>(1.0 / sum);
    for (int64_t j = threadIdx.x; j < layout.size; j += blockDim.x) {
      int64_t at = place.base + j * place.stride;
      float value =
          j < place.valid ? fastExp(load(x, at) - max) * inverse : 0.0f;
      storeFloat(y.data, y.type, at, value);
    }
  }
}

__global__ void softmaxGradRows(FloatRef dy, FloatRef y, FloatRef dx,
                                SoftmaxLayout layout, int64_t rows) {
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    RowPlace place = rowPlace(layout, row);
    double localDot = 0.0;
    for (int64_t j = threadIdx.x; j < place.valid; j += blockDim.x) {
      int64_t at = place.base + j * place.stride;
      localDot +=
          static_cast<double>(load(dy, at)) * static_cast<double>(load(y, at));
    }
    auto dot = static_cast<float>(blockSum(localDot, shared));
    for (int64_t j = threadIdx.x; j < layout.size; j += blockDim.x) {
      int64_t at = place.base + j * place.stride;
      float value = j < place.valid ? load(y, at) * (load(dy, at) - dot) : 0.0f;
      storeFloat(dx.data, dx.type, at, value);
    }
  }
}

/// Chunks of kVector elements a lane holds on the warp-per-row path: rows of
/// up to 32 * kRowChunks * kVector = 1024 elements.
constexpr int kRowChunks = 4;
constexpr int64_t kWarpRowMax = 32 * kRowChunks * kVector;

/// The first element of chunk `chunk` of a row that lane `lane` holds:
/// consecutive lanes take consecutive 16-byte words.
__device__ __forceinline__ int64_t chunkStart(int chunk, int lane) {
  return (chunk * 32 + lane) * static_cast<int64_t>(kVector);
}

/// softmaxRows for contiguous rows of at most kWarpRowMax elements (the
/// attention scores): one warp per row, held in registers between the
/// passes and moved in 16-byte loads and stores. The same arithmetic per
/// element; the sum is in double, so its order only matters past f32.
__global__ void softmaxWarpRows(FloatRef x, FloatRef y, SoftmaxLayout layout,
                                int64_t rows) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t row = warp; row < rows; row += warps) {
    RowPlace place = rowPlace(layout, row); // Stride 1: inner == 1.
    int64_t base = place.base, valid = place.valid;
    float values[kRowChunks][kVector];
    float localMax = -INFINITY;
#pragma unroll
    for (int c = 0; c < kRowChunks; ++c) {
      int64_t j = chunkStart(c, lane);
      if (j >= layout.size)
        continue;
      loadVector(x.data, x.type, base + j, values[c]);
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        if (j + k < valid)
          localMax = values[c][k] > localMax ? values[c][k] : localMax;
    }
    float max = warpMax(localMax);
    double localSum = 0.0;
#pragma unroll
    for (int c = 0; c < kRowChunks; ++c) {
      int64_t j = chunkStart(c, lane);
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        if (j + k < valid) {
          values[c][k] = fastExp(values[c][k] - max);
          localSum += values[c][k];
        }
    }
    auto inverse = static_cast<float>(1.0 / warpSum(localSum));
#pragma unroll
    for (int c = 0; c < kRowChunks; ++c) {
      int64_t j = chunkStart(c, lane);
      if (j >= layout.size)
        continue;
      float out[kVector];
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        out[k] = j + k < valid ? values[c][k] * inverse : 0.0f;
      storeVector(y.data, y.type, base + j, out);
    }
  }
}

/// softmaxGradRows on the rows softmaxWarpRows takes.
__global__ void softmaxGradWarpRows(FloatRef dy, FloatRef y, FloatRef dx,
                                    SoftmaxLayout layout, int64_t rows) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t row = warp; row < rows; row += warps) {
    RowPlace place = rowPlace(layout, row); // Stride 1: inner == 1.
    int64_t base = place.base, valid = place.valid;
    float grads[kRowChunks][kVector], outputs[kRowChunks][kVector];
    double localDot = 0.0;
#pragma unroll
    for (int c = 0; c < kRowChunks; ++c) {
      int64_t j = chunkStart(c, lane);
      if (j >= layout.size)
        continue;
      loadVector(dy.data, dy.type, base + j, grads[c]);
      loadVector(y.data, y.type, base + j, outputs[c]);
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        if (j + k < valid)
          localDot += static_cast<double>(grads[c][k]) *
                      static_cast<double>(outputs[c][k]);
    }
    auto dot = static_cast<float>(warpSum(localDot));
#pragma unroll
    for (int c = 0; c < kRowChunks; ++c) {
      int64_t j = chunkStart(c, lane);
      if (j >= layout.size)
        continue;
      float out[kVector];
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        out[k] = j + k < valid ? outputs[c][k] * (grads[c][k] - dot) : 0.0f;
      storeVector(dx.data, dx.type, base + j, out);
    }
  }
}

/// Whether the warp-per-row kernels take `layout`'s rows of these tensors.
bool warpRows(const SoftmaxLayout &layout,
              std::initializer_list<TensorRef> tensors) {
  if (layout.inner != 1 || layout.size % kVector != 0 ||
      layout.size > kWarpRowMax)
    return false;
  for (const TensorRef &tensor : tensors)
    if (!vectorLoadable(tensor.data, tensor.dtype))
      return false;
  return true;
}

unsigned warpRowBlocks(int64_t rows, int threads) {
  return gridFor(rows * 32, threads);
}

/// -log softmax(x)[label] per sample, in double; 0 for a label out of range
/// (the label check reports it).
__global__ void crossEntropyRows(FloatRef logits, const void *labels,
                                 DType labelType, int64_t samples,
                                 int64_t classes, double *losses) {
  __shared__ float sharedMax[32];
  __shared__ double sharedSum[32];
  for (int64_t s = blockIdx.x; s < samples; s += gridDim.x) {
    RowPlace place{s * classes, 1, classes};
    float max;
    double sum;
    shiftedExpSum(logits, place, max, sum, sharedMax, sharedSum);
    if (threadIdx.x == 0) {
      int64_t label = loadIndex(labels, labelType, s);
      bool valid = label >= 0 && label < classes;
      losses[s] =
          valid ? log(sum) + static_cast<double>(max) -
                      static_cast<double>(load(logits, s * classes + label))
                : 0.0;
    }
  }
}

/// The losses added in a fixed order, over `count`, into the 0-D result.
__global__ void crossEntropyTotal(const double *losses, int64_t samples,
                                  double count, FloatRef result) {
  __shared__ double shared[32];
  double local = 0.0;
  for (int64_t s = threadIdx.x; s < samples; s += blockDim.x)
    local += losses[s];
  double total = blockSum(local, shared);
  if (threadIdx.x == 0)
    storeFloat(result.data, result.type, 0, static_cast<float>(total / count));
}

/// dx = dloss (softmax(x) - onehot(label)) / count.
__global__ void crossEntropyGradRows(FloatRef gradLoss, FloatRef logits,
                                     const void *labels, DType labelType,
                                     int64_t samples, int64_t classes,
                                     double count, FloatRef dx) {
  __shared__ float sharedMax[32];
  __shared__ double sharedSum[32];
  auto factor =
      static_cast<float>(static_cast<double>(load(gradLoss, 0)) / count);
  for (int64_t s = blockIdx.x; s < samples; s += gridDim.x) {
    RowPlace place{s * classes, 1, classes};
    float max;
    double sum;
    shiftedExpSum(logits, place, max, sum, sharedMax, sharedSum);
    auto inverse = static_cast<float>(1.0 / sum);
    int64_t label = loadIndex(labels, labelType, s);
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
      int64_t at = s * classes + j;
      float probability = fastExp(load(logits, at) - max) * inverse;
      float value =
          j == label ? (probability - 1.0f) * factor : probability * factor;
      storeFloat(dx.data, dx.type, at, value);
    }
  }
}

void checkLabels(std::string_view op, CudaContext &ctx, const TensorRef &labels,
                 int64_t classes) {
  checks::ValueMessage message = checks::labelMessage(classes);
  checkIndexRange(op, ctx, labels, classes,
                  std::string(op) + ": " + message.prefix, message.suffix);
}
} // namespace

void softmaxKernel(const AttrMap &attrs, const Tensors &operands,
                   const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.softmax";
  SoftmaxLayout layout = checks::checkSoftmax(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (input.numel() == 0)
    return;
  ResultTarget out(op, ctx, result,
                   overlapsOtherThanReplaced(result, operands));
  int64_t rows = layout.outer * layout.inner;
  constexpr int kThreads = 256;
  if (warpRows(layout, {input, out.tensor()}))
    softmaxWarpRows<<<warpRowBlocks(rows, kThreads), kThreads, 0,
                      ctx.stream()>>>(ref(input), ref(out.tensor()), layout,
                                      rows);
  else
    softmaxRows<<<rowBlocks(rows), rowThreads(layout.size), 0, ctx.stream()>>>(
        ref(input), ref(out.tensor()), layout, rows);
  checkLaunch(op);
  out.finish();
}

void softmaxGradKernel(const AttrMap &attrs, const Tensors &operands,
                       const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.softmax_grad";
  SoftmaxLayout layout = checks::checkSoftmaxGrad(op, attrs, operands, results);
  const TensorRef &gradOutput = operands[0], &output = operands[1];
  const TensorRef &result = results[0];
  if (output.numel() == 0)
    return;
  ResultTarget out(op, ctx, result,
                   overlapsOtherThanReplaced(result, operands));
  int64_t rows = layout.outer * layout.inner;
  constexpr int kThreads = 256;
  if (warpRows(layout, {gradOutput, output, out.tensor()}))
    softmaxGradWarpRows<<<warpRowBlocks(rows, kThreads), kThreads, 0,
                          ctx.stream()>>>(ref(gradOutput), ref(output),
                                          ref(out.tensor()), layout, rows);
  else
    softmaxGradRows<<<rowBlocks(rows), rowThreads(layout.size), 0,
                      ctx.stream()>>>(ref(gradOutput), ref(output),
                                      ref(out.tensor()), layout, rows);
  checkLaunch(op);
  out.finish();
}

void crossEntropyKernel(const AttrMap &attrs, const Tensors &operands,
                        const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.cross_entropy";
  checks::LossLayout layout =
      checks::checkCrossEntropy(op, attrs, operands, results);
  const TensorRef &logits = operands[0], &labels = operands[1];
  const TensorRef &result = results[0];
  checkLabels(op, ctx, labels, layout.classes);

  DeviceScratch losses(op, ctx, layout.samples * sizeof(double));
  if (layout.samples > 0) {
    crossEntropyRows<<<rowBlocks(layout.samples), rowThreads(layout.classes), 0,
                       ctx.stream()>>>(ref(logits), labels.data, labels.dtype,
                                       layout.samples, layout.classes,
                                       losses.as<double>());
    checkLaunch(op);
  }
  // The losses are read on the device: the result may lie in the logits.
  crossEntropyTotal<<<1, 256, 0, ctx.stream()>>>(
      losses.as<double>(), layout.samples, layout.count, ref(result));
  checkLaunch(op);
}

void crossEntropyGradKernel(const AttrMap &attrs, const Tensors &operands,
                            const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.cross_entropy_grad";
  checks::LossLayout layout =
      checks::checkCrossEntropyGrad(op, attrs, operands, results);
  const TensorRef &gradLoss = operands[0], &logits = operands[1];
  const TensorRef &labels = operands[2], &result = results[0];
  checkLabels(op, ctx, labels, layout.classes);
  if (result.numel() == 0)
    return;

  // Every block reads grad_loss, so only the logits may be replaced.
  bool separate = overlaps(result, gradLoss) || overlaps(result, labels) ||
                  (overlaps(result, logits) && !replaces(result, logits));
  ResultTarget out(op, ctx, result, separate);
  crossEntropyGradRows<<<rowBlocks(layout.samples), rowThreads(layout.classes),
                         0, ctx.stream()>>>(
      ref(gradLoss), ref(logits), labels.data, labels.dtype, layout.samples,
      layout.classes, layout.count, ref(out.tensor()));
  checkLaunch(op);
  out.finish();
}

} // namespace zerosbp::runtime::gpu
