//===- Quantize.cpp - block quantization on the CPU -----------------------===//
//
// nn.quantize and nn.dequantize (runtime/kernels/BlockQuantize.h): blocks
// run in parallel over the host threads; each is widened to f32, its
// largest magnitude found, and its codes written. A block's codes fill
// whole bytes (4-bit blocks are even), so no two blocks share a byte.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/BlockQuantize.h"
#include "runtime/kernels/QuantizeChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/HostThreads.h"
#include "runtime/kernels/cpu/Support.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace zerosbp::runtime::cpu {

namespace {
/// Blocks of `blockSize` per task, so that a task has work enough.
int64_t grainOf(int64_t blockSize) {
  constexpr int64_t kElementsPerTask = 1 << 16;
  return std::max<int64_t>(1, kElementsPerTask / blockSize);
}

/// The largest magnitude of `values`; NaN if one is NaN.
float largestMagnitude(const float *values, int64_t count) {
  float amax = 0;
  for (int64_t i = 0; i < count; ++i) {
    float magnitude = std::fabs(values[i]);
    if (magnitude != magnitude)
      return magnitude;
    amax = std::max(amax, magnitude);
  }
  return amax;
}

/// Quantizes block `b` of `layout` from its widened `values`.
void quantizeBlock(const checks::QuantizeLayout &layout, int64_t b,
                   const std::vector<float> &values, int8_t *codes,
                   float *scales) {
  int bits = layout.bits;
  auto count = static_cast<int64_t>(values.size());
  float amax = largestMagnitude(values.data(), count);
  scales[b] = quant::blockScale(amax, bits);
  float factor = quant::blockFactor(amax, bits);
  int64_t begin = b * layout.blockSize;
  if (bits == 8) {
    for (int64_t i = 0; i < count; ++i)
      codes[begin + i] =
          static_cast<int8_t>(quant::quantizeValue(values[i], factor, 8));
    return;
  }
  for (int64_t i = 0; i < count; i += 2) {
    int low = quant::quantizeValue(values[i], factor, 4);
    int high =
        i + 1 < count ? quant::quantizeValue(values[i + 1], factor, 4) : 0;
    codes[(begin + i) / 2] = quant::packNibbles(low, high);
  }
}
} // namespace

void quantizeKernel(const AttrMap &attrs, const Tensors &operands,
                    const Tensors &results) {
  checks::QuantizeLayout layout =
      checks::checkQuantize("nn.quantize", attrs, operands, results);
  const TensorRef &input = operands[0];
  auto *codes = results[0].as<int8_t>();
  auto *scales = results[1].as<float>();
  parallelRanges(layout.blocks, grainOf(layout.blockSize),
                 [&](int64_t first, int64_t last) {
                   std::vector<float> values;
                   for (int64_t b = first; b < last; ++b) {
                     int64_t begin = b * layout.blockSize;
                     values.resize(static_cast<size_t>(
                         std::min(layout.blockSize, layout.count - begin)));
                     widen(input, begin, static_cast<int64_t>(values.size()),
                           values.data());
                     quantizeBlock(layout, b, values, codes, scales);
                   }
                 });
}

void dequantizeKernel(const AttrMap &attrs, const Tensors &operands,
                      const Tensors &results) {
  checks::QuantizeLayout layout =
      checks::checkDequantize("nn.dequantize", attrs, operands, results);
  const auto *codes = operands[0].as<const int8_t>();
  const auto *scales = operands[1].as<const float>();
  const TensorRef &result = results[0];
  int bits = layout.bits;
  parallelRanges(
      layout.blocks, grainOf(layout.blockSize),
      [&](int64_t first, int64_t last) {
        std::vector<float> values;
        for (int64_t b = first; b < last; ++b) {
          int64_t begin = b * layout.blockSize;
          int64_t count = std::min(layout.blockSize, layout.count - begin);
          values.resize(static_cast<size_t>(count));
          for (int64_t i = 0; i < count; ++i)
            values[i] = quant::dequantizeValue(
                quant::unpackCode(codes, begin + i, bits), scales[b]);
          narrow(values.data(), count, result, begin);
        }
      });
}

} // namespace zerosbp::runtime::cpu
