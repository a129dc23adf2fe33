//===- cuda_matmul_epilogue_test.cc - matmul_bias(_gelu) on CUDA vs CPU ---===//
//
// nn.matmul_bias, nn.matmul_bias_gelu and nn.matmul_add on CUDA (cuBLASLt, and
// the fallback of cuBLAS and elementwise kernels) against the CPU kernels on
// the same inputs: odd shapes in every transpose combination, GPT-2 small's
// MLP (8192 x 768 by 3072 x 768, and back), a vocabulary-sized odd n
// (50257), f32, bf16 and f16. Each comparison prints its largest error
// against its bound.
//
// Tolerances, with operands scaled so that z = op(lhs) op(rhs) + bias is
// about 1 (rhs uniform in +-2/sqrt(k)):
// - z (the result of matmul_bias, pre_activation): both sides sum k
//   products in f32 in different orders, so 1e-6 sqrt(k) absolute plus 1e-5
//   relative; f16 and bf16 one unit in their last place more (2^-10, 2^-7
//   relative), since both round once and an f32 difference can flip that.
// - gelu(z): 1.13 (GELU's steepest slope) times z's bound, plus, on the
//   cuBLASLt path, 2.5e-4 |z|: cuBLASLt evaluates the tanh form its own way
//   (PTX's tanh.approx.f32 alone has a relative error of 2^-11), not with
//   the CPU's exp. The fallback's GELU is the CPU's formula: 1e-6 relative.
// GeluIsTheTanhForm measures which form cuBLASLt computes on its own z.
//
// The checks need no device; the rest skips itself without one.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/gpu_test_util.h"

