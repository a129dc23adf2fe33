//===- MatmulChecks.cpp - the checks of the matmul ops --------------------===//

#include "runtime/kernels/MatmulChecks.h"

#include <algorithm>

namespace zerosbp::runtime::checks {

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

/// lhs of f32, f16 or bf16: the fused matmul ops' types (expectFloat also
/// lets f64 through).
void expectFusedFloat(std::string_view op, const TensorRef &lhs) {
  if (lhs.dtype == DType::F64)
    fail(op, "lhs has element type f64, expected f32, f16 or bf16");
  expectFloat(op, lhs, "lhs");
}

/// The one 2-D product of a fused matmul op: op(lhs) m x k, op(rhs) k x n.
MatmulShape fusedProduct(std::string_view op, const AttrMap &attrs,
                         const TensorRef &lhs, const TensorRef &rhs) {
  bool transA = attrs.flag("transpose_lhs");
  bool transB = attrs.flag("transpose_rhs");
  if (lhs.rank() != 2 || rhs.rank() != 2)
    fail(op, "operand shapes " + shapeString(lhs.shape) + " and " +
                 shapeString(rhs.shape) + " have the wrong ranks");
  MatrixDims a = opDims(lhs.shape, transA), b = opDims(rhs.shape, transB);
  if (a.cols != b.rows)
    fail(op, "contracting dims of " + shapeString(lhs.shape) + " and " +
                 shapeString(rhs.shape) + " differ");
  return {1, a.rows, b.cols, a.cols, transA, transB};
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

MatmulShape checkMatmulEpilogue(std::string_view op, const AttrMap &attrs,
                                const Tensors &operands, const Tensors &results,
                                bool gelu) {
  expectArity(op, operands, results, 3, gelu ? 2 : 1);
  const TensorRef &lhs = operands[0], &rhs = operands[1], &bias = operands[2];
  expectFusedFloat(op, lhs);
  expectSameDType(op, rhs, lhs, "rhs");
  expectSameDType(op, bias, lhs, "bias");
  expectSameDType(op, results[0], lhs, "result");
  if (gelu)
    expectSameDType(op, results[1], lhs, "pre_activation");
  MatmulShape shape = fusedProduct(op, attrs, lhs, rhs);
  expectShape(op, bias, {shape.n}, "bias");
  expectShape(op, results[0], {shape.m, shape.n}, "result");
  if (gelu)
    expectShape(op, results[1], {shape.m, shape.n}, "pre_activation");
  for (size_t r = 0; r < results.size(); ++r) {
    const char *name = r == 0 ? "result" : "pre_activation";
    if (overlapsAny(results[r], operands))
      fail(op, std::string(name) + " overlaps an operand");
  }
  if (gelu && overlaps(results[0], results[1]))
    fail(op, "result overlaps pre_activation");
  return shape;
}

MatmulShape checkMatmulAdd(std::string_view op, const AttrMap &attrs,
                           const Tensors &operands, const Tensors &results) {
  expectArity(op, operands, results, 3, 1);
  const TensorRef &lhs = operands[0], &rhs = operands[1], &addend = operands[2],
                  &result = results[0];
  expectFusedFloat(op, lhs);
  expectSameDType(op, rhs, lhs, "rhs");
  expectSameDType(op, addend, lhs, "addend");
  expectSameDType(op, result, lhs, "result");
  MatmulShape shape = fusedProduct(op, attrs, lhs, rhs);
  expectShape(op, addend, {shape.m, shape.n}, "addend");
  expectShape(op, result, {shape.m, shape.n}, "result");
  if (overlaps(result, lhs) || overlaps(result, rhs))
    fail(op, "result overlaps lhs or rhs");
  if (overlaps(result, addend) && result.data != addend.data)
    fail(op, "result overlaps the addend without being it");
  return shape;
}

} // namespace zerosbp::runtime::checks
