//===- MatmulEpilogue.cpp - matmul_bias and matmul_bias_gelu on cuBLASLt --===//
//
// The CPU kernels' checks (MatmulChecks.h), then one cublasLtMatmul with the
// bias (CUBLASLT_EPILOGUE_BIAS), or the bias and GELU
// (CUBLASLT_EPILOGUE_GELU_AUX_BIAS, whose aux output is pre_activation), in
// the product's epilogue. Compute and scale are f32 (TF32 for f32 operands
// only where the context allows it, as for nn.matmul); the bias has the
// operands' type, which is what cublasLt.h asks for (the output's type);
// the bias is added to the f32 sum and GELU applied to that f32 z, and z and
// the result are each rounded once. cuBLASLt's GELU is its own evaluation
// of the tanh form, not the CPU kernel's bits.
//
// Row-major operands as in Matmul.cpp: cuBLASLt computes the column-major
// n x m D = op(rhs)^T op(lhs)^T, so the bias (length n) runs along D's rows
// and is added to every row of the row-major result. The aux output's
// leading dim must be a multiple of 8: for other n, cuBLASLt writes it to
// padded scratch, copied into pre_activation after. Split-K partial sums
// are kept in f32 (CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE or none).
//
// cublasLtMatmulAlgoGetHeuristic chooses the algorithm once per shape,
// type, epilogue and pointer alignment, the first time a plan runs it; the
// context keeps the choice, and cuBLASLt shares the cuBLAS handle's
// workspace (the calls are ordered on one stream). Where cuBLASLt has no
// algorithm, the op runs as cublasGemmEx into f32 and the elementwise
// bias_add, gelu and cast kernels, and says so once on stderr; an empty
// sum (k = 0) takes that path too.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/MatmulChecks.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <climits>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace zerosbp::runtime::gpu {

namespace {

/// Whether the kernels may use cuBLASLt (tests turn it off to run the
/// fallback).
bool cublasLtAllowed = true;

void checkCublas(std::string_view op, const char *library,
                 cublasStatus_t status) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  (void)cudaGetLastError(); // What cuBLAS hit must not fail a later launch.
  fail(op, std::string(library) + ": " + cublasGetStatusString(status));
}

void checkLt(std::string_view op, cublasStatus_t status) {
  checkCublas(op, "cuBLASLt", status);
}

int asInt(std::string_view op, int64_t value, const char *what) {
  if (value > INT_MAX)
    fail(op, std::string(what) + " " + std::to_string(value) +
                 " exceeds cuBLAS's int range");
  return static_cast<int>(value);
}

/// The largest power of two, up to 256 (what cuBLASLt assumes unless told),
/// that divides the address.
uint32_t alignmentOf(const void *pointer) {
  auto address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

/// One call of an epilogue op, as cuBLASLt sees it.
struct Problem {
  std::string_view op;
  checks::MatmulShape shape;
  DType type;
  bool gelu;
  bool tf32;
  const void *lhs;
  const void *rhs;
  const void *bias;
  void *out; // The result, m x n row-major.
  void *aux; // With gelu: z, m rows of auxLd elements.
  int64_t auxLd;
};

/// What an algorithm is chosen for: the heuristic reads the shapes, types,
/// epilogue and the alignment of every pointer.
struct PlanKey {
  DType type;
  bool gelu, tf32, transA, transB;
  int64_t m, n, k, auxLd;
  uint32_t alignLhs, alignRhs, alignOut, alignBias, alignAux;

  auto tied() const {
    return std::tie(type, gelu, tf32, transA, transB, m, n, k, auxLd, alignLhs,
                    alignRhs, alignOut, alignBias, alignAux);
  }
  bool operator<(const PlanKey &other) const { return tied() < other.tied(); }
};

PlanKey keyOf(const Problem &p) {
  return {p.type,
          p.gelu,
          p.tf32,
          p.shape.transposeLhs,
          p.shape.transposeRhs,
          p.shape.m,
          p.shape.n,
          p.shape.k,
          p.gelu ? p.auxLd : 0,
          alignmentOf(p.lhs),
          alignmentOf(p.rhs),
          alignmentOf(p.out),
          alignmentOf(p.bias),
          p.gelu ? alignmentOf(p.aux) : 0};
}

/// The descriptors and the chosen algorithm of one key. Without an
/// algorithm (`found` false) the op takes the fallback.
struct EpiloguePlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo = {};
  bool found = false;

  EpiloguePlan() = default;
  EpiloguePlan(const EpiloguePlan &) = delete;
  EpiloguePlan &operator=(const EpiloguePlan &) = delete;
  ~EpiloguePlan() {
    for (cublasLtMatrixLayout_t layout : {a, b, d})
      if (layout)
        (void)cublasLtMatrixLayoutDestroy(layout);
    if (desc)
      (void)cublasLtMatmulDescDestroy(desc);
  }
};