#include "runtime/cuda/OpKernels.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace zerosbp::runtime::gputest {
namespace {

using Shape = std::vector<int64_t>;

constexpr const char *kBias = "nn.matmul_bias";
constexpr const char *kBiasGelu = "nn.matmul_bias_gelu";

bool isGelu(const char *op) { return std::string(op) == kBiasGelu; }

/// One unit in the last place at 1: the rounding a half type may flip.
double ulp(DType type) {
  switch (type) {
  case DType::BF16:
    return std::ldexp(1.0, -7);
  case DType::F16:
    return std::ldexp(1.0, -10);
  default:
    return 0.0;
  }
}

AttrMap transposes(bool transA, bool transB) {
  return makeAttrs({{"transpose_lhs", transA}, {"transpose_rhs", transB}});
}

/// lhs uniform in [-1, 1), rhs in +-2/sqrt(k), bias in [-1, 1), stored as
/// the transposes ask.
struct Operands {
  HostTensor lhs, rhs, bias;
};

Operands makeOperands(DType type, int64_t m, int64_t n, int64_t k, bool transA,
                      bool transB, unsigned seed) {
  double w = 2.0 / std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  return {
      randomTensor(type, transA ? Shape{k, m} : Shape{m, k}, seed),
      randomTensor(type, transB ? Shape{n, k} : Shape{k, n}, seed + 1, -w, w),
      randomTensor(type, {n}, seed + 2)};
}

/// The results of one op on both backends: {result} or {result,
/// pre_activation}.
struct Results {
  std::vector<HostTensor> cpu, cuda;
};

HostTensor fresh(DType type, Shape shape) {
  HostTensor tensor(type, std::move(shape));
  std::memset(tensor.ref.data, kUnwrittenByte, tensor.ref.bytes());
  return tensor;
}

Results runBoth(const char *op, const AttrMap &attrs, const Operands &in,
                int64_t m, int64_t n, CudaContext &ctx) {
  DType type = in.lhs.ref.dtype;
  size_t count = isGelu(op) ? 2 : 1;
  Results out;
  std::vector<TensorRef> cpuResults;
  for (size_t r = 0; r < count; ++r) {
    out.cpu.push_back(fresh(type, {m, n}));
    cpuResults.push_back(out.cpu.back().ref);
  }
  findCpuKernel(op)(attrs, {in.lhs.ref, in.rhs.ref, in.bias.ref}, cpuResults);

  DeviceTensor lhs(in.lhs), rhs(in.rhs), bias(in.bias);
  std::vector<std::unique_ptr<DeviceTensor>> results;
  std::vector<TensorRef> cudaResults;
  for (size_t r = 0; r < count; ++r) {
    results.push_back(std::make_unique<DeviceTensor>(fresh(type, {m, n})));
    cudaResults.push_back(results.back()->ref);
  }
  findCudaKernel(op)(attrs, {lhs.ref, rhs.ref, bias.ref}, cudaResults, ctx);
  checkCudaCall(cudaStreamSynchronize(ctx.stream()), "the kernel");
  for (const auto &result : results)
    out.cuda.push_back(result->toHost());
  return out;
}

/// |cuda - cpu| <= atol + rtol |cpu| + zrtol |z|, z from the CPU.
struct Bound {
  double atol, rtol, zrtol = 0.0;
};

Bound zBound(DType type, int64_t k) {
  return {1e-6 * std::sqrt(static_cast<double>(k)), std::max(1e-5, ulp(type))};
}

Bound geluBound(DType type, int64_t k, bool cublasLt) {
  Bound z = zBound(type, k);
  return {1.13 * z.atol, std::max(1e-6, ulp(type)) + 1.13 * z.rtol,
          cublasLt ? 2.5e-4 : 0.0};
}

/// Expects the two to agree within `bound`; prints the largest error and
/// its share of the bound.
void expectAgree(const HostTensor &cuda, const HostTensor &cpu,
                 const HostTensor &z, Bound bound, const std::string &what) {
  ASSERT_EQ(cuda.ref.shape, cpu.ref.shape) << what;
  double maxError = 0, maxShare = 0;
  int64_t failures = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double want = cpu.get(i), got = cuda.get(i);
    double allowed = bound.atol + bound.rtol * std::fabs(want) +
                     bound.zrtol * std::fabs(z.get(i));
    double error = std::fabs(got - want);
    if (!(error <= allowed) && failures++ < 5)
      ADD_FAILURE() << what << " element " << i << ": CUDA " << got << ", CPU "
                    << want << ", allowed " << allowed;
    maxError = std::max(maxError, error);
    maxShare = std::max(maxShare, error / allowed);
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << cpu.numel()
                         << " elements out of bounds";
  std::printf("%-58s max |cuda - cpu| %.3g (%.2f of the bound)\n", what.c_str(),
              maxError, maxShare);
}

/// Runs `op` both ways and compares every result.
void compare(const char *op, bool transA, bool transB, const Operands &in,
             int64_t m, int64_t n, int64_t k, bool cublasLt, CudaContext &ctx,
             const std::string &label) {
  gpu::setMatmulEpilogueCublasLt(cublasLt);
  Results r = runBoth(op, transposes(transA, transB), in, m, n, ctx);
  gpu::setMatmulEpilogueCublasLt(true);
  DType type = in.lhs.ref.dtype;
  std::string what = std::string(op + 3) + " " + dtypeName(type) + " " +
                     (transA ? "T" : "N") + (transB ? "T" : "N") + " " +
                     std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k) + (cublasLt ? "" : " fallback") +
                     (label.empty() ? "" : " " + label);
  if (isGelu(op)) {
    expectAgree(r.cuda[1], r.cpu[1], r.cpu[1], zBound(type, k), what + " z");
    expectAgree(r.cuda[0], r.cpu[0], r.cpu[1], geluBound(type, k, cublasLt),
                what + " gelu");
  } else {
    expectAgree(r.cuda[0], r.cpu[0], r.cpu[0], zBound(type, k), what);
  }
}

class CudaMatmulEpilogue : public CudaDeviceTest {
protected:
  void TearDown() override { gpu::setMatmulEpilogueCublasLt(true); }
};

TEST_F(CudaMatmulEpilogue, EveryTransposeOddShapesBothPaths) {
  // n = 29 gives GELU's aux output a padded leading dim; n = 40 does not.
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{37, 29, 53}, {64, 40, 96}};
  CudaContext ctx;
  unsigned seed = 1;
  for (const Case &c : cases)
    for (DType type : {DType::F32, DType::BF16, DType::F16})
      for (bool transA : {false, true})
        for (bool transB : {false, true}) {
          Operands in =
              makeOperands(type, c.m, c.n, c.k, transA, transB, seed += 3);
          for (const char *op : {kBias, kBiasGelu})
            for (bool cublasLt : {true, false})
              compare(op, transA, transB, in, c.m, c.n, c.k, cublasLt, ctx, "");
        }
}

