//===- Reductions.cu - reduce_sum, reduce_mean and nonfinite_count --------===//
//
// Sums accumulate in double as on the CPU (Reductions.cpp, with the same
// checks, runtime/kernels/ReductionChecks.h), in a fixed order, so a result
// never depends on timing. Two layouts: when the input's innermost dim is
// reduced, a block sums each output's contiguous elements (a row);
// otherwise a thread sums each output down its reduced dims (a column, reads
// coalesced across outputs), split into chunks whose partial sums a second
// kernel adds in order when there are few outputs.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/LossScalingChecks.h"
#include "runtime/kernels/ReductionChecks.h"

#include <algorithm>

namespace zerosbp::runtime::gpu {

namespace {
/// Dims of the input in two groups: those kept (in the result's order) and
/// those reduced, each with its sizes and input strides.
struct DimGroup {
  int rank;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
};

struct ReduceLayout {
  DimGroup kept;
  DimGroup reduced;
  int64_t outCount;
  int64_t reducedCount;
};

/// The input offset of the `linear`-th index of `group`, row-major.
__device__ __forceinline__ int64_t offsetIn(const DimGroup &group,
                                            int64_t linear) {
  if (group.rank == 1)
    return linear * group.strides[0];
  int64_t offset = 0;
  for (int d = group.rank - 1; d >= 0; --d) {
    offset += (linear % group.sizes[d]) * group.strides[d];
    linear /= group.sizes[d];
  }
  return offset;
}

__global__ void reduceRows(const void *in, DType inType, ReduceLayout layout,
                           double divisor, void *out, DType outType) {
  __shared__ double shared[32];
  for (int64_t o = blockIdx.x; o < layout.outCount; o += gridDim.x) {
    int64_t base = offsetIn(layout.kept, o);
    double sum = 0.0;
    for (int64_t r = threadIdx.x; r < layout.reducedCount; r += blockDim.x)
      sum += loadFloat(in, inType, base + offsetIn(layout.reduced, r));
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      storeFloat(out, outType, o, static_cast<float>(sum / divisor));
  }
}

/// Chunk blockIdx.y of every output's reduced elements: into `partial`
/// (chunk-major) when there are several chunks, else straight to `out`.
__global__ void reduceColumns(const void *in, DType inType, ReduceLayout layout,
                              int64_t chunkLength, double *partial,
                              double divisor, void *out, DType outType) {
  int64_t begin = blockIdx.y * chunkLength;
  int64_t end = min(layout.reducedCount, begin + chunkLength);
  ZEROSBP_GRID_LOOP(o, layout.outCount) {
    int64_t base = offsetIn(layout.kept, o);
    double sum = 0.0;
    for (int64_t r = begin; r < end; ++r)
      sum += loadFloat(in, inType, base + offsetIn(layout.reduced, r));
    if (partial)
      partial[blockIdx.y * layout.outCount + o] = sum;
    else
      storeFloat(out, outType, o, static_cast<float>(sum / divisor));
  }
}

__global__ void combineChunks(const double *partial, int64_t chunks,
                              int64_t outCount, double divisor, void *out,
                              DType outType) {
  ZEROSBP_GRID_LOOP(o, outCount) {
    double sum = 0.0;
    for (int64_t c = 0; c < chunks; ++c)
      sum += partial[c * outCount + o];
    storeFloat(out, outType, o, static_cast<float>(sum / divisor));
  }
}

DimGroup toGroup(std::string_view op, const std::vector<int64_t> &sizes,
                 const std::vector<int64_t> &strides) {
  std::vector<StridedDim> dims = simplifyDims(sizes, strides, strides);
  expectDeviceRank(op, dims);
  DimGroup group{static_cast<int>(dims.size()), {}, {}};
  for (size_t d = 0; d < dims.size(); ++d) {
    group.sizes[d] = dims[d].size;
    group.strides[d] = dims[d].strideA;
  }
  return group;
}

void runReduce(std::string_view op, const AttrMap &attrs,
               const Tensors &operands, const Tensors &results, bool mean,
               CudaContext &ctx) {
  checks::ReduceShape reduce =
      checks::checkReduce(op, attrs, operands, results, mean);
  const TensorRef &input = operands[0], &result = results[0];
  int64_t reducedCount = reduce.reducedCount;
  double divisor = reduce.divisor;

  // The kept and the reduced dims, each with their input strides.
  std::vector<int64_t> keptSizes, keptStrides, reducedSizes, reducedStrides;
  std::vector<int64_t> inputStrides = contiguousStrides(input.shape);
  for (int64_t d = 0; d < input.rank(); ++d) {
    if (reduce.reduced[d]) {
      reducedSizes.push_back(input.shape[d]);
      reducedStrides.push_back(inputStrides[d]);
    } else {
      keptSizes.push_back(input.shape[d]);
      keptStrides.push_back(inputStrides[d]);
    }
  }
  ReduceLayout layout{toGroup(op, keptSizes, keptStrides),
                      toGroup(op, reducedSizes, reducedStrides), result.numel(),
                      reducedCount};
  if (layout.outCount == 0)
    return;

  // Outputs are written while other outputs' inputs are still being read.
  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  bool rows = layout.reduced.rank > 0 &&
              layout.reduced.strides[layout.reduced.rank - 1] == 1;
  if (rows) {
    int threads = rowThreads(reducedCount);
    reduceRows<<<gridFor(layout.outCount, 1), threads, 0, ctx.stream()>>>(
        input.data, input.dtype, layout, divisor, out.data(), result.dtype);
    checkLaunch(op);
    out.finish();
    return;
  }
  // Aim for about 256K threads in all (an H200 holds 270K resident), with
  // chunks of at least 32 elements: each thread reads one element a row, so
  // only many threads keep enough loads in flight.
  constexpr int64_t kTargetThreads = 1 << 18;
  constexpr int64_t kMinChunk = 32, kMaxChunks = 65535;
  int64_t chunks =
      std::clamp<int64_t>(std::min(kTargetThreads / layout.outCount,
                                   (reducedCount + kMinChunk - 1) / kMinChunk),
                          1, kMaxChunks);
  int64_t chunkLength =
      std::max<int64_t>((reducedCount + chunks - 1) / chunks, 1);
  chunks = std::max<int64_t>((reducedCount + chunkLength - 1) / chunkLength, 1);
  constexpr int kThreads = 256;
  dim3 grid(gridFor(layout.outCount, kThreads), static_cast<unsigned>(chunks));
  if (chunks == 1) {
    reduceColumns<<<grid, kThreads, 0, ctx.stream()>>>(
        input.data, input.dtype, layout, chunkLength, nullptr, divisor,
        out.data(), result.dtype);
    checkLaunch(op);
  } else {
    DeviceScratch partial(op, ctx, chunks * layout.outCount * sizeof(double));
    reduceColumns<<<grid, kThreads, 0, ctx.stream()>>>(
        input.data, input.dtype, layout, chunkLength, partial.as<double>(),
        divisor, out.data(), result.dtype);
    checkLaunch(op);
    combineChunks<<<gridFor(layout.outCount, kThreads), kThreads, 0,
                    ctx.stream()>>>(partial.as<double>(), chunks,
                                    layout.outCount, divisor, out.data(),
                                    result.dtype);
    checkLaunch(op);
  }
  out.finish();
}

/// Adds to `count` the elements whose exponent bits are all set.
__global__ void countNonfinite(const void *in, DType type, int64_t n,
                               unsigned long long *count) {
  __shared__ double shared[32];
  double local = 0.0;
  ZEROSBP_GRID_LOOP(i, n) {
    bool nonfinite;
    switch (type) {
    case DType::F32:
      nonfinite =
          (static_cast<const uint32_t *>(in)[i] & 0x7f800000u) == 0x7f800000u;
      break;
    case DType::F16:
      nonfinite = (static_cast<const uint16_t *>(in)[i] & 0x7c00u) == 0x7c00u;
      break;
    case DType::BF16:
      nonfinite = (static_cast<const uint16_t *>(in)[i] & 0x7f80u) == 0x7f80u;
      break;
    default:
      nonfinite = (static_cast<const uint64_t *>(in)[i] &
                   0x7ff0000000000000ull) == 0x7ff0000000000000ull;
    }
    local += nonfinite ? 1.0 : 0.0;
  }
  double total = blockSum(local, shared);
  if (threadIdx.x == 0 && total != 0.0)
    atomicAdd(count, static_cast<unsigned long long>(total));
}

__global__ void storeCount(const unsigned long long *count, void *out,
                           DType outType) {
  storeFloat(out, outType, 0, static_cast<float>(*count));
}
} // namespace

void reduceSumKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  runReduce("nn.reduce_sum", attrs, operands, results, /*mean=*/false, ctx);
}

void reduceMeanKernel(const AttrMap &attrs, const Tensors &operands,
                      const Tensors &results, CudaContext &ctx) {
  runReduce("nn.reduce_mean", attrs, operands, results, /*mean=*/true, ctx);
}

void nonfiniteCountKernel(const AttrMap &, const Tensors &operands,
                          const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.nonfinite_count";
  checks::checkNonfiniteCount(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  DeviceScratch count(op, ctx, sizeof(unsigned long long));
  checkCuda(op, cudaMemsetAsync(count.data(), 0, sizeof(unsigned long long),
                                ctx.stream()));
  int64_t numel = input.numel();
  if (numel > 0) {
    constexpr int kThreads = 256;
    countNonfinite<<<gridFor(numel, kThreads), kThreads, 0, ctx.stream()>>>(
        input.data, input.dtype, numel, count.as<unsigned long long>());
    checkLaunch(op);
  }
  // The count is read on the device: the result may be the input's bytes.
  storeCount<<<1, 1, 0, ctx.stream()>>>(count.as<unsigned long long>(),
                                        result.data, result.dtype);
  checkLaunch(op);
}

} // namespace zerosbp::runtime::gpu
