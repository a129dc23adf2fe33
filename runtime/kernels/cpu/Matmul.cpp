//===- Matmul.cpp - matmul and batch_matmul through sgemm -----------------===//

#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

#include <cblas.h>

namespace zerosbp::runtime::cpu {

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

/// C (m x n) = op(A) (m x k) op(B) (k x n), `batch` times, all row-major and
/// packed.
void gemmBatch(int64_t batch, bool transA, bool transB, int64_t m, int64_t n,
               int64_t k, const float *a, const float *b, float *c) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::fill(c, c + batch * m * n, 0.0f);
    return;
  }
  int lda = static_cast<int>(transA ? m : k);
  int ldb = static_cast<int>(transB ? k : n);
  for (int64_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), 1.0f, a + i * m * k,
                lda, b + i * k * n, ldb, 0.0f, c + i * m * n,
                static_cast<int>(n));
}

void runMatmul(std::string_view op, const AttrMap &attrs,
               const Tensors &operands, const Tensors &results, bool batched) {
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

  FloatInput lhsValues(lhs), rhsValues(rhs);
  FloatOutput out(result, overlapsAny(result, operands));
  gemmBatch(batch, transA, transB, a.rows, b.cols, a.cols, lhsValues.data(),
            rhsValues.data(), out.data());
  out.finish();
}
} // namespace

void matmulKernel(const AttrMap &attrs, const Tensors &operands,
                  const Tensors &results) {
  runMatmul("nn.matmul", attrs, operands, results, /*batched=*/false);
}

void batchMatmulKernel(const AttrMap &attrs, const Tensors &operands,
                       const Tensors &results) {
  runMatmul("nn.batch_matmul", attrs, operands, results, /*batched=*/true);
}

} // namespace zerosbp::runtime::cpu
