//===- KernelChecks.cpp - precondition checks every kernel shares ---------===//

#include "runtime/kernels/KernelChecks.h"

#include "runtime/core/Error.h"

#include <algorithm>

namespace zerosbp::runtime::checks {

void fail(std::string_view op, const std::string &message) {
  throw RuntimeError(std::string(op) + ": " + message);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

void expectArity(std::string_view op, const Tensors &operands,
                 const Tensors &results, size_t numOperands,
                 size_t numResults) {
  if (operands.size() != numOperands || results.size() != numResults)
    fail(op, "expects " + std::to_string(numOperands) + " operands and " +
                 std::to_string(numResults) + " results, got " +
                 std::to_string(operands.size()) + " and " +
                 std::to_string(results.size()));
}

void expectFloat(std::string_view op, const TensorRef &tensor,
                 const char *what) {
  if (!isFloat(tensor.dtype))
    fail(op, std::string(what) + " has element type " +
                 dtypeName(tensor.dtype) + ", expected f32, f16 or bf16");
}

void expectIndex(std::string_view op, const TensorRef &tensor,
                 const char *what) {
  if (tensor.dtype != DType::I32 && tensor.dtype != DType::I64)
    fail(op, std::string(what) + " has element type " +
                 dtypeName(tensor.dtype) + ", expected i32 or i64");
}

void expectShape(std::string_view op, const TensorRef &tensor,
                 const std::vector<int64_t> &shape, const char *what) {
  if (tensor.shape != shape)
    fail(op, std::string(what) + " has shape " + shapeString(tensor.shape) +
                 ", expected " + shapeString(shape));
}

void expectSameDType(std::string_view op, const TensorRef &tensor,
                     const TensorRef &like, const char *what) {
  if (tensor.dtype != like.dtype)
    fail(op, std::string(what) + " has element type " +
                 dtypeName(tensor.dtype) + ", expected " +
                 dtypeName(like.dtype));
}

void expectNumel(std::string_view op, const TensorRef &tensor, int64_t numel,
                 const char *what) {
  if (tensor.numel() != numel)
    fail(op, std::string(what) + " has " + std::to_string(tensor.numel()) +
                 " elements, expected " + std::to_string(numel));
}

int64_t normalizeAxis(std::string_view op, int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    fail(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
  return normalized;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i > 1; --i)
    strides[i - 2] = strides[i - 1] * shape[i - 1];
  return strides;
}

bool overlaps(const TensorRef &a, const TensorRef &b) {
  size_t aBytes = a.bytes(), bBytes = b.bytes();
  if (!aBytes || !bBytes || !a.data || !b.data)
    return false;
  auto aBegin = reinterpret_cast<uintptr_t>(a.data);
  auto bBegin = reinterpret_cast<uintptr_t>(b.data);
  return aBegin < bBegin + bBytes && bBegin < aBegin + aBytes;
}

bool overlapsAny(const TensorRef &result, const Tensors &operands) {
  for (const TensorRef &operand : operands)
    if (overlaps(result, operand))
      return true;
  return false;
}

/// Checks that `ints` has one entry per dim of `rank`.
const std::vector<int64_t> &perDim(std::string_view op, const AttrMap &attrs,
                                   const std::string &name, int64_t rank) {
  const std::vector<int64_t> &ints = attrs.getInts(name);
  if (static_cast<int64_t>(ints.size()) != rank)
    fail(op, "'" + name + "' has " + std::to_string(ints.size()) +
                 " entries for rank " + std::to_string(rank));
  return ints;
}

int64_t offsetOf(const std::vector<int64_t> &index,
                 const std::vector<int64_t> &strides) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d)
    offset += index[d] * strides[d];
  return offset;
}

namespace {
/// The (rows, cols) of op(x) for the last two dims of `shape`.
struct MatrixDims {
  int64_t rows;
  int64_t cols;
};

MatrixDims opDims(const std::vector<int64_t> &shape, bool transposed) {
  int64_t rows = shape[shape.size() - 2], cols = shape[shape.size() - 1];
  return transposed ? MatrixDims{cols, rows} : MatrixDims{rows, cols};
}

} // namespace

MatmulShape checkMatmul(std::string_view op, const AttrMap &attrs,
                        const Tensors &operands, const Tensors &results,
                        bool batched) {
  expectArity(op, operands, results, 2, 1);
  const TensorRef &lhs = operands[0], &rhs = operands[1];
  const TensorRef &result = results[0];
  expectFloat(op, lhs, "lhs");
  expectFloat(op, rhs, "rhs");
  expectFloat(op, result, "result");
  bool transA = attrs.flag("transpose_lhs");
  bool transB = attrs.flag("transpose_rhs");
  int64_t rank = lhs.rank();
  bool ranksOk =
      batched ? rank >= 3 && rhs.rank() == rank : rank == 2 && rhs.rank() == 2;
  if (!ranksOk)
    fail(op, "operand shapes " + shapeString(lhs.shape) + " and " +
                 shapeString(rhs.shape) + " have the wrong ranks");
  std::vector<int64_t> batchDims(lhs.shape.begin(), lhs.shape.end() - 2);
  if (!std::equal(batchDims.begin(), batchDims.end(), rhs.shape.begin()))
    fail(op, "batch dims of " + shapeString(lhs.shape) + " and " +
                 shapeString(rhs.shape) + " differ");
  MatrixDims a = opDims(lhs.shape, transA), b = opDims(rhs.shape, transB);
  if (a.cols != b.rows)
    fail(op, "contracting dims of " + shapeString(lhs.shape) + " and " +
                 shapeString(rhs.shape) + " differ");
  std::vector<int64_t> shape = batchDims;
  shape.push_back(a.rows);
  shape.push_back(b.cols);
  expectShape(op, result, shape, "result");
  int64_t batch = 1;
  for (int64_t dim : batchDims)
    batch *= dim;
  return {batch, a.rows, b.cols, a.cols, transA, transB};
}

SliceWindow checkSlice(std::string_view op, const AttrMap &attrs,
                       const Tensors &operands, const Tensors &results) {
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectSameDType(op, result, input, "result");
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

} // namespace zerosbp::runtime::checks