// nn.matmul_add (cuBLAS's C with beta = 1) against the CPU kernel, and
// written over its addend (a running total in place) the bits it writes
// into a separate result.
TEST_F(CudaMatmulEpilogue, MatmulAddEveryTransposeAndInPlace) {
  const char *op = "nn.matmul_add";
  const int64_t m = 37, n = 29, k = 53;
  CudaContext ctx;
  unsigned seed = 100;
  for (DType type : {DType::F32, DType::BF16, DType::F16})
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        Operands in = makeOperands(type, m, n, k, transA, transB, seed += 3);
        in.bias = randomTensor(type, {m, n}, seed + 7);
        compare(op, transA, transB, in, m, n, k, /*cublasLt=*/true, ctx, "");
      }
  Operands in = makeOperands(DType::BF16, 64, 40, 96, true, false, 7);
  in.bias = randomTensor(DType::BF16, {64, 40}, 9);
  Results separate = runBoth(op, transposes(true, false), in, 64, 40, ctx);
  DeviceTensor lhs(in.lhs), rhs(in.rhs), total(in.bias);
  findCudaKernel(op)(transposes(true, false), {lhs.ref, rhs.ref, total.ref},
                     {total.ref}, ctx);
  checkCudaCall(cudaStreamSynchronize(ctx.stream()), "the kernel");
  HostTensor inPlace = total.toHost();
  EXPECT_EQ(std::memcmp(inPlace.ref.data, separate.cuda[0].ref.data,
                        inPlace.ref.bytes()),
            0);
}

TEST_F(CudaMatmulEpilogue, Gpt2SmallMlp) {
  // x (8192 tokens x 768) by c_fc's weight (3072 x 768, a Linear's (out,
  // in)), then the 3072 activations by c_proj's (768 x 3072).
  CudaContext ctx;
  for (DType type : {DType::BF16, DType::F32}) {
    Operands fc = makeOperands(type, 8192, 3072, 768, false, true, 10);
    compare(kBiasGelu, false, true, fc, 8192, 3072, 768, true, ctx, "c_fc");
    Operands proj = makeOperands(type, 8192, 768, 3072, false, true, 20);
    compare(kBias, false, true, proj, 8192, 768, 3072, true, ctx, "c_proj");
  }
}

TEST_F(CudaMatmulEpilogue, VocabularySizedOddN) {
  // An lm-head-like product with a bias: rows of 50257 elements are not
  // 16-byte aligned in any type.
  CudaContext ctx;
  for (DType type : {DType::BF16, DType::F32}) {
    Operands in = makeOperands(type, 512, 50257, 768, false, true, 30);
    compare(kBias, false, true, in, 512, 50257, 768, true, ctx, "vocab");
  }
  Operands in = makeOperands(DType::BF16, 96, 50257, 768, false, true, 40);
  compare(kBiasGelu, false, true, in, 96, 50257, 768, true, ctx, "vocab");
}

TEST_F(CudaMatmulEpilogue, EmptyShapes) {
  CudaContext ctx;
  // k = 0: z is the bias in every row.
  Operands noK = makeOperands(DType::BF16, 3, 4, 0, false, false, 50);
  for (const char *op : {kBias, kBiasGelu})
    compare(op, false, false, noK, 3, 4, 0, true, ctx, "k=0");
  Operands noRows = makeOperands(DType::F32, 0, 4, 5, false, false, 60);
  Results r = runBoth(kBiasGelu, {}, noRows, 0, 4, ctx);
  EXPECT_EQ(r.cuda[0].numel(), 0);
}

