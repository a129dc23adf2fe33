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
#include <cstring>
#include <vector>

namespace zerosbp::runtime::cpu {

namespace {
/// Blocks of `blockSize` per task, so that a task has work enough.
int64_t grainOf(int64_t blockSize) {
  constexpr int64_t kElementsPerTask = 1 << 16;
  return std::max<int64_t>(1, kElementsPerTask / blockSize);
}

/// The largest magnitude of `values`; NaN if one is NaN. A magnitude's
/// bits order as its value, and a NaN's above infinity's, so an integer
/// maximum finds it: a reduction that vectorizes, where a float one with
/// NaNs does not.
float largestMagnitude(const float *values, int64_t count) {
  int32_t most = 0;
  for (int64_t i = 0; i < count; ++i) {
    int32_t bits;
    std::memcpy(&bits, values + i, sizeof(bits));
    most = std::max(most, bits & 0x7fffffff);
  }
  float amax;
  std::memcpy(&amax, &most, sizeof(amax));
  return amax != amax ? quant::quietNaN() : amax;
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
  // Codes may alias anything (int8_t): restrict lets the loops vectorize.
  const float *__restrict in = values.data();
  int8_t *__restrict out = codes + b * layout.blockSize * bits / 8;
  if (bits == 8) {
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<int8_t>(quant::quantizeValue(in[i], factor, 8));
    return;
  }
  int64_t pairs = count / 2;
  for (int64_t k = 0; k < pairs; ++k)
    out[k] = quant::packNibbles(quant::quantizeValue(in[2 * k], factor, 4),
                                quant::quantizeValue(in[2 * k + 1], factor, 4));
  if (count % 2)
    out[pairs] =
        quant::packNibbles(quant::quantizeValue(in[count - 1], factor, 4), 0);
}

/// Block `b`'s values from its codes, at a constant bit width.
template <int Bits>
void dequantizeBlock(const int8_t *codes, float scale, int64_t begin,
                     int64_t count, float *__restrict values) {
  const int8_t *__restrict in = codes + begin * Bits / 8;
  if constexpr (Bits == 8) {
    for (int64_t i = 0; i < count; ++i)
      values[i] = quant::dequantizeValue(in[i], scale);
  } else {
    for (int64_t i = 0; i < count; ++i)
      values[i] = quant::dequantizeValue(quant::unpackCode(in, i, 4), scale);
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
          if (bits == 8)
            dequantizeBlock<8>(codes, scales[b], begin, count, values.data());
          else
            dequantizeBlock<4>(codes, scales[b], begin, count, values.data());
          narrow(values.data(), count, result, begin);
        }
      });
}

} // namespace zerosbp::runtime::cpu
