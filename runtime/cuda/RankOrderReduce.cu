//===- RankOrderReduce.cu - collectives' reductions on the device ---------===//

#include "runtime/cuda/RankOrderReduce.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/Support.h"

#include <string>
#include <type_traits>

namespace zerosbp::runtime::gpu {

namespace {

/// The pointers of one launch, passed by value.
struct RankPointers {
  const void *sources[kMaxReduceRanks];
  void *outputs[kMaxReduceRanks];
  int numSources;
  int numOutputs;
};

/// f32, f16 and bf16 through f32; Max keeps a NaN, as the CPU does.
__global__ void reduceFloats(RankPointers p, DType type, int64_t count,
                             bool max) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float acc = loadFloat(p.sources[0], type, i);
    for (int r = 1; r < p.numSources; ++r) {
      float value = loadFloat(p.sources[r], type, i);
      if (!max)
        acc += value;
      else if (!(acc >= value) && !isnan(acc))
        acc = value;
    }
    for (int k = 0; k < p.numOutputs; ++k)
      storeFloat(p.outputs[k], type, i, acc);
  }
}

/// f64 and the integers are reduced in their own type: a sum (two's
/// complement wrap-around for integers) or a max (f64's keeps a NaN), as the
/// CPU's.
__device__ __forceinline__ double sumOf(double acc, double value) {
  return acc + value;
}
__device__ __forceinline__ double maxOf(double acc, double value) {
  return !(acc >= value) && !isnan(acc) ? value : acc;
}
template <typename Int>
__device__ __forceinline__ Int sumOf(Int acc, Int value) {
  using Unsigned = std::make_unsigned_t<Int>;
  return static_cast<Int>(static_cast<Unsigned>(acc) +
                          static_cast<Unsigned>(value));
}
template <typename Int>
__device__ __forceinline__ Int maxOf(Int acc, Int value) {
  return value > acc ? value : acc;
}

template <typename T>
__global__ void reduceStored(RankPointers p, int64_t count, bool max) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    T acc = static_cast<const T *>(p.sources[0])[i];
    for (int r = 1; r < p.numSources; ++r) {
      T value = static_cast<const T *>(p.sources[r])[i];
      acc = max ? maxOf(acc, value) : sumOf(acc, value);
    }
    for (int k = 0; k < p.numOutputs; ++k)
      static_cast<T *>(p.outputs[k])[i] = acc;
  }
}

/// i1: logical or, whatever the op.
__global__ void reduceBools(RankPointers p, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint8_t acc = 0;
    for (int r = 0; r < p.numSources; ++r)
      acc |= static_cast<const uint8_t *>(p.sources[r])[i] != 0;
    for (int k = 0; k < p.numOutputs; ++k)
      static_cast<uint8_t *>(p.outputs[k])[i] = acc;
  }
}

} // namespace

void reduceInRankOrderOnDevice(DType type,
                               const std::vector<const void *> &sources,
                               const std::vector<void *> &outputs,
                               int64_t count, ReduceOp op,
                               cudaStream_t stream) {
  if (sources.empty() || sources.size() > kMaxReduceRanks ||
      outputs.size() > kMaxReduceRanks)
    throw RuntimeError("device reduction over " +
                       std::to_string(sources.size()) + " ranks into " +
                       std::to_string(outputs.size()) + " outputs: 1 to " +
                       std::to_string(kMaxReduceRanks) + " of each");
  if (count <= 0 || outputs.empty())
    return;
  RankPointers p{};
  p.numSources = static_cast<int>(sources.size());
  p.numOutputs = static_cast<int>(outputs.size());
  for (size_t r = 0; r < sources.size(); ++r)
    p.sources[r] = sources[r];
  for (size_t k = 0; k < outputs.size(); ++k)
    p.outputs[k] = outputs[k];
  constexpr int kThreads = 256;
  unsigned blocks = gridFor(count, kThreads);
  bool max = op == ReduceOp::Max;
  switch (type) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    reduceFloats<<<blocks, kThreads, 0, stream>>>(p, type, count, max);
    break;
  case DType::F64:
    reduceStored<double><<<blocks, kThreads, 0, stream>>>(p, count, max);
    break;
  case DType::I64:
    reduceStored<int64_t><<<blocks, kThreads, 0, stream>>>(p, count, max);
    break;
  case DType::I32:
    reduceStored<int32_t><<<blocks, kThreads, 0, stream>>>(p, count, max);
    break;
  case DType::I1:
    reduceBools<<<blocks, kThreads, 0, stream>>>(p, count);
    break;
  case DType::I8:
    reduceStored<int8_t><<<blocks, kThreads, 0, stream>>>(p, count, max);
    break;
  }
  checkLaunch("device reduction");
}

} // namespace zerosbp::runtime::gpu
