//===- BlockQuantize.h - block-wise symmetric quantization ------*- C++ -*-===//
//
// The arithmetic of nn.quantize and nn.dequantize (docs/plan-format.md#
// nnquantize-and-nndequantize), ZeRO++'s block quantization: the elements
// are cut into blocks of `block_size`; block b keeps one f32 scale,
// amax_b / L with amax_b its largest magnitude and L = 2^(bits-1) - 1, and
// each element becomes the integer rint(x * (L / amax_b)) in [-L, L]
// (round half to even). Dequantized, an element is q * scale_b, within
// scale_b / 2 of x. An all-zero block has scale 0; a block holding a NaN or
// an infinity has scale NaN or infinity, so that its dequantized elements
// are NaN and the non-finite checks downstream still see it.
//
// Every operation is one correctly rounded f32 operation, so the CPU and
// CUDA kernels, which share these functions, agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_BLOCKQUANTIZE_H
#define ZEROSBP_RUNTIME_KERNELS_BLOCKQUANTIZE_H

#include "runtime/kernels/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace zerosbp::runtime::quant {

/// Why codes of `bits` in blocks of `blockSize` cannot be made (bits 8 or
/// 4; 4-bit blocks even, so that no byte holds two blocks' codes); empty
/// when they can. The kernels' checks and the ops' verifiers both ask.
inline std::string layoutError(int64_t blockSize, int64_t bits) {
  if (blockSize < 1)
    return "block_size must be at least 1, got " + std::to_string(blockSize);
  if (bits != 8 && bits != 4)
    return "bits must be 8 or 4, got " + std::to_string(bits);
  if (bits == 4 && blockSize % 2)
    return "4-bit codes need an even block_size, got " +
           std::to_string(blockSize);
  return "";
}

/// Bytes of `count` codes of `bits`.
ZEROSBP_HOST_DEVICE inline int64_t codeBytes(int64_t count, int64_t bits) {
  return (count * bits + 7) / 8;
}

/// Blocks of `blockSize` that `count` elements fall in.
ZEROSBP_HOST_DEVICE inline int64_t blockCount(int64_t count,
                                              int64_t blockSize) {
  return (count + blockSize - 1) / blockSize;
}

/// L: the largest magnitude of a `bits`-bit code (127 for 8, 7 for 4).
ZEROSBP_HOST_DEVICE inline int levels(int bits) {
  return (1 << (bits - 1)) - 1;
}

/// The quiet NaN both kernels write (0x7fc00000): CPU and GPU arithmetic
/// would give NaNs of different bits.
ZEROSBP_HOST_DEVICE inline float quietNaN() {
  uint32_t bits = 0x7fc00000u;
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

/// A block's scale from its largest magnitude.
ZEROSBP_HOST_DEVICE inline float blockScale(float amax, int bits) {
  return amax != amax ? quietNaN() : amax / static_cast<float>(levels(bits));
}

/// Code `code` of a block of scale `scale`, dequantized.
ZEROSBP_HOST_DEVICE inline float dequantizeValue(int code, float scale) {
  float value = static_cast<float>(code) * scale;
  return value != value ? quietNaN() : value;
}

/// What multiplies the block's elements onto [-L, L]; 0 for an all-zero or
/// non-finite block.
ZEROSBP_HOST_DEVICE inline float blockFactor(float amax, int bits) {
  return amax > 0 && amax <= 3.4028234663852886e38f
             ? static_cast<float>(levels(bits)) / amax
             : 0.0f;
}

/// `value` rounded to an integer, half to even, for |value| < 2^22: adding
/// and taking away 1.5 * 2^23 rounds in the default mode as rint does, in
/// two additions that vectorize where rint is a library call.
ZEROSBP_HOST_DEVICE inline float roundToInteger(float value) {
  const float shift = 12582912.0f;
  return (value + shift) - shift;
}

/// The code of `x` in a block of factor `factor`: |x * factor| is at most
/// L and a rounding, far below 2^22.
ZEROSBP_HOST_DEVICE inline int quantizeValue(float x, float factor, int bits) {
  float level = static_cast<float>(levels(bits));
  float scaled = roundToInteger(x * factor);
  // Branch-free, so that it vectorizes; a NaN (the block's scale says so)
  // becomes code 0.
  scaled = scaled > level ? level : scaled;
  scaled = scaled < -level ? -level : scaled;
  scaled = scaled == scaled ? scaled : 0.0f;
  return static_cast<int>(scaled);
}

/// Element `i`'s code in a packed buffer: one byte each for 8 bits; for 4,
/// two per byte, element 2k in the low nibble of byte k.
ZEROSBP_HOST_DEVICE inline int unpackCode(const int8_t *codes, int64_t i,
                                          int bits) {
  if (bits == 8)
    return codes[i];
  int nibble = (static_cast<uint8_t>(codes[i / 2]) >> (4 * (i % 2))) & 0xF;
  return nibble >= 8 ? nibble - 16 : nibble;
}

/// The byte that holds codes `low` (element 2k) and `high` (element 2k+1) at
/// 4 bits.
ZEROSBP_HOST_DEVICE inline int8_t packNibbles(int low, int high) {
  return static_cast<int8_t>(
      static_cast<uint8_t>((low & 0xF) | ((high & 0xF) << 4)));
}

} // namespace zerosbp::runtime::quant

#endif // ZEROSBP_RUNTIME_KERNELS_BLOCKQUANTIZE_H
