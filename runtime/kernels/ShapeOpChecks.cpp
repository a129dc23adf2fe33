//===- ShapeOpChecks.cpp - the checks of the shape ops --------------------===//

#include "runtime/kernels/ShapeOpChecks.h"

#include "runtime/core/DType.h"

#include <cstring>
#include <utility>

namespace zerosbp::runtime::checks {

namespace {
/// One operand and a result of its element type: the ops that move one
/// tensor's elements.
void expectMove(std::string_view op, const Tensors &operands,
                const Tensors &results) {
  expectArity(op, operands, results, 1, 1);
  expectSameDType(op, results[0], operands[0], "result");
}
} // namespace

uint64_t fillBits(double value, DType type) {
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
  case DType::I8:
    bits = static_cast<uint8_t>(static_cast<int8_t>(value));
    break;
  }
  return bits;
}

void checkReshape(std::string_view op, const Tensors &operands,
                  const Tensors &results) {
  expectMove(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  expectNumel(op, result, input.numel(), "result");
}

PadWindow checkPad(std::string_view op, const AttrMap &attrs,
                   const Tensors &operands, const Tensors &results) {
  expectMove(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
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
  int64_t offset = offsetOf(low, contiguousStrides(shape));
  return {std::move(shape), offset};
}

TransposeView checkTranspose(std::string_view op, const AttrMap &attrs,
                             const Tensors &operands, const Tensors &results) {
  expectMove(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  int64_t rank = input.rank();
  const std::vector<int64_t> &permutation =
      perDim(op, attrs, "permutation", rank);
  std::vector<int64_t> inputStrides = contiguousStrides(input.shape);
  TransposeView view{std::vector<int64_t>(static_cast<size_t>(rank)),
                     std::vector<int64_t>(static_cast<size_t>(rank))};
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t from = permutation[d];
    if (from < 0 || from >= rank || seen[from])
      fail(op, "'permutation' is not a permutation of " + std::to_string(rank) +
                   " dims");
    seen[from] = true;
    view.shape[d] = input.shape[from];
    view.srcStrides[d] = inputStrides[from];
  }
  expectShape(op, result, view.shape, "result");
  return view;
}

SliceWindow checkSlice(std::string_view op, const AttrMap &attrs,
                       const Tensors &operands, const Tensors &results) {
  expectMove(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  int64_t rank = input.rank();
  const std::vector<int64_t> &offsets = perDim(op, attrs, "offsets", rank);
  const std::vector<int64_t> &sizes = perDim(op, attrs, "sizes", rank);
  std::vector<int64_t> steps(static_cast<size_t>(rank), 1);
  if (attrs.has("strides"))
    steps = perDim(op, attrs, "strides", rank);
  std::vector<int64_t> inputStrides = contiguousStrides(input.shape);
  std::vector<int64_t> srcStrides(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    bool inBounds = steps[d] >= 1 && offsets[d] >= 0 && sizes[d] >= 0 &&
                    (sizes[d] == 0 ? offsets[d] <= input.shape[d]
                                   : offsets[d] + (sizes[d] - 1) * steps[d] <
                                         input.shape[d]);
    if (!inBounds)
      fail(op, "the window of dim " + std::to_string(d) +
                   " does not fit in shape " + shapeString(input.shape));
    srcStrides[d] = inputStrides[d] * steps[d];
  }
  expectShape(op, result, sizes, "result");
  return {offsetOf(offsets, inputStrides), srcStrides};
}

AxisPieces checkSplit(std::string_view op, const AttrMap &attrs,
                      const Tensors &operands, const Tensors &results) {
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
  AxisPieces pieces{contiguousStrides(input.shape), {}};
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const TensorRef &result = results[k];
    expectSameDType(op, result, input, "result");
    std::vector<int64_t> shape = input.shape;
    shape[axis] = sizes[k];
    expectShape(op, result, shape, "result");
    pieces.offsets.push_back(start * pieces.strides[axis]);
    start += sizes[k];
  }
  return pieces;
}

AxisPieces checkConcat(std::string_view op, const AttrMap &attrs,
                       const Tensors &operands, const Tensors &results) {
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
  std::vector<int64_t> starts;
  for (const TensorRef &operand : operands) {
    expectSameDType(op, operand, result, "operand");
    std::vector<int64_t> expected = shape;
    expected[axis] = operand.rank() == rank ? operand.shape[axis] : 0;
    expectShape(op, operand, expected, "operand");
    starts.push_back(shape[axis]);
    shape[axis] += operand.shape[axis];
  }
  expectShape(op, result, shape, "result");
  AxisPieces pieces{contiguousStrides(shape), {}};
  for (int64_t start : starts)
    pieces.offsets.push_back(start * pieces.strides[axis]);
  return pieces;
}

} // namespace zerosbp::runtime::checks