/// The context's cuBLASLt handle and its plans.
class EpilogueCache final : public CudaContextCache {
public:
  ~EpilogueCache() override {
    plans.clear();
    if (handle)
      (void)cublasLtDestroy(handle);
  }
  cublasLtHandle_t handle = nullptr;
  std::map<PlanKey, std::unique_ptr<EpiloguePlan>> plans;
};

EpilogueCache &epilogueCache(std::string_view op, CudaContext &ctx) {
  std::unique_ptr<CudaContextCache> &slot = ctx.matmulEpilogueCache();
  if (!slot) {
    auto cache = std::make_unique<EpilogueCache>();
    cublasStatus_t status = cublasLtCreate(&cache->handle);
    if (status != CUBLAS_STATUS_SUCCESS) {
      cache->handle = nullptr;
      (void)cudaGetLastError();
      fail(op, std::string("cannot create a cuBLASLt handle: ") +
                   cublasGetStatusString(status));
    }
    slot = std::move(cache);
  }
  // Only this file fills the slot.
  return static_cast<EpilogueCache &>(*slot);
}

template <typename T>
void setAttribute(std::string_view op, cublasLtMatmulDesc_t desc,
                  cublasLtMatmulDescAttributes_t attribute, const T &value) {
  checkLt(op, cublasLtMatmulDescSetAttribute(desc, attribute, &value,
                                             sizeof(value)));
}

template <typename T>
void setPreference(std::string_view op, cublasLtMatmulPreference_t preference,
                   cublasLtMatmulPreferenceAttributes_t attribute,
                   const T &value) {
  checkLt(op, cublasLtMatmulPreferenceSetAttribute(preference, attribute,
                                                   &value, sizeof(value)));
}

/// The pointers of this call, set on the plan's descriptor: the heuristic
/// reads their alignment, the matmul the pointers.
void setPointers(const Problem &p, cublasLtMatmulDesc_t desc) {
  setAttribute(p.op, desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias);
  if (p.gelu)
    setAttribute(p.op, desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, p.aux);
}

std::string problemText(const Problem &p) {
  const checks::MatmulShape &s = p.shape;
  return std::string(dtypeName(p.type)) + " m=" + std::to_string(s.m) +
         " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
         " transposes " + (s.transposeLhs ? "T" : "N") +
         (s.transposeRhs ? "T" : "N") +
         (p.gelu ? " with GELU_AUX_BIAS" : " with BIAS");
}

