//===- Matmul.cpp - matmul, batch_matmul and matmul_add through cuBLAS ----===//
//
// The CPU kernels' checks and shapes (Matmul.cpp), one
// cublasGemmStridedBatchedEx per call with f32 compute: no TF32, unless the
// context allows it (zero-run --allow-tf32) and both operands are f32. cuBLAS
// reads f16 and bf16 directly when both operands share the type, and writes
// f32 or the operands' type; other combinations, and a result that overlaps
// an operand, go through f32 copies. nn.matmul_add is cuBLAS's C with
// beta = 1: the addend is copied into the result first unless it is the
// result.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/MatmulChecks.h"

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <optional>

namespace zerosbp::runtime::gpu {

namespace {

void checkCublas(std::string_view op, cublasStatus_t status) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  (void)cudaGetLastError(); // What cuBLAS hit must not fail a later launch.
  fail(op, std::string("cuBLAS: ") + cublasGetStatusString(status));
}

/// A float tensor as cuBLAS reads it: itself, or an f32 copy.
class GemmInput {
public:
  GemmInput(std::string_view op, CudaContext &ctx, const TensorRef &tensor,
            DType type)
      : tensor_(tensor) {
    if (tensor.dtype == type)
      return;
    tensor_.dtype = type;
    scratch_.emplace(op, ctx, tensor_.bytes());
    tensor_.data = scratch_->data();
    launchConvert(op, ctx, tensor, tensor_);
  }
  const void *data() const { return tensor_.data; }

private:
  TensorRef tensor_;
  std::optional<DeviceScratch> scratch_;
};

int asInt(std::string_view op, int64_t value, const char *what) {
  if (value > INT_MAX)
    fail(op, std::string(what) + " " + std::to_string(value) +
                 " exceeds cuBLAS's int range");
  return static_cast<int>(value);
}

/// result = op(lhs) op(rhs) (+ operands[2] with `accumulate`), `batch`
/// times.
void runMatmul(std::string_view op, const AttrMap &attrs,
               const Tensors &operands, const Tensors &results, bool batched,
               CudaContext &ctx, bool accumulate = false) {
  checks::MatmulShape shape =
      accumulate ? checks::checkMatmulAdd(op, attrs, operands, results)
                 : checks::checkMatmul(op, attrs, operands, results, batched);
  const TensorRef &lhs = operands[0], &rhs = operands[1];
  const TensorRef &result = results[0];
  bool transA = shape.transposeLhs, transB = shape.transposeRhs;
  int64_t batch = shape.batch;

  int64_t m = shape.m, n = shape.n, k = shape.k;
  if (batch == 0 || m == 0 || n == 0)
    return;
  if (k == 0 && accumulate) { // An empty product: the addend.
    if (result.data != operands[2].data)
      copyDeviceBytes(op, ctx, result.data, operands[2].data, result.bytes());
    return;
  }
  if (k == 0) { // An empty sum: zeros, whose bits are 0 in every float type.
    checkCuda(op,
              cudaMemsetAsync(result.data, 0, result.bytes(), ctx.stream()));
    return;
  }

  // cuBLAS with f32 compute takes A and B of one type among f32, f16 and
  // bf16, and C of f32 or that type.
  bool sharedHalfType = lhs.dtype == rhs.dtype &&
                        (lhs.dtype == DType::F16 || lhs.dtype == DType::BF16);
  DType inputType = sharedHalfType ? lhs.dtype : DType::F32;
  GemmInput lhsValues(op, ctx, lhs, inputType),
      rhsValues(op, ctx, rhs, inputType);
  // The addend may be the result itself (checked): cuBLAS reads C before
  // it writes it.
  bool directOutput =
      (result.dtype == DType::F32 || result.dtype == inputType) &&
      !overlapsAny(result, {lhs, rhs});
  TensorRef output = result;
  std::optional<DeviceScratch> outputScratch;
  if (!directOutput) {
    output.dtype = DType::F32;
    outputScratch.emplace(op, ctx, output.bytes());
    output.data = outputScratch->data();
  }
  if (accumulate) {
    const TensorRef &addend = operands[2];
    if (output.dtype != addend.dtype)
      launchConvert(op, ctx, addend, output);
    else if (output.data != addend.data)
      copyDeviceBytes(op, ctx, output.data, addend.data, output.bytes());
  }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
  // gets B first, and the leading dims are the row-major row lengths.
  int lda = asInt(op, transA ? m : k, "leading dim");
  int ldb = asInt(op, transB ? k : n, "leading dim");
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  // TF32 (PyTorch's allow_tf32) for products of f32 operands only; f16,
  // bf16 and mixed operands are computed as without it.
  bool tf32 =
      ctx.allowTf32() && lhs.dtype == DType::F32 && rhs.dtype == DType::F32;
  cublasHandle_t handle = ctx.blas(op);
  checkCublas(op, cublasGemmStridedBatchedEx(
                      handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                      transA ? CUBLAS_OP_T : CUBLAS_OP_N, asInt(op, n, "dim"),
                      asInt(op, m, "dim"), asInt(op, k, "dim"), &alpha,
                      rhsValues.data(), cudaDataTypeOf(inputType), ldb, k * n,
                      lhsValues.data(), cudaDataTypeOf(inputType), lda, m * k,
                      &beta, output.data, cudaDataTypeOf(output.dtype),
                      asInt(op, n, "dim"), m * n, asInt(op, batch, "batch"),
                      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
  if (directOutput)
    return;
  if (result.dtype == DType::F32)
    copyDeviceBytes(op, ctx, result.data, output.data, result.bytes());
  else
    launchConvert(op, ctx, output, result);
}
} // namespace

void matmulKernel(const AttrMap &attrs, const Tensors &operands,
                  const Tensors &results, CudaContext &ctx) {
  runMatmul("nn.matmul", attrs, operands, results, /*batched=*/false, ctx);
}

void batchMatmulKernel(const AttrMap &attrs, const Tensors &operands,
                       const Tensors &results, CudaContext &ctx) {
  runMatmul("nn.batch_matmul", attrs, operands, results, /*batched=*/true, ctx);
}

void matmulAddKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  runMatmul("nn.matmul_add", attrs, operands, results, /*batched=*/false, ctx,
            /*accumulate=*/true);
}

} // namespace zerosbp::runtime::gpu
