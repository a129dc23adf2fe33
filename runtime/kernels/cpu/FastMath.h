//===- FastMath.h - vectorizable exp, tanh and row reductions ---*- C++ -*-===//
//
// The CPU kernels' exp and tanh (runtime/kernels/FastExp.h, shared with the
// CUDA kernels), the clones of their hot loops for each instruction set, and
// row reductions in a fixed order: eight double lanes, combined pairwise, so
// a sum never depends on threads, alignment or vector width.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_CPU_FASTMATH_H
#define ZEROSBP_RUNTIME_KERNELS_CPU_FASTMATH_H

#include "runtime/kernels/FastExp.h"

#include <cstdint>
#include <cstring>

/// Marks a hot loop function to be compiled for AVX-512 (x86-64-v4), AVX2
/// and the baseline ISA, the loader picking the best one the machine runs.
/// All compute the same bits: the kernels are built without FMA contraction
/// and reductions keep their source order, so only the vector width differs.
#ifndef ZEROSBP_CPU_CLONES
#if defined(__x86_64__) && defined(__clang__) && defined(__linux__)
#define ZEROSBP_CPU_CLONES                                                     \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define ZEROSBP_CPU_CLONES
#endif
#endif

/// The helpers below are always inlined, so that they are compiled for the
/// instruction set of the cloned loop that calls them.
#if defined(__GNUC__) || defined(__clang__)
#define ZEROSBP_INLINE inline __attribute__((always_inline))
#else
#define ZEROSBP_INLINE inline
#endif

namespace zerosbp::runtime::cpu {

// exp and tanh are the CUDA kernels' too (runtime/kernels/FastExp.h).
using math::fastExp;
using math::fastTanh;

/// Eight double lanes. Lane k of a sum adds elements k, k + 8, k + 16, ...
/// in order; writing the lanes as one vector only makes sure the compiler
/// keeps them in registers of the machine's width.
typedef double DoubleLanes __attribute__((vector_size(8 * sizeof(double))));
typedef float FloatLanes __attribute__((vector_size(8 * sizeof(float))));

/// x[0..8) widened to double (exactly).
ZEROSBP_INLINE DoubleLanes loadLanes(const float *x) {
  FloatLanes values;
  std::memcpy(&values, x, sizeof(values));
  return __builtin_convertvector(values, DoubleLanes);
}

/// The lanes added pairwise: ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)).
ZEROSBP_INLINE double combineLanes(DoubleLanes lane) {
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
         ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/// sum(x[0..n)) in double.
ZEROSBP_INLINE double sumOf(const float *x, int64_t n) {
  DoubleLanes lane = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    lane += loadLanes(x + i);
  double total = combineLanes(lane);
  for (; i < n; ++i)
    total += static_cast<double>(x[i]);
  return total;
}

/// sum(a[i] b[i]) in double.
ZEROSBP_INLINE double dotOf(const float *a, const float *b, int64_t n) {
  DoubleLanes lane = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    lane += loadLanes(a + i) * loadLanes(b + i);
  double total = combineLanes(lane);
  for (; i < n; ++i)
    total += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return total;
}

/// sumOf(a, n) and dotOf(a, b, n) in one pass, each added exactly as those
/// add it: two independent chains keep the adder busy.
ZEROSBP_INLINE void sumAndDotOf(const float *a, const float *b, int64_t n,
                                double &sum, double &dot) {
  DoubleLanes sumLane = {}, dotLane = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    DoubleLanes value = loadLanes(a + i);
    sumLane += value;
    dotLane += value * loadLanes(b + i);
  }
  sum = combineLanes(sumLane);
  dot = combineLanes(dotLane);
  for (; i < n; ++i) {
    sum += static_cast<double>(a[i]);
    dot += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  }
}

/// sum((x[i] - mean)^2) in double.
ZEROSBP_INLINE double squaredDeviationOf(const float *x, int64_t n,
                                         double mean) {
  DoubleLanes lane = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    DoubleLanes d = loadLanes(x + i) - mean;
    lane += d * d;
  }
  double total = combineLanes(lane);
  for (; i < n; ++i) {
    double d = static_cast<double>(x[i]) - mean;
    total += d * d;
  }
  return total;
}

/// max(x[0..n)), n > 0. A NaN may be skipped; callers that subtract the max
/// still see it through the element itself.
ZEROSBP_INLINE float maxOf(const float *x, int64_t n) {
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
