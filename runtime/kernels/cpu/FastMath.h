//===- FastMath.h - vectorizable exp, tanh and row reductions ---*- C++ -*-===//
//
// Branch-free exp and tanh that the compiler can vectorize (the libm calls
// cannot be), accurate to a few ulp like the SIMD versions PyTorch uses, and
// row reductions in a fixed order: eight double lanes, combined pairwise, so
// a sum never depends on threads, alignment or vector width.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_CPU_FASTMATH_H
#define ZEROSBP_RUNTIME_KERNELS_CPU_FASTMATH_H

#include <cstdint>
#include <cstring>

/// Marks a hot loop function to be compiled twice, for AVX2 and for the
/// baseline ISA, the loader picking the one the machine runs. Both compute
/// the same bits: AVX2 brings no FMA, and reductions keep their source order.
#ifndef ZEROSBP_CPU_CLONES
#if defined(__x86_64__) && defined(__clang__) && defined(__linux__)
#define ZEROSBP_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ZEROSBP_CPU_CLONES
#endif
#endif

namespace zerosbp::runtime::cpu {

inline float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// e^x for every float x, to about 1 ulp (Cephes' expf polynomial): 0 below
/// -104, infinity above 88.73, NaN for NaN.
inline float fastExp(float x) {
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
  y = y * bitsToFloat(static_cast<uint32_t>(half + 127) << 23);
  y = y * bitsToFloat(static_cast<uint32_t>(exponent - half + 127) << 23);
  return x < -104.0f ? 0.0f : y;
}

/// tanh(x) to a few ulp (Cephes' tanhf): an odd polynomial below 0.625,
/// 1 - 2 / (e^2|x| + 1) above, computed as (1 - e) / (1 + e), e = e^-2|x|.
inline float fastTanh(float x) {
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

/// sum(x[0..n)) in double.
inline double sumOf(const float *x, int64_t n) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k)
      lane[k] += static_cast<double>(x[i + k]);
  double total = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                 ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i)
    total += static_cast<double>(x[i]);
  return total;
}

/// sum(a[i] b[i]) in double.
inline double dotOf(const float *a, const float *b, int64_t n) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k)
      lane[k] += static_cast<double>(a[i + k]) * static_cast<double>(b[i + k]);
  double total = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                 ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i)
    total += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return total;
}

/// sum((x[i] - mean)^2) in double.
inline double squaredDeviationOf(const float *x, int64_t n, double mean) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      double d = static_cast<double>(x[i + k]) - mean;
      lane[k] += d * d;
    }
  double total = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                 ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i) {
    double d = static_cast<double>(x[i]) - mean;
    total += d * d;
  }
  return total;
}

/// max(x[0..n)), n > 0. A NaN may be skipped; callers that subtract the max
/// still see it through the element itself.
inline float maxOf(const float *x, int64_t n) {
  float lane[8];
  int64_t i = 0;
  if (n >= 8) {
    for (int k = 0; k < 8; ++k)
      lane[k] = x[k];
    for (i = 8; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k)
        lane[k] = x[i + k] > lane[k] ? x[i + k] : lane[k];
  } else {
    for (int k = 0; k < 8; ++k)
      lane[k] = x[0];
  }
  float best = lane[0];
  for (int k = 1; k < 8; ++k)
    best = lane[k] > best ? lane[k] : best;
  for (; i < n; ++i)
    best = x[i] > best ? x[i] : best;
  return best;
}

} // namespace zerosbp::runtime::cpu

#endif // ZEROSBP_RUNTIME_KERNELS_CPU_FASTMATH_H
