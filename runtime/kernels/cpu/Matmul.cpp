//===- Matmul.cpp - the matmul ops through sgemm --------------------------===//
//
// nn.matmul and nn.batch_matmul, and the fused epilogues nn.matmul_bias,
// nn.matmul_bias_gelu and nn.matmul_add: z = op(lhs) op(rhs) by the same
// sgemm, then the bias or addend added in f32 and nn.gelu's loop on the f32
// z, so that in f32 they give the unfused kernels' bits; z and the result
// are rounded once each.
//

#include "runtime/kernels/MatmulChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

#include <cblas.h>

#include <optional>

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

/// z (m x n) = op(lhs) op(rhs) + bias and, with `gelu`, y = gelu(z).
void runMatmulEpilogue(std::string_view op, const AttrMap &attrs,
                       const Tensors &operands, const Tensors &results,
                       bool gelu) {
  checks::MatmulShape shape =
      checks::checkMatmulEpilogue(op, attrs, operands, results, gelu);
  int64_t m = shape.m, n = shape.n;
  FloatInput lhs(operands[0]), rhs(operands[1]), bias(operands[2]);
  // No result overlaps an operand (checked): each is written in place when
  // it is f32.
  FloatOutput z(results[gelu ? 1 : 0], /*separate=*/false);
  gemmBatch(1, shape.transposeLhs, shape.transposeRhs, m, n, shape.k,
            lhs.data(), rhs.data(), z.data());
  std::optional<FloatOutput> y;
  if (gelu)
    y.emplace(results[0], /*separate=*/false);
  const float *b = bias.data();
  for (int64_t i = 0; i < m; ++i) {
    float *row = z.data() + i * n;
    // nn.bias_add's sum, a + b in f32.
    for (int64_t j = 0; j < n; ++j)
      row[j] = row[j] + b[j];
    if (gelu)
      geluValues(row, y->data() + i * n, n);
  }
  z.finish();
  if (gelu)
    y->finish();
}

/// result = op(lhs) op(rhs) + addend, the result possibly over the addend.
void runMatmulAdd(std::string_view op, const AttrMap &attrs,
                  const Tensors &operands, const Tensors &results) {
  checks::MatmulShape shape =
      checks::checkMatmulAdd(op, attrs, operands, results);
  FloatInput lhs(operands[0]), rhs(operands[1]), addend(operands[2]);
  // Over the addend the product goes to a separate buffer first.
  FloatOutput out(results[0], overlapsAny(results[0], operands));
  gemmBatch(1, shape.transposeLhs, shape.transposeRhs, shape.m, shape.n,
            shape.k, lhs.data(), rhs.data(), out.data());
  // nn.add's sum, a + b in f32.
  const float *c = addend.data();
  float *z = out.data();
  for (int64_t i = 0, size = shape.m * shape.n; i < size; ++i)
    z[i] = c[i] + z[i];
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

void matmulBiasKernel(const AttrMap &attrs, const Tensors &operands,
                      const Tensors &results) {
  runMatmulEpilogue("nn.matmul_bias", attrs, operands, results,
                    /*gelu=*/false);
}

void matmulBiasGeluKernel(const AttrMap &attrs, const Tensors &operands,
                          const Tensors &results) {
  runMatmulEpilogue("nn.matmul_bias_gelu", attrs, operands, results,
                    /*gelu=*/true);
}

void matmulAddKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
  runMatmulAdd("nn.matmul_add", attrs, operands, results);
}

} // namespace zerosbp::runtime::cpu
