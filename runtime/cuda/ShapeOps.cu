//===- ShapeOps.cu - fill, reshape, pad, transpose, slice, split, concat --===//
//
// These move elements of any type as raw bits; only fill looks at values.
// The checks and messages are the CPU kernels' (ShapeOps.cpp). Every move is
// one strided copy: a thread per destination element, so writes coalesce.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"

#include <cstring>

namespace zerosbp::runtime::gpu {

namespace {
struct CopyDims {
  int rank;
  int64_t sizes[kMaxDims];
  int64_t dstStrides[kMaxDims];
  int64_t srcStrides[kMaxDims];
};

__global__ void copyStridedElements(void *dst, const void *src, CopyDims dims,
                                    int elementBytes, int64_t n) {
  ZEROSBP_GRID_LOOP(i, n) {
    int64_t dstOffset = 0, srcOffset = 0, rest = i;
    for (int d = dims.rank - 1; d >= 0; --d) {
      int64_t index = rest % dims.sizes[d];
      rest /= dims.sizes[d];
      dstOffset += index * dims.dstStrides[d];
      srcOffset += index * dims.srcStrides[d];
    }
    copyElement(dst, dstOffset, src, srcOffset, elementBytes);
  }
}

__global__ void fillElements(void *out, uint64_t bits, int elementBytes,
                             int64_t n) {
  ZEROSBP_GRID_LOOP(i, n) {
    switch (elementBytes) {
    case 2:
      static_cast<uint16_t *>(out)[i] = static_cast<uint16_t>(bits);
      break;
    case 4:
      static_cast<uint32_t *>(out)[i] = static_cast<uint32_t>(bits);
      break;
    default:
      static_cast<uint64_t *>(out)[i] = bits;
    }
  }
}

/// Enqueues the copy of a box of `shape` elements from `src` to `dst`;
/// strides are in elements. `src` and `dst` must not overlap.
void copyStrided(std::string_view op, CudaContext &ctx,
                 const std::vector<int64_t> &shape, void *dst,
                 const std::vector<int64_t> &dstStrides, const void *src,
                 const std::vector<int64_t> &srcStrides, size_t elementBytes) {
  int64_t numel = 1;
  for (int64_t dim : shape)
    numel *= dim;
  if (numel == 0)
    return;
  std::vector<StridedDim> dims = simplifyDims(shape, dstStrides, srcStrides);
  if (dims.empty() ||
      (dims.size() == 1 && dims[0].strideA == 1 && dims[0].strideB == 1)) {
    checkCuda(op, cudaMemcpyAsync(dst, src, numel * elementBytes,
                                  cudaMemcpyDeviceToDevice, ctx.stream()));
    return;
  }
  expectDeviceRank(op, dims);
  CopyDims copy{static_cast<int>(dims.size()), {}, {}, {}};
  for (size_t d = 0; d < dims.size(); ++d) {
    copy.sizes[d] = dims[d].size;
    copy.dstStrides[d] = dims[d].strideA;
    copy.srcStrides[d] = dims[d].strideB;
  }
  constexpr int kThreads = 256;
  copyStridedElements<<<gridFor(numel, kThreads), kThreads, 0, ctx.stream()>>>(
      dst, src, copy, static_cast<int>(elementBytes), numel);
  checkLaunch(op);
}

char *bytesAt(void *data, int64_t elements, size_t elementBytes) {
  return static_cast<char *>(data) + elements * elementBytes;
}

/// The value of `fill` stored as one element of `type`: the CPU's encoding.
uint64_t encodeFill(double value, DType type) {
  uint64_t bits = 0;
  switch (type) {
  case DType::F32: {
    auto v = static_cast<float>(value);
    std::memcpy(&bits, &v, sizeof(v));
    break;
  }
  case DType::F16:
    bits = floatToHalf(static_cast<float>(value));
    break;
  case DType::BF16:
    bits = floatToBf16(static_cast<float>(value));
    break;
  case DType::F64:
    std::memcpy(&bits, &value, sizeof(value));
    break;
  case DType::I64: {
    auto v = static_cast<int64_t>(value);
    std::memcpy(&bits, &v, sizeof(v));
    break;
  }
  case DType::I32: {
    auto v = static_cast<int32_t>(value);
    std::memcpy(&bits, &v, sizeof(v));
    break;
  }
  case DType::I1:
    bits = value != 0.0 ? 1 : 0;
    break;
  }
  return bits;
}
} // namespace

void fillKernel(const AttrMap &attrs, const Tensors &operands,
                const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.fill";
  expectArity(op, operands, results, 0, 1);
  const TensorRef &result = results[0];
  // `loss_seed` only marks the seed of the backward pass.
  uint64_t bits = encodeFill(attrs.getFloat("value"), result.dtype);
  int64_t numel = result.numel();
  if (numel == 0)
    return;
  size_t elementBytes = dtypeBytes(result.dtype);
  if (elementBytes == 1) {
    checkCuda(op, cudaMemsetAsync(result.data, static_cast<int>(bits), numel,
                                  ctx.stream()));
    return;
  }
  constexpr int kThreads = 256;
  fillElements<<<gridFor(numel, kThreads), kThreads, 0, ctx.stream()>>>(
      result.data, bits, static_cast<int>(elementBytes), numel);
  checkLaunch(op);
}

void reshapeKernel(const AttrMap &, const Tensors &operands,
                   const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.reshape";
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectSameDType(op, result, input, "result");
  expectNumel(op, result, input.numel(), "result");
  copyDeviceBytes(op, ctx, result.data, input.data, input.bytes());
}

void padKernel(const AttrMap &attrs, const Tensors &operands,
               const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.pad";
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectSameDType(op, result, input, "result");
  int64_t rank = input.rank();
  const std::vector<int64_t> &low = perDim(op, attrs, "low", rank);
  const std::vector<int64_t> &high = perDim(op, attrs, "high", rank);
  std::vector<int64_t> shape(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0)
      fail(op, "padding of dim " + std::to_string(d) + " is negative");
    shape[d] = input.shape[d] + low[d] + high[d];
  }
  expectShape(op, result, shape, "result");
  if (result.bytes() == 0)
    return;

  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  checkCuda(op, cudaMemsetAsync(out.data(), 0, result.bytes(), ctx.stream()));
  std::vector<int64_t> strides = contiguousStrides(shape);
  size_t elementBytes = dtypeBytes(input.dtype);
  copyStrided(op, ctx, input.shape,
              bytesAt(out.data(), offsetOf(low, strides), elementBytes),
              strides, input.data, contiguousStrides(input.shape),
              elementBytes);
  out.finish();
}

void transposeKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.transpose";
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectSameDType(op, result, input, "result");
  int64_t rank = input.rank();
  const std::vector<int64_t> &permutation =
      perDim(op, attrs, "permutation", rank);
  std::vector<int64_t> inputStrides = contiguousStrides(input.shape);
  std::vector<int64_t> shape(static_cast<size_t>(rank));
  std::vector<int64_t> srcStrides(static_cast<size_t>(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t from = permutation[d];
    if (from < 0 || from >= rank || seen[from])
      fail(op, "'permutation' is not a permutation of " + std::to_string(rank) +
                   " dims");
    seen[from] = true;
    shape[d] = input.shape[from];
    srcStrides[d] = inputStrides[from];
  }
  expectShape(op, result, shape, "result");

  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  copyStrided(op, ctx, shape, out.data(), contiguousStrides(shape), input.data,
              srcStrides, dtypeBytes(input.dtype));
  out.finish();
}

void sliceKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.slice";
  SliceWindow window = checkSlice(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (result.bytes() == 0)
    return;

  size_t elementBytes = dtypeBytes(input.dtype);
  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  copyStrided(op, ctx, result.shape, out.data(),
              contiguousStrides(result.shape),
              bytesAt(input.data, window.offset, elementBytes), window.strides,
              elementBytes);
  out.finish();
}

void splitKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.split";
  const std::vector<int64_t> &sizes = attrs.getInts("sizes");
  expectArity(op, operands, results, 1, sizes.size());
  const TensorRef &input = operands[0];
  int64_t axis = normalizeAxis(op, attrs.getInt("axis"), input.rank());
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size;
  if (total != input.shape[axis])
    fail(op, "sizes add up to " + std::to_string(total) + ", not dim " +
                 std::to_string(input.shape[axis]));

  // A result in the input's bytes would clobber what later results read.
  const void *src = input.data;
  std::optional<DeviceScratch> copy;
  for (const TensorRef &result : results) {
    if (overlaps(result, input)) {
      copy.emplace(op, ctx, input.bytes());
      copyDeviceBytes(op, ctx, copy->data(), input.data, input.bytes());
      src = copy->data();
      break;
    }
  }
  std::vector<int64_t> inputStrides = contiguousStrides(input.shape);
  size_t elementBytes = dtypeBytes(input.dtype);
  int64_t offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const TensorRef &result = results[k];
    expectSameDType(op, result, input, "result");
    std::vector<int64_t> shape = input.shape;
    shape[axis] = sizes[k];
    expectShape(op, result, shape, "result");
    copyStrided(op, ctx, shape, result.data, contiguousStrides(shape),
                bytesAt(const_cast<void *>(src), offset * inputStrides[axis],
                        elementBytes),
                inputStrides, elementBytes);
    offset += sizes[k];
  }
}

void concatKernel(const AttrMap &attrs, const Tensors &operands,
                  const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.concat";
  if (operands.empty())
    fail(op, "needs at least one operand");
  expectArity(op, operands, results, operands.size(), 1);
  const TensorRef &result = results[0];
  int64_t rank = result.rank();
  int64_t axis = normalizeAxis(op, attrs.getInt("axis"), rank);
  std::vector<int64_t> shape = operands[0].shape;
  if (static_cast<int64_t>(shape.size()) != rank)
    fail(op, "operand 0 has rank " + std::to_string(shape.size()) +
                 ", result " + std::to_string(rank));
  shape[axis] = 0;
  for (const TensorRef &operand : operands) {
    expectSameDType(op, operand, result, "operand");
    std::vector<int64_t> expected = shape;
    expected[axis] = operand.rank() == rank ? operand.shape[axis] : 0;
    expectShape(op, operand, expected, "operand");
    shape[axis] += operand.shape[axis];
  }
  expectShape(op, result, shape, "result");

  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  std::vector<int64_t> strides = contiguousStrides(shape);
  size_t elementBytes = dtypeBytes(result.dtype);
  int64_t offset = 0;
  for (const TensorRef &operand : operands) {
    copyStrided(op, ctx, operand.shape,
                bytesAt(out.data(), offset * strides[axis], elementBytes),
                strides, operand.data, contiguousStrides(operand.shape),
                elementBytes);
    offset += operand.shape[axis];
  }
  out.finish();
}

} // namespace zerosbp::runtime::gpu