TEST_F(CudaMatmulEpilogue, GeluIsTheTanhForm) {
  // z spread over [-6, 6] by the bias, where the tanh form and the exact
  // (erf) GELU differ by up to 4.7e-4. cuBLASLt's result y is compared with
  // both, evaluated in double on cuBLASLt's own z: y - tanh must be within
  // the comparisons' 2.5e-4 |z| (and f16's roundings of z and y), and its
  // least-squares coefficient on d = erf - tanh near 0 (1 would be the erf
  // form); neither an approximate tanh nor rounding errs the way d goes. In
  // f32 and, in case cuBLASLt has no f32 GELU_AUX_BIAS algorithm, in f16.
  const int64_t m = 512, n = 256, k = 64;
  const double beta = std::sqrt(2.0 / M_PI);
  CudaContext ctx;
  for (DType type : {DType::F32, DType::F16}) {
    Operands in = makeOperands(type, m, n, k, false, true, 70);
    for (int64_t j = 0; j < n; ++j)
      in.bias.set(j, -6.0 + 12.0 * static_cast<double>(j) / (n - 1));
    Results r = runBoth(kBiasGelu, transposes(false, true), in, m, n, ctx);
    // The fallback computes the same bits run after run: equal bits mean
    // that cuBLASLt had no algorithm.
    gpu::setMatmulEpilogueCublasLt(false);
    Results fallback =
        runBoth(kBiasGelu, transposes(false, true), in, m, n, ctx);
    gpu::setMatmulEpilogueCublasLt(true);
    if (std::memcmp(r.cuda[0].ref.data, fallback.cuda[0].ref.data,
                    r.cuda[0].ref.bytes()) == 0) {
      std::printf("cuBLASLt GELU %s: no algorithm (the fallback ran)\n",
                  dtypeName(type));
    } else {
      double u = type == DType::F16 ? std::ldexp(1.0, -11) : 0.0;
      double ed = 0, dd = 0, ee = 0, maxShare = 0;
      int64_t failures = 0;
      for (int64_t i = 0; i < m * n; ++i) {
        double z = r.cuda[1].get(i), y = r.cuda[0].get(i);
        double tanhForm =
            0.5 * z * (1 + std::tanh(beta * (z + 0.044715 * z * z * z)));
        double erfForm = 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
        double e = y - tanhForm, d = erfForm - tanhForm;
        ed += e * d;
        dd += d * d;
        ee += e * e;
        double allowed = 2.5e-4 * std::fabs(z) +
                         u * (std::fabs(y) + 1.13 * std::fabs(z)) + 1e-6;
        maxShare = std::max(maxShare, std::fabs(e) / allowed);
        if (!(std::fabs(e) <= allowed) && failures++ < 5)
          ADD_FAILURE() << dtypeName(type) << " z " << z << ": cuBLASLt's GELU "
                        << y << ", the tanh form " << tanhForm;
      }
      EXPECT_EQ(failures, 0);
      double count = static_cast<double>(m * n);
      double coefficient = ed / dd;
      std::printf("cuBLASLt GELU %s on its own z: rms from the tanh form "
                  "%.3g (max %.2f of the bound), rms erf - tanh %.3g, "
                  "coefficient on erf - tanh %.3f\n",
                  dtypeName(type), std::sqrt(ee / count), maxShare,
                  std::sqrt(dd / count), coefficient);
      EXPECT_LT(std::fabs(coefficient), 0.25)
          << dtypeName(type) << ": cuBLASLt's GELU does not look like the "
          << "tanh form";
    }
    if (type == DType::F32) {
      // The fallback applies the CPU kernel's GELU to its f32 z.
      HostTensor cpuGelu(DType::F32, {m, n});
      findCpuKernel("nn.gelu")({}, {fallback.cuda[1].ref}, {cpuGelu.ref});
      expectAgree(fallback.cuda[0], cpuGelu, cpuGelu, {0.0, 1e-6},
                  "fallback gelu vs the CPU's gelu of the same z");
    }
  }
}

