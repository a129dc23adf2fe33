//===- FastExp.h - the CPU and CUDA kernels' exp and tanh -------*- C++ -*-===//
//
// Branch-free exp and tanh, accurate to a few ulp like the SIMD versions
// PyTorch uses, written once for the CPU kernels (where the compiler
// vectorizes them: the libm calls cannot be) and the CUDA kernels, so that
// activations and softmax give the same bits on both (with FMA contraction
// off in both builds).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_FASTEXP_H
#define ZEROSBP_RUNTIME_KERNELS_FASTEXP_H

#include <cstdint>
#include <cstring>

/// Always inlined: on the CPU into each instruction-set clone of the loop
/// that calls it (cpu/FastMath.h's ZEROSBP_CPU_CLONES), on the GPU into the
/// kernel.
#if defined(__CUDACC__)
#define ZEROSBP_MATH_INLINE __host__ __device__ __forceinline__
#elif defined(__GNUC__) || defined(__clang__)
#define ZEROSBP_MATH_INLINE inline __attribute__((always_inline))
#else
#define ZEROSBP_MATH_INLINE inline
#endif

namespace zerosbp::runtime::math {

ZEROSBP_MATH_INLINE float floatFromBits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

/// e^x for every float x, to about 1 ulp (Cephes' expf polynomial): 0 below
/// -104, infinity above 88.73, NaN for NaN.
ZEROSBP_MATH_INLINE float fastExp(float x) {
  float clamped = x < -104.0f ? -104.0f : x;
  clamped = clamped > 89.0f ? 89.0f : clamped;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick; r = x - n ln 2 in two parts.
  constexpr float kRound = 12582912.0f;
  float n = (clamped * 1.44269504088896341f + kRound) - kRound;
  float r = clamped - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * (r * r) + r + 1.0f;
  // 2^n in two factors, so that n in [-150, 129] never leaves the exponent
  // range: results below FLT_MIN become subnormal, above FLT_MAX infinite.
  auto exponent = static_cast<int32_t>(n == n ? n : 0.0f);
  int32_t half = exponent >> 1;
  y = y * floatFromBits(static_cast<uint32_t>(half + 127) << 23);
  y = y * floatFromBits(static_cast<uint32_t>(exponent - half + 127) << 23);
  return x < -104.0f ? 0.0f : y;
}

/// tanh(x) to a few ulp (Cephes' tanhf): an odd polynomial below 0.625,
/// 1 - 2 / (e^2|x| + 1) above, computed as (1 - e) / (1 + e), e = e^-2|x|.
ZEROSBP_MATH_INLINE float fastTanh(float x) {
  float z = x < 0.0f ? -x : x;
  float z2 = x * x;
  float p = -5.70498872745e-3f;
  p = p * z2 + 2.06390887954e-2f;
  p = p * z2 - 5.37397155531e-2f;
  p = p * z2 + 1.33314422036e-1f;
  p = p * z2 - 3.33332819422e-1f;
  float small = p * z2 * x + x;
  float e = fastExp(-2.0f * z);
  float large = (1.0f - e) / (1.0f + e);
  large = x < 0.0f ? -large : large;
  return z < 0.625f ? small : large;
}

} // namespace zerosbp::runtime::math

#endif // ZEROSBP_RUNTIME_KERNELS_FASTEXP_H
