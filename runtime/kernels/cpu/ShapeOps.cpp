//===- ShapeOps.cpp - fill, reshape, pad, transpose, slice, split, concat -===//
//
// These move elements of any type as raw bytes; only fill looks at values.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/ShapeOpChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

void fillKernel(const AttrMap &attrs, const Tensors &operands,
                const Tensors &results) {
  constexpr std::string_view op = "nn.fill";
  expectArity(op, operands, results, 0, 1);
  const TensorRef &result = results[0];
  // `loss_seed` only marks the seed of the backward pass.
  uint64_t encoded = checks::fillBits(attrs.getFloat("value"), result.dtype);
  char element[8];
  std::memcpy(element, &encoded, sizeof(encoded));
  size_t elementBytes = dtypeBytes(result.dtype);
  int64_t numel = result.numel();
  char *out = static_cast<char *>(result.data);
  switch (elementBytes) {
  case 4: {
    uint32_t bits;
    std::memcpy(&bits, element, 4);
    std::fill(reinterpret_cast<uint32_t *>(out),
              reinterpret_cast<uint32_t *>(out) + numel, bits);
    return;
  }
  case 2: {
    uint16_t bits;
    std::memcpy(&bits, element, 2);
    std::fill(reinterpret_cast<uint16_t *>(out),
              reinterpret_cast<uint16_t *>(out) + numel, bits);
    return;
  }
  default:
    for (int64_t i = 0; i < numel; ++i)
      std::memcpy(out + i * elementBytes, element, elementBytes);
  }
}

void reshapeKernel(const AttrMap &, const Tensors &operands,
                   const Tensors &results) {
  checks::checkReshape("nn.reshape", operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (result.data != input.data)
    std::memmove(result.data, input.data, input.bytes());
}

void padKernel(const AttrMap &attrs, const Tensors &operands,
               const Tensors &results) {
  constexpr std::string_view op = "nn.pad";
  checks::PadWindow window = checks::checkPad(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];

  ByteOutput out(result, overlapsAny(result, operands));
  std::memset(out.data(), 0, result.bytes());
  size_t elementBytes = dtypeBytes(input.dtype);
  copyStrided(input.shape, out.data() + window.offset * elementBytes,
              contiguousStrides(window.shape),
              static_cast<const char *>(input.data),
              contiguousStrides(input.shape), elementBytes);
  out.finish();
}

void transposeKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
  constexpr std::string_view op = "nn.transpose";
  checks::TransposeView view =
      checks::checkTranspose(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];

  ByteOutput out(result, overlapsAny(result, operands));
  copyStrided(view.shape, out.data(), contiguousStrides(view.shape),
              static_cast<const char *>(input.data), view.srcStrides,
              dtypeBytes(input.dtype));
  out.finish();
}

void sliceKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results) {
  constexpr std::string_view op = "nn.slice";
  checks::SliceWindow window = checks::checkSlice(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];

  size_t elementBytes = dtypeBytes(input.dtype);
  ByteOutput out(result, overlapsAny(result, operands));
  copyStrided(result.shape, out.data(), contiguousStrides(result.shape),
              static_cast<const char *>(input.data) +
                  window.offset * elementBytes,
              window.strides, elementBytes);
  out.finish();
}

void splitKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results) {
  checks::AxisPieces pieces =
      checks::checkSplit("nn.split", attrs, operands, results);
  const TensorRef &input = operands[0];

  // A result in the input's bytes would clobber what later results read.
  const char *src = static_cast<const char *>(input.data);
  std::vector<char> copy;
  for (const TensorRef &result : results) {
    if (overlaps(result, input)) {
      copy.assign(src, src + input.bytes());
      src = copy.data();
      break;
    }
  }
  size_t elementBytes = dtypeBytes(input.dtype);
  for (size_t k = 0; k < results.size(); ++k) {
    const TensorRef &result = results[k];
    copyStrided(result.shape, static_cast<char *>(result.data),
                contiguousStrides(result.shape),
                src + pieces.offsets[k] * elementBytes, pieces.strides,
                elementBytes);
  }
}

void concatKernel(const AttrMap &attrs, const Tensors &operands,
                  const Tensors &results) {
  checks::AxisPieces pieces =
      checks::checkConcat("nn.concat", attrs, operands, results);
  const TensorRef &result = results[0];

  ByteOutput out(result, overlapsAny(result, operands));
  size_t elementBytes = dtypeBytes(result.dtype);
  for (size_t k = 0; k < operands.size(); ++k) {
    const TensorRef &operand = operands[k];
    copyStrided(operand.shape, out.data() + pieces.offsets[k] * elementBytes,
                pieces.strides, static_cast<const char *>(operand.data),
                contiguousStrides(operand.shape), elementBytes);
  }
  out.finish();
}

} // namespace zerosbp::runtime::cpu
