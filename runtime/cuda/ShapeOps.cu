//===- ShapeOps.cu - fill, reshape, pad, transpose, slice, split, concat --===//
//
// These move elements of any type as raw bits; only fill looks at values.
// The checks are the CPU kernels' (runtime/kernels/ShapeOpChecks.h). Every
// move is one strided copy: a thread per destination element, so writes
// coalesce.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/ShapeOpChecks.h"

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
  // Whole 16-, 8- or 4-byte words when the innermost dim is contiguous on
  // both sides and the other strides and both addresses allow it: a head
  // split's rows of 64 bf16 become 8 words, and the per-element index
  // arithmetic, not memory, is what bounds this kernel.
  StridedDim &inner = dims.back();
  if (inner.strideA == 1 && inner.strideB == 1) {
    for (size_t wordBytes : {16, 8, 4}) {
      if (wordBytes <= elementBytes)
        break;
      auto factor = static_cast<int64_t>(wordBytes / elementBytes);
      bool fits = inner.size % factor == 0 &&
                  reinterpret_cast<uintptr_t>(dst) % wordBytes == 0 &&
                  reinterpret_cast<uintptr_t>(src) % wordBytes == 0;
      for (size_t d = 0; d + 1 < dims.size(); ++d)
        fits = fits && dims[d].strideA % factor == 0 &&
               dims[d].strideB % factor == 0;
      if (!fits)
        continue;
      inner.size /= factor;
      for (size_t d = 0; d + 1 < dims.size(); ++d) {
        dims[d].strideA /= factor;
        dims[d].strideB /= factor;
      }
      numel /= factor;
      elementBytes = wordBytes;
      break;
    }
  }
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

} // namespace

void fillKernel(const AttrMap &attrs, const Tensors &operands,
                const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.fill";
  expectArity(op, operands, results, 0, 1);
  const TensorRef &result = results[0];
  // `loss_seed` only marks the seed of the backward pass.
  uint64_t bits = checks::fillBits(attrs.getFloat("value"), result.dtype);
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
  checks::checkReshape(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  copyDeviceBytes(op, ctx, result.data, input.data, input.bytes());
}

void padKernel(const AttrMap &attrs, const Tensors &operands,
               const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.pad";
  checks::PadWindow window = checks::checkPad(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (result.bytes() == 0)
    return;

  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  checkCuda(op, cudaMemsetAsync(out.data(), 0, result.bytes(), ctx.stream()));
  size_t elementBytes = dtypeBytes(input.dtype);
  copyStrided(op, ctx, input.shape,
              bytesAt(out.data(), window.offset, elementBytes),
              contiguousStrides(window.shape), input.data,
              contiguousStrides(input.shape), elementBytes);
  out.finish();
}

void transposeKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.transpose";
  checks::TransposeView view =
      checks::checkTranspose(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];

  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  copyStrided(op, ctx, view.shape, out.data(), contiguousStrides(view.shape),
              input.data, view.srcStrides, dtypeBytes(input.dtype));
  out.finish();
}

void sliceKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.slice";
  checks::SliceWindow window = checks::checkSlice(op, attrs, operands, results);
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
  checks::AxisPieces pieces = checks::checkSplit(op, attrs, operands, results);
  const TensorRef &input = operands[0];

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
  size_t elementBytes = dtypeBytes(input.dtype);
  for (size_t k = 0; k < results.size(); ++k) {
    const TensorRef &result = results[k];
    copyStrided(
        op, ctx, result.shape, result.data, contiguousStrides(result.shape),
        bytesAt(const_cast<void *>(src), pieces.offsets[k], elementBytes),
        pieces.strides, elementBytes);
  }
}

void concatKernel(const AttrMap &attrs, const Tensors &operands,
                  const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.concat";
  checks::AxisPieces pieces = checks::checkConcat(op, attrs, operands, results);
  const TensorRef &result = results[0];

  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  size_t elementBytes = dtypeBytes(result.dtype);
  for (size_t k = 0; k < operands.size(); ++k) {
    const TensorRef &operand = operands[k];
    copyStrided(op, ctx, operand.shape,
                bytesAt(out.data(), pieces.offsets[k], elementBytes),
                pieces.strides, operand.data, contiguousStrides(operand.shape),
                elementBytes);
  }
  out.finish();
}

} // namespace zerosbp::runtime::gpu