/// Descriptors for the problem, and the heuristic's algorithm if it has one.
/// Says on stderr when it has none.
std::unique_ptr<EpiloguePlan> makePlan(const Problem &p, EpilogueCache &cache) {
  std::string_view op = p.op;
  const checks::MatmulShape &s = p.shape;
  auto plan = std::make_unique<EpiloguePlan>();
  cudaDataType_t type = cudaDataTypeOf(p.type);
  checkLt(op, cublasLtMatmulDescCreate(&plan->desc,
                                       p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                              : CUBLAS_COMPUTE_32F,
                                       CUDA_R_32F));
  // cuBLASLt's A is the rhs and its B the lhs (column-major D = op(rhs)^T
  // op(lhs)^T).
  int32_t transA = s.transposeRhs ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t transB = s.transposeLhs ? CUBLAS_OP_T : CUBLAS_OP_N;
  setAttribute(op, plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, transA);
  setAttribute(op, plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, transB);
  uint32_t epilogue =
      p.gelu ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS;
  setAttribute(op, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  int32_t biasType = type;
  setAttribute(op, plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, biasType);
  if (p.gelu)
    setAttribute(op, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, p.auxLd);
  setPointers(p, plan->desc);

  // Stored column-major: the rhs is n x k (k x n transposed), the lhs k x m
  // (m x k transposed), D n x m; leading dims are the row-major row lengths.
  auto layout = [&](cublasLtMatrixLayout_t *out, int64_t rows, int64_t cols) {
    checkLt(op, cublasLtMatrixLayoutCreate(out, type, rows, cols, rows));
  };
  if (s.transposeRhs)
    layout(&plan->a, s.k, s.n);
  else
    layout(&plan->a, s.n, s.k);
  if (s.transposeLhs)
    layout(&plan->b, s.m, s.k);
  else
    layout(&plan->b, s.k, s.m);
  layout(&plan->d, s.n, s.m);

  cublasLtMatmulPreference_t preference = nullptr;
  checkLt(op, cublasLtMatmulPreferenceCreate(&preference));
  cublasLtMatmulHeuristicResult_t result = {};
  int returned = 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  try {
    setPreference(op, preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                  uint64_t{CudaContext::kBlasWorkspaceBytes});
    // Partial sums of a split k in f32, never in the output's type.
    setPreference(op, preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                  uint32_t{CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE});
    setPreference(op, preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                  alignmentOf(p.rhs));
    setPreference(op, preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                  alignmentOf(p.lhs));
    setPreference(op, preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                  alignmentOf(p.out));
    setPreference(op, preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                  alignmentOf(p.out));
    status = cublasLtMatmulAlgoGetHeuristic(cache.handle, plan->desc, plan->a,
                                            plan->b, plan->d, plan->d,
                                            preference, 1, &result, &returned);
  } catch (...) {
    (void)cublasLtMatmulPreferenceDestroy(preference);
    throw;
  }
  (void)cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_SUCCESS && returned > 0 &&
      result.state == CUBLAS_STATUS_SUCCESS) {
    plan->algo = result.algo;
    plan->found = true;
    return plan;
  }
  (void)cudaGetLastError();
  cublasStatus_t why = status;
  if (why == CUBLAS_STATUS_SUCCESS)
    why = returned > 0 ? result.state : CUBLAS_STATUS_NOT_SUPPORTED;
  std::cerr << op << ": cuBLASLt has no algorithm for " << problemText(p)
            << " (" << cublasGetStatusString(why)
            << "); this shape runs as cublasGemmEx and elementwise bias"
            << (p.gelu ? " and GELU" : "") << " kernels" << std::endl;
  return plan;
}

/// The op without cuBLASLt: z = op(lhs) op(rhs) in f32 (zeros for k = 0),
/// nn.bias_add in place, then the results from the f32 z as nn.gelu and
/// nn.cast compute them.
void runFallback(const Problem &p, const Tensors &operands,
                 const Tensors &results, CudaContext &ctx) {
  std::string_view op = p.op;
  const checks::MatmulShape &s = p.shape;
  const TensorRef &zResult = results[p.gelu ? 1 : 0];
  // z in f32: the result itself when that is f32, else scratch.
  TensorRef z = zResult;
  std::optional<DeviceScratch> zScratch;
  if (p.type != DType::F32) {
    z.dtype = DType::F32;
    zScratch.emplace(op, ctx, z.bytes());
    z.data = zScratch->data();
  }
  if (s.k == 0) {
    checkCuda(op, cudaMemsetAsync(z.data, 0, z.bytes(), ctx.stream()));
  } else {
    int lda = asInt(op, s.transposeLhs ? s.m : s.k, "leading dim");
    int ldb = asInt(op, s.transposeRhs ? s.k : s.n, "leading dim");
    const float alpha = 1.0f, beta = 0.0f;
    checkCublas(
        op, "cuBLAS",
        cublasGemmEx(ctx.blas(op), s.transposeRhs ? CUBLAS_OP_T : CUBLAS_OP_N,
                     s.transposeLhs ? CUBLAS_OP_T : CUBLAS_OP_N,
                     asInt(op, s.n, "dim"), asInt(op, s.m, "dim"),
                     asInt(op, s.k, "dim"), &alpha, p.rhs,
                     cudaDataTypeOf(p.type), ldb, p.lhs, cudaDataTypeOf(p.type),
                     lda, &beta, z.data, CUDA_R_32F, asInt(op, s.n, "dim"),
                     p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT));
  }
  // The elementwise kernels name themselves in their errors; ours go first.
  try {
    biasAddKernel({}, {z, operands[2]}, {z}, ctx);
    if (p.gelu)
      geluKernel({}, {z}, {results[0]}, ctx);
  } catch (const RuntimeError &error) {
    fail(op, error.what());
  }
  if (zScratch)
    launchConvert(op, ctx, z, zResult);
}

