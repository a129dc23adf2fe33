//===- AttentionChecks.cpp - the checks of fused attention ----------------===//

#include "runtime/kernels/AttentionChecks.h"

#include <cmath>
#include <cstdio>
#include <variant>

namespace zerosbp::runtime::checks {

namespace {
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// `leading` followed by `tail`.
std::vector<int64_t> withTail(const std::vector<int64_t> &leading,
                              std::initializer_list<int64_t> tail) {
  std::vector<int64_t> shape = leading;
  shape.insert(shape.end(), tail);
  return shape;
}

/// The second-to-last dim of `shape`, or `fallback` when it has none: what
/// an expected shape names for a dim only the tensor itself decides.
int64_t secondToLast(const std::vector<int64_t> &shape, int64_t fallback) {
  return shape.size() >= 2 ? shape[shape.size() - 2] : fallback;
}

/// Checks q, k and v (and, through `leading`, the batch dims every other
/// tensor of the op shares) and reads the attributes.
AttentionLayout attentionLayout(std::string_view op, const AttrMap &attrs,
                                const TensorRef &q, const TensorRef &k,
                                const TensorRef &v,
                                std::vector<int64_t> &leading) {
  expectFloat(op, q, "q");
  expectSameDType(op, k, q, "k");
  expectSameDType(op, v, q, "v");
  int64_t rank = q.rank();
  if (rank < 3)
    fail(op, "q must have batch dims, queries and a head dim, got shape " +
                 shapeString(q.shape));
  leading.assign(q.shape.begin(), q.shape.end() - 2);
  AttentionLayout layout;
  layout.batch = 1;
  for (int64_t dim : leading)
    layout.batch *= dim;
  layout.queries = q.shape[rank - 2];
  layout.headDim = q.shape[rank - 1];
  layout.keys = secondToLast(k.shape, layout.queries);
  expectShape(op, k, withTail(leading, {layout.keys, layout.headDim}), "k");
  layout.valueDim = v.rank() >= 1 ? v.shape.back() : layout.headDim;
  expectShape(op, v, withTail(leading, {layout.keys, layout.valueDim}), "v");

  // The scale is read here, not through AttrMap::getFloat, so that a
  // missing one is named with the op like every other error.
  auto found = attrs.all().find("scale");
  if (found == attrs.all().end())
    fail(op, "attribute 'scale' is missing");
  double scale;
  if (const double *value = std::get_if<double>(&found->second))
    scale = *value;
  else if (const int64_t *value = std::get_if<int64_t>(&found->second))
    scale = static_cast<double>(*value);
  else
    fail(op, "attribute 'scale' is not a number");
  layout.scale = static_cast<float>(scale);
  if (!std::isfinite(layout.scale))
    fail(op, "scale must be a finite f32, got " + number(scale));

  layout.causal = attrs.flag("causal");
  if (layout.causal && layout.queries != layout.keys)
    fail(op, "causal needs as many queries as keys, got " +
                 std::to_string(layout.queries) + " and " +
                 std::to_string(layout.keys));
  return layout;
}

void expectF32(std::string_view op, const TensorRef &tensor, const char *what) {
  if (tensor.dtype != DType::F32)
    fail(op, std::string(what) + " has element type " +
                 dtypeName(tensor.dtype) + ", expected f32");
}

void expectLike(std::string_view op, const TensorRef &tensor,
                const TensorRef &like, const char *what) {
  expectSameDType(op, tensor, like, what);
  expectShape(op, tensor, like.shape, what);
}
} // namespace

AttentionLayout checkAttention(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands,
                               const Tensors &results) {
  expectArity(op, operands, results, 3, 2);
  std::vector<int64_t> leading;
  AttentionLayout layout = attentionLayout(op, attrs, operands[0], operands[1],
                                           operands[2], leading);
  const TensorRef &result = results[0], &lse = results[1];
  expectSameDType(op, result, operands[0], "result");
  expectShape(op, result, withTail(leading, {layout.queries, layout.valueDim}),
              "result");
  expectF32(op, lse, "lse");
  expectShape(op, lse, withTail(leading, {layout.queries}), "lse");
  return layout;
}

AttentionLayout checkAttentionGrad(std::string_view op, const AttrMap &attrs,
                                   const Tensors &operands,
                                   const Tensors &results) {
  expectArity(op, operands, results, 6, 3);
  const TensorRef &gradOutput = operands[0], &q = operands[1], &k = operands[2],
                  &v = operands[3], &result = operands[4], &lse = operands[5];
  std::vector<int64_t> leading;
  AttentionLayout layout = attentionLayout(op, attrs, q, k, v, leading);
  std::vector<int64_t> resultShape =
      withTail(leading, {layout.queries, layout.valueDim});
  expectSameDType(op, gradOutput, q, "grad_output");
  expectShape(op, gradOutput, resultShape, "grad_output");
  expectSameDType(op, result, q, "result");
  expectShape(op, result, resultShape, "result");
  expectF32(op, lse, "lse");
  expectShape(op, lse, withTail(leading, {layout.queries}), "lse");
  expectLike(op, results[0], q, "grad_q");
  expectLike(op, results[1], k, "grad_k");
  expectLike(op, results[2], v, "grad_v");
  return layout;
}

} // namespace zerosbp::runtime::checks
