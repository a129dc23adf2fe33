//===- KernelChecks.cpp - precondition checks every kernel shares ---------===//

#include "runtime/kernels/KernelChecks.h"

#include "runtime/core/Error.h"

#include <optional>

namespace zerosbp::runtime::checks {

void fail(std::string_view op, const std::string &message) {
  throw RuntimeError(std::string(op) + ": " + message);
}

std::string ValueMessage::about(int64_t value) const {
  return prefix + std::to_string(value) + suffix;
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

void expectScalar(std::string_view op, const TensorRef &tensor,
                  const char *what) {
  expectFloat(op, tensor, what);
  expectNumel(op, tensor, 1, what);
}

double countOf(std::string_view op, const AttrMap &attrs, int64_t local) {
  std::optional<int64_t> count = attrs.findInt("count");
  if (!count)
    return static_cast<double>(local);
  if (*count < 1)
    fail(op, "count " + std::to_string(*count) + " is not positive");
  return static_cast<double>(*count);
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

bool replaces(const TensorRef &result, const TensorRef &operand) {
  return result.data == operand.data && result.dtype == operand.dtype &&
         result.shape == operand.shape;
}

bool overlapsOtherThanReplaced(const TensorRef &result,
                               const Tensors &operands) {
  for (const TensorRef &operand : operands)
    if (overlaps(result, operand) && !replaces(result, operand))
      return true;
  return false;
}

const std::vector<int64_t> &perDim(std::string_view op, const AttrMap &attrs,
                                   const std::string &name, int64_t rank) {
  const std::vector<int64_t> &ints = attrs.getInts(name);
  if (static_cast<int64_t>(ints.size()) != rank)
    fail(op, "'" + name + "' has " + std::to_string(ints.size()) +
                 " entries for rank " + std::to_string(rank));
  return ints;
}

BlockPlace checkBlockPlace(std::string_view op, const AttrMap &attrs,
                           const std::vector<int64_t> &shape) {
  auto rank = static_cast<int64_t>(shape.size());
  BlockPlace place{shape, std::vector<int64_t>(shape.size(), 0)};
  // A 0-D block is its whole tensor.
  if (rank > 0 && attrs.has("global_shape"))
    place.global = perDim(op, attrs, "global_shape", rank);
  if (rank > 0 && attrs.has("shard_offsets"))
    place.offsets = perDim(op, attrs, "shard_offsets", rank);
  for (int64_t d = 0; d < rank; ++d)
    if (place.offsets[d] < 0 || place.global[d] < 0 ||
        place.offsets[d] + shape[d] > place.global[d])
      fail(op, "the block " + shapeString(shape) + " at " +
                   shapeString(place.offsets) +
                   " does not lie in the global shape " +
                   shapeString(place.global));
  return place;
}

int64_t offsetOf(const std::vector<int64_t> &index,
                 const std::vector<int64_t> &strides) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d)
    offset += index[d] * strides[d];
  return offset;
}

} // namespace zerosbp::runtime::checks