TEST_F(CudaMatmulEpilogue, AlgorithmsAreReusedAndCapturable) {
  // The second call of a shape reuses the first's algorithm: the same bits.
  // Captured into a CUDA graph (the executor's steps) it replays them too.
  const int64_t m = 300, n = 333, k = 200; // n % 8 != 0: padded aux
  Operands in = makeOperands(DType::BF16, m, n, k, false, true, 80);
  cudaStream_t stream = nullptr;
  checkCudaCall(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                "cudaStreamCreate");
  {
    CudaContext ctx(stream);
    DeviceTensor lhs(in.lhs), rhs(in.rhs), bias(in.bias);
    DeviceTensor y(fresh(DType::BF16, {m, n})), z(fresh(DType::BF16, {m, n}));
    AttrMap attrs = transposes(false, true);
    auto run = [&] {
      findCudaKernel(kBiasGelu)(attrs, {lhs.ref, rhs.ref, bias.ref},
                                {y.ref, z.ref}, ctx);
    };
    run();
    checkCudaCall(cudaStreamSynchronize(stream), "first call");
    HostTensor firstY = y.toHost(), firstZ = z.toHost();
    auto clear = [&] {
      checkCudaCall(cudaMemsetAsync(y.ref.data, 0, y.ref.bytes(), stream),
                    "clear");
      checkCudaCall(cudaMemsetAsync(z.ref.data, 0, z.ref.bytes(), stream),
                    "clear");
    };
    clear();
    run();
    checkCudaCall(cudaStreamSynchronize(stream), "second call");
    HostTensor secondY = y.toHost(), secondZ = z.toHost();
    EXPECT_EQ(std::memcmp(firstY.ref.data, secondY.ref.data, y.ref.bytes()), 0);
    EXPECT_EQ(std::memcmp(firstZ.ref.data, secondZ.ref.data, z.ref.bytes()), 0);

    clear();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    checkCudaCall(
        cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
    run();
    checkCudaCall(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    checkCudaCall(cudaGraphInstantiate(&exec, graph, 0),
                  "cudaGraphInstantiate");
    checkCudaCall(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    checkCudaCall(cudaStreamSynchronize(stream), "the graph");
    HostTensor graphY = y.toHost(), graphZ = z.toHost();
    EXPECT_EQ(std::memcmp(firstY.ref.data, graphY.ref.data, y.ref.bytes()), 0);
    EXPECT_EQ(std::memcmp(firstZ.ref.data, graphZ.ref.data, z.ref.bytes()), 0);
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
  }
  (void)cudaStreamDestroy(stream);
}

//===----------------------------------------------------------------------===//
// Without a device
//===----------------------------------------------------------------------===//

TEST(CudaMatmulEpilogueChecks, TheCpuKernelsMessages) {
  HostTensor a = randomTensor(DType::F32, {2, 3}, 1);
  HostTensor b = randomTensor(DType::F32, {3, 5}, 2);
  HostTensor b45 = randomTensor(DType::F32, {4, 5}, 3);
  HostTensor a3 = randomTensor(DType::F32, {1, 2, 3}, 4);
  HostTensor a64 = randomTensor(DType::F64, {2, 3}, 5);
  HostTensor b16 = randomTensor(DType::BF16, {3, 5}, 6);
  HostTensor bias = randomTensor(DType::F32, {5}, 7);
  HostTensor bias4 = randomTensor(DType::F32, {4}, 8);
  HostTensor c(DType::F32, {2, 5}), pre(DType::F32, {2, 5});
  HostTensor wrong(DType::F32, {5, 2}), c16(DType::BF16, {2, 5});
  for (const char *op : {kBias, kBiasGelu}) {
    std::vector<const HostTensor *> results = {&c};
    std::vector<const HostTensor *> wrongShape = {&wrong};
    std::vector<const HostTensor *> wrongType = {&c16};
    if (isGelu(op)) {
      results.push_back(&pre);
      wrongShape = {&c, &wrong};
      wrongType = {&c, &c16};
    }
    expectRejectedNamingOp(op, {}, {}, {});
    expectRejectedNamingOp(op, {}, {&a, &b}, results);
    expectRejectedNamingOp(op, {}, {&a, &b, &bias}, {&c, &pre, &pre});
    expectRejectedNamingOp(op, {}, {&a64, &b, &bias}, results);
    expectRejectedNamingOp(op, {}, {&a, &b16, &bias}, results);
    expectRejectedNamingOp(op, {}, {&a, &b, &bias}, wrongType);
    expectRejectedNamingOp(op, {}, {&a3, &b, &bias}, results);
    expectRejectedNamingOp(op, {}, {&a, &b45, &bias}, results);
    expectRejectedNamingOp(op, transposes(true, false), {&a, &b, &bias},
                           results);
    expectRejectedNamingOp(op, {}, {&a, &b, &bias4}, results);
    expectRejectedNamingOp(op, {}, {&a, &b, &bias}, wrongShape);
  }
  // Results over operands, or over each other.
  HostTensor square = randomTensor(DType::F32, {3, 3}, 9);
  HostTensor squareBias = randomTensor(DType::F32, {3}, 10);
  HostTensor out(DType::F32, {3, 3});
  expectRejectedNamingOp(kBias, {}, {&square, &out, &squareBias}, {&square});
  expectRejectedNamingOp(kBiasGelu, {}, {&square, &square, &squareBias},
                         {&out, &out});
  expectRejectedNamingOp(kBiasGelu, {}, {&square, &square, &squareBias},
                         {&out, &square});
}

TEST(CudaMatmulEpilogueChecks, WithoutADeviceTheFirstCudaCallFailsNamingTheOp) {
  std::string reason = noDeviceReason();
  if (reason.empty())
    GTEST_SKIP() << "a CUDA device is present";
  HostTensor a = randomTensor(DType::F32, {4, 4}, 1);
  HostTensor bias = randomTensor(DType::F32, {4}, 2);
  HostTensor y(DType::F32, {4, 4}), z(DType::F32, {4, 4});
  for (const char *op : {kBias, kBiasGelu}) {
    std::vector<TensorRef> results = {y.ref};
    if (isGelu(op))
      results.push_back(z.ref);
    std::string prefix = std::string(op) + ": cannot create a cuBLAS handle: ";
    CudaContext ctx;
    try {
      findCudaKernel(op)({}, {a.ref, a.ref, bias.ref}, results, ctx);
      ADD_FAILURE() << op << " did not throw";
    } catch (const RuntimeError &error) {
      std::string message = error.what();
      EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
      EXPECT_GT(message.size(), prefix.size() + 4) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

} // namespace
} // namespace zerosbp::runtime::gputest
