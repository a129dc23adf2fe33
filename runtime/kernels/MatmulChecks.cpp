//===- MatmulChecks.cpp - the checks of matmul and batch_matmul -----------===//

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

} // namespace zerosbp::runtime::checks
