//===- DeviceMath.cuh - device helpers the CUDA kernels share ---*- C++ -*-===//
//
// Loads and stores of every float storage type through f32, with the CPU's
// f16/bf16 rounding bit for bit (runtime/core/DType.{h,cpp}); the CPU
// kernels' exp and tanh (runtime/kernels/FastExp.h), so that with FMA
// contraction off (BUILD.bazel) activations and softmax give the CPU's bits;
// and block reductions that every thread of the block receives, summed in a
// fixed order so results do not vary from run to run.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_DEVICEMATH_CUH
#define ZEROSBP_RUNTIME_CUDA_DEVICEMATH_CUH

#include "runtime/core/DType.h"
#include "runtime/core/Tensor.h"
#include "runtime/kernels/FastExp.h"

#include <cstdint>

namespace zerosbp::runtime::gpu {

//===----------------------------------------------------------------------===//
// Storage types
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float bf16BitsToFloat(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

__device__ __forceinline__ uint16_t floatToBf16Bits(float value) {
  uint32_t bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN stays a quiet NaN.
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

__device__ __forceinline__ float halfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t result;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in f32.
    result = sign | __float_as_uint(static_cast<float>(mantissa) * 0x1p-24f);
  } else if (exponent == 31) {
    result = sign | 0x7f800000u | (mantissa << 13);
  } else {
    result = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  return __uint_as_float(result);
}

__device__ __forceinline__ uint16_t floatToHalfBits(float value) {
  uint32_t bits = __float_as_uint(value);
  auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return sign | 0x7e00u;
  if (magnitude >= 0x477ff000u) // Rounds to or beyond 65520: infinity.
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) // Subnormal; rintf rounds to nearest even.
    return sign | static_cast<uint16_t>(
                      rintf(__uint_as_float(magnitude) * 16777216.0f));
  uint32_t roundingBias = 0xfffu + ((magnitude >> 13) & 1u);
  magnitude += roundingBias;
  return sign | static_cast<uint16_t>((magnitude - 0x38000000u) >> 13);
}

/// Element i of a float tensor (f32, f16, bf16 or f64) as f32.
__device__ __forceinline__ float loadFloat(const void *data, DType type,
                                           int64_t i) {
  switch (type) {
  case DType::F32:
    return static_cast<const float *>(data)[i];
  case DType::BF16:
    return bf16BitsToFloat(static_cast<const uint16_t *>(data)[i]);
  case DType::F16:
    return halfBitsToFloat(static_cast<const uint16_t *>(data)[i]);
  default:
    return static_cast<float>(static_cast<const double *>(data)[i]);
  }
}

/// Stores `value` as element i of a float tensor, rounding to nearest even.
__device__ __forceinline__ void storeFloat(void *data, DType type, int64_t i,
                                           float value) {
  switch (type) {
  case DType::F32:
    static_cast<float *>(data)[i] = value;
    return;
  case DType::BF16:
    static_cast<uint16_t *>(data)[i] = floatToBf16Bits(value);
    return;
  case DType::F16:
    static_cast<uint16_t *>(data)[i] = floatToHalfBits(value);
    return;
  default:
    static_cast<double *>(data)[i] = value;
  }
}

/// Elements a thread moves at once on the vector paths: 16 bytes of bf16 or
/// f16, 32 of f32.
constexpr int kVector = 8;

/// Elements [i, i + kVector) of a float tensor whose address and `i` make a
/// 16-byte aligned start; f32, bf16 and f16 in 16-byte loads.
__device__ __forceinline__ void
loadVector(const void *data, DType type, int64_t i, float (&values)[kVector]) {
  if (type == DType::F32) {
    const auto *at =
        reinterpret_cast<const float4 *>(static_cast<const float *>(data) + i);
    float4 low = at[0], high = at[1];
    values[0] = low.x, values[1] = low.y, values[2] = low.z, values[3] = low.w;
    values[4] = high.x, values[5] = high.y, values[6] = high.z;
    values[7] = high.w;
    return;
  }
  if (type == DType::BF16 || type == DType::F16) {
    uint4 raw = *reinterpret_cast<const uint4 *>(
        static_cast<const uint16_t *>(data) + i);
    uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < kVector; ++k) {
      auto bits = static_cast<uint16_t>(words[k / 2] >> (16 * (k % 2)));
      values[k] =
          type == DType::BF16 ? bf16BitsToFloat(bits) : halfBitsToFloat(bits);
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < kVector; ++k)
    values[k] = loadFloat(data, type, i + k);
}

/// Whether a tensor's data can take loadVector and storeVector's 16-byte
/// words from its start (f64 has no vector path).
inline bool vectorLoadable(const void *data, DType type) {
  return type != DType::F64 && reinterpret_cast<uintptr_t>(data) % 16 == 0;
}

/// Stores `values` as elements [i, i + kVector), aligned as loadVector's.
__device__ __forceinline__ void storeVector(void *data, DType type, int64_t i,
                                            const float (&values)[kVector]) {
  if (type == DType::F32) {
    auto *at = reinterpret_cast<float4 *>(static_cast<float *>(data) + i);
    at[0] = make_float4(values[0], values[1], values[2], values[3]);
    at[1] = make_float4(values[4], values[5], values[6], values[7]);
    return;
  }
  if (type == DType::BF16 || type == DType::F16) {
    uint32_t words[4];
#pragma unroll
    for (int k = 0; k < kVector; k += 2) {
      uint32_t low = type == DType::BF16 ? floatToBf16Bits(values[k])
                                         : floatToHalfBits(values[k]);
      uint32_t high = type == DType::BF16 ? floatToBf16Bits(values[k + 1])
                                          : floatToHalfBits(values[k + 1]);
      words[k / 2] = low | (high << 16);
    }
    *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(data) + i) =
        make_uint4(words[0], words[1], words[2], words[3]);
    return;
  }
#pragma unroll
  for (int k = 0; k < kVector; ++k)
    storeFloat(data, type, i + k, values[k]);
}

