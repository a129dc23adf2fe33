//===- ShapeOps.cpp - fill, reshape, pad, transpose, slice, split, concat -===//
//
// These move elements of any type as raw bytes; only fill looks at values.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

namespace {

/// The value of `fill` stored as one element of `type`, in `bytes`.
void encodeFill(double value, DType type, char *bytes) {
  switch (type) {
  case DType::F32: {
    auto v = static_cast<float>(value);
    std::memcpy(bytes, &v, sizeof(v));
    return;
  }
  case DType::F16: {
    uint16_t v = floatToHalf(static_cast<float>(value));
    std::memcpy(bytes, &v, sizeof(v));
    return;
  }
  case DType::BF16: {
    uint16_t v = floatToBf16(static_cast<float>(value));
    std::memcpy(bytes, &v, sizeof(v));
    return;
  }
  case DType::F64:
    std::memcpy(bytes, &value, sizeof(value));
    return;
  case DType::I64: {
    auto v = static_cast<int64_t>(value);
    std::memcpy(bytes, &v, sizeof(v));
    return;
  }
  case DType::I32: {
    auto v = static_cast<int32_t>(value);
    std::memcpy(bytes, &v, sizeof(v));
    return;
  }
  case DType::I1:
    bytes[0] = value != 0.0 ? 1 : 0;
    return;
  }
}
} // namespace

void fillKernel(const AttrMap &attrs, const Tensors &operands,
                const Tensors &results) {
  constexpr std::string_view op = "nn.fill";
  expectArity(op, operands, results, 0, 1);
  const TensorRef &result = results[0];
  // `loss_seed` only marks the seed of the backward pass.
  double value = attrs.getFloat("value");
  char element[8];
  encodeFill(value, result.dtype, element);
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
  constexpr std::string_view op = "nn.reshape";
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectSameDType(op, result, input, "result");
  expectNumel(op, result, input.numel(), "result");
  if (result.data != input.data)
    std::memmove(result.data, input.data, input.bytes());
}

void padKernel(const AttrMap &attrs, const Tensors &operands,
               const Tensors &results) {
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

  ByteOutput out(result, overlapsAny(result, operands));
  std::memset(out.data(), 0, result.bytes());
  std::vector<int64_t> strides = contiguousStrides(shape);
  size_t elementBytes = dtypeBytes(input.dtype);
  copyStrided(input.shape, out.data() + offsetOf(low, strides) * elementBytes,
              strides, static_cast<const char *>(input.data),
              contiguousStrides(input.shape), elementBytes);
  out.finish();
}

void transposeKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
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

  ByteOutput out(result, overlapsAny(result, operands));
  copyStrided(shape, out.data(), contiguousStrides(shape),
              static_cast<const char *>(input.data), srcStrides,
              dtypeBytes(input.dtype));
  out.finish();
}

void sliceKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results) {
  constexpr std::string_view op = "nn.slice";
  SliceWindow window = checkSlice(op, attrs, operands, results);
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
  const char *src = static_cast<const char *>(input.data);
  std::vector<char> copy;
  for (const TensorRef &result : results) {
    if (overlaps(result, input)) {
      copy.assign(src, src + input.bytes());
      src = copy.data();
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
    copyStrided(shape, static_cast<char *>(result.data),
                contiguousStrides(shape),
                src + offset * inputStrides[axis] * elementBytes, inputStrides,
                elementBytes);
    offset += sizes[k];
  }
}

void concatKernel(const AttrMap &attrs, const Tensors &operands,
                  const Tensors &results) {
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

  ByteOutput out(result, overlapsAny(result, operands));
  std::vector<int64_t> strides = contiguousStrides(shape);
  size_t elementBytes = dtypeBytes(result.dtype);
  int64_t offset = 0;
  for (const TensorRef &operand : operands) {
    copyStrided(operand.shape,
                out.data() + offset * strides[axis] * elementBytes, strides,
                static_cast<const char *>(operand.data),
                contiguousStrides(operand.shape), elementBytes);
    offset += operand.shape[axis];
  }
  out.finish();
}

} // namespace zerosbp::runtime::cpu