void runMatmulEpilogue(std::string_view op, const AttrMap &attrs,
                       const Tensors &operands, const Tensors &results,
                       bool gelu, CudaContext &ctx) {
  checks::MatmulShape shape =
      checks::checkMatmulEpilogue(op, attrs, operands, results, gelu);
  if (shape.m == 0 || shape.n == 0)
    return;
  DType type = operands[0].dtype;
  // The cuBLAS handle and its workspace first: on a machine without a
  // device this is the call that fails, as for nn.matmul.
  void *workspace = ctx.blasWorkspace(op);
  Problem p = {op,
               shape,
               type,
               gelu,
               ctx.allowTf32() && type == DType::F32,
               operands[0].data,
               operands[1].data,
               operands[2].data,
               results[0].data,
               gelu ? results[1].data : nullptr,
               shape.n};
  if (shape.k == 0 || !cublasLtAllowed) {
    runFallback(p, operands, results, ctx);
    return;
  }
  // GELU's aux output needs a leading dim that is a multiple of 8.
  size_t elementBytes = dtypeBytes(type);
  std::optional<DeviceScratch> auxScratch;
  if (gelu && shape.n % 8 != 0) {
    p.auxLd = (shape.n + 7) / 8 * 8;
    auxScratch.emplace(op, ctx,
                       static_cast<size_t>(shape.m * p.auxLd) * elementBytes);
    p.aux = auxScratch->data();
  }

  EpilogueCache &cache = epilogueCache(op, ctx);
  PlanKey key = keyOf(p);
  auto found = cache.plans.find(key);
  if (found == cache.plans.end())
    found = cache.plans.emplace(key, makePlan(p, cache)).first;
  EpiloguePlan &plan = *found->second;
  if (!plan.found) {
    runFallback(p, operands, results, ctx);
    return;
  }
  setPointers(p, plan.desc);
  const float alpha = 1.0f, beta = 0.0f;
  checkLt(op, cublasLtMatmul(cache.handle, plan.desc, &alpha, p.rhs, plan.a,
                             p.lhs, plan.b, &beta, p.out, plan.d, p.out, plan.d,
                             &plan.algo, workspace,
                             CudaContext::kBlasWorkspaceBytes, ctx.stream()));
  if (auxScratch)
    checkCuda(op, cudaMemcpy2DAsync(results[1].data, shape.n * elementBytes,
                                    p.aux, p.auxLd * elementBytes,
                                    shape.n * elementBytes, shape.m,
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
}
} // namespace

void setMatmulEpilogueCublasLt(bool enabled) { cublasLtAllowed = enabled; }

void matmulBiasKernel(const AttrMap &attrs, const Tensors &operands,
                      const Tensors &results, CudaContext &ctx) {
  runMatmulEpilogue("nn.matmul_bias", attrs, operands, results,
                    /*gelu=*/false, ctx);
}

void matmulBiasGeluKernel(const AttrMap &attrs, const Tensors &operands,
                          const Tensors &results, CudaContext &ctx) {
  runMatmulEpilogue("nn.matmul_bias_gelu", attrs, operands, results,
                    /*gelu=*/true, ctx);
}

} // namespace zerosbp::runtime::gpu
