//===- Matmul.cpp - matmul and batch_matmul through sgemm -----------------===//

#include "runtime/kernels/MatmulChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

#include <cblas.h>

namespace zerosbp::runtime::cpu {

namespace {
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
  checks::MatmulShape shape =
      checks::checkMatmul(op, attrs, operands, results, batched);
  const TensorRef &lhs = operands[0], &rhs = operands[1];
  const TensorRef &result = results[0];

  FloatInput lhsValues(lhs), rhsValues(rhs);
  FloatOutput out(result, overlapsAny(result, operands));
  gemmBatch(shape.batch, shape.transposeLhs, shape.transposeRhs, shape.m,
            shape.n, shape.k, lhsValues.data(), rhsValues.data(), out.data());
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