/// Element i of an i32/i64 tensor.
__device__ __forceinline__ int64_t loadIndex(const void *data, DType type,
                                             int64_t i) {
  return type == DType::I64 ? static_cast<const int64_t *>(data)[i]
                            : static_cast<const int32_t *>(data)[i];
}

/// Copies element `from` of `src` to element `to` of `dst` as raw bits.
__device__ __forceinline__ void copyElement(void *dst, int64_t to,
                                            const void *src, int64_t from,
                                            int elementBytes) {
  switch (elementBytes) {
  case 1:
    static_cast<uint8_t *>(dst)[to] = static_cast<const uint8_t *>(src)[from];
    return;
  case 2:
    static_cast<uint16_t *>(dst)[to] = static_cast<const uint16_t *>(src)[from];
    return;
  case 4:
    static_cast<uint32_t *>(dst)[to] = static_cast<const uint32_t *>(src)[from];
    return;
  case 16:
    static_cast<uint4 *>(dst)[to] = static_cast<const uint4 *>(src)[from];
    return;
  default:
    static_cast<uint64_t *>(dst)[to] = static_cast<const uint64_t *>(src)[from];
  }
}

// exp and tanh: the CPU kernels' (runtime/kernels/FastExp.h).
using math::fastExp;
using math::fastTanh;

//===----------------------------------------------------------------------===//
// Reductions (blockDim.x a multiple of 32, at most 1024)
//===----------------------------------------------------------------------===//

constexpr unsigned kFullWarp = 0xffffffffu;

__device__ __forceinline__ double warpSum(double value) {
  for (int offset = 16; offset > 0; offset >>= 1)
    value += __shfl_xor_sync(kFullWarp, value, offset);
  return value;
}

__device__ __forceinline__ float warpMax(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other = __shfl_xor_sync(kFullWarp, value, offset);
    value = other > value ? other : value;
  }
  return value;
}

/// The block's sum, in every thread. `shared` holds 32 doubles; the trailing
/// barrier lets the next reduction reuse it.
__device__ __forceinline__ double blockSum(double value, double *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = (blockDim.x + 31) >> 5;
  value = warpSum(value);
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < warps; ++w)
    total += shared[w];
  __syncthreads();
  return total;
}

/// The block's max (a NaN may be skipped, as on the CPU), in every thread.
__device__ __forceinline__ float blockMax(float value, float *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = (blockDim.x + 31) >> 5;
  value = warpMax(value);
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  float best = shared[0];
  for (int w = 1; w < warps; ++w)
    best = shared[w] > best ? shared[w] : best;
  __syncthreads();
  return best;
}

/// Threads for a block that reduces a row of `n` elements: a multiple of 32
/// from 32 to 256.
inline int rowThreads(int64_t n) {
  int threads = 32;
  while (threads < 256 && threads < n)
    threads *= 2;
  return threads;
}

/// Blocks for a launch of one block per row, at most 65535: the row kernels
/// loop over the rows past the last block.
inline unsigned rowBlocks(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : rows > 65535 ? 65535 : rows);
}

/// A float tensor of any storage type, as a launch argument.
struct FloatRef {
  void *data;
  DType type;
};

inline FloatRef ref(const TensorRef &tensor) {
  return {tensor.data, tensor.dtype};
}

__device__ __forceinline__ float load(FloatRef t, int64_t i) {
  return loadFloat(t.data, t.type, i);
}

__device__ __forceinline__ void store(FloatRef t, int64_t i, float value) {
  storeFloat(t.data, t.type, i, value);
}

/// Grid-stride loop bounds.
#define ZEROSBP_GRID_LOOP(i, n)                                                \
  for (int64_t i =                                                             \
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;        \
       i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

} // namespace zerosbp::runtime::gpu

#endif // ZEROSBP_RUNTIME_CUDA_DEVICEMATH_CUH
