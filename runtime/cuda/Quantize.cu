//===- Quantize.cu - block quantization on the GPU ------------------------===//
//
// nn.quantize and nn.dequantize with the CPU kernels' arithmetic
// (runtime/kernels/BlockQuantize.h), bit for bit: one thread block per
// quantization block finds its largest magnitude (a max, which no order
// changes) and writes its scale and codes, a 4-bit block's a byte (two
// codes) per thread step; dequantization is one thread per element.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/BlockQuantize.h"
#include "runtime/kernels/QuantizeChecks.h"

#include <algorithm>

namespace zerosbp::runtime::gpu {

namespace {
constexpr int kThreads = 256;

/// The larger magnitude; NaN if either is.
__device__ __forceinline__ float maxMagnitude(float a, float b) {
  if (a != a || b != b)
    return quant::quietNaN();
  return a > b ? a : b;
}

/// Quantization block `b`, by the whole thread block.
__device__ void quantizeBlock(const void *in, DType inType, int64_t count,
                              int64_t blockSize, int bits, int8_t *codes,
                              float *scales, int64_t b) {
  __shared__ float partial[kThreads];
  int64_t begin = b * blockSize;
  int64_t size = min(blockSize, count - begin);
  float amax = 0;
  for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
    amax = maxMagnitude(amax, fabsf(loadFloat(in, inType, begin + i)));
  partial[threadIdx.x] = amax;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      partial[threadIdx.x] =
          maxMagnitude(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  amax = partial[0];
  if (threadIdx.x == 0)
    scales[b] = quant::blockScale(amax, bits);
  float factor = quant::blockFactor(amax, bits);
  if (bits == 8) {
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
      codes[begin + i] = static_cast<int8_t>(
          quant::quantizeValue(loadFloat(in, inType, begin + i), factor, 8));
    __syncthreads();
    return;
  }
  for (int64_t i = 2 * threadIdx.x; i < size; i += 2 * blockDim.x) {
    int low = quant::quantizeValue(loadFloat(in, inType, begin + i), factor, 4);
    int high = i + 1 < size
                   ? quant::quantizeValue(loadFloat(in, inType, begin + i + 1),
                                          factor, 4)
                   : 0;
    codes[(begin + i) / 2] = quant::packNibbles(low, high);
  }
  // The next block's amax reuses `partial`.
  __syncthreads();
}

__global__ void quantizeBlocks(const void *in, DType inType, int64_t count,
                               int64_t blockSize, int64_t blocks, int bits,
                               int8_t *codes, float *scales) {
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x)
    quantizeBlock(in, inType, count, blockSize, bits, codes, scales, b);
}

__global__ void dequantizeElements(const int8_t *codes, const float *scales,
                                   int64_t count, int64_t blockSize, int bits,
                                   void *out, DType outType) {
  ZEROSBP_GRID_LOOP(i, count) {
    storeFloat(out, outType, i,
               quant::dequantizeValue(quant::unpackCode(codes, i, bits),
                                      scales[i / blockSize]));
  }
}
} // namespace

void quantizeKernel(const AttrMap &attrs, const Tensors &operands,
                    const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.quantize";
  checks::QuantizeLayout layout =
      checks::checkQuantize(op, attrs, operands, results);
  if (layout.count == 0)
    return;
  const TensorRef &input = operands[0];
  // A thread block per quantization block, up to as many as fill the GPU
  // many times over; each then takes every gridDim-th block.
  constexpr int64_t kMaxBlocks = 1 << 18;
  auto grid = static_cast<unsigned>(std::min(layout.blocks, kMaxBlocks));
  quantizeBlocks<<<grid, kThreads, 0, ctx.stream()>>>(
      input.data, input.dtype, layout.count, layout.blockSize, layout.blocks,
      layout.bits, results[0].as<int8_t>(), results[1].as<float>());
  checkLaunch(op);
}

void dequantizeKernel(const AttrMap &attrs, const Tensors &operands,
                      const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.dequantize";
  checks::QuantizeLayout layout =
      checks::checkDequantize(op, attrs, operands, results);
  if (layout.count == 0)
    return;
  const TensorRef &result = results[0];
  dequantizeElements<<<gridFor(layout.count, kThreads), kThreads, 0,
                       ctx.stream()>>>(
      operands[0].as<const int8_t>(), operands[1].as<const float>(),
      layout.count, layout.blockSize, layout.bits, result.data, result.dtype);
  checkLaunch(op);
}

} // namespace zerosbp::runtime::gpu
