//===- cuda_attention_test.cc - fused attention on CUDA against the CPU ---===//
//
// nn.attention and nn.attention_grad: the CUDA kernels (runtime/cuda/
// Attention.cu) on device copies of random inputs against the CPU kernels
// on the same inputs, causal and not, sizes that are not multiples of the
// 64-row tiles, D != Dv, f32/bf16/f16, on both CUDA paths (f32 FMAs, and
// tensor cores for bf16/f16 with head dims multiples of 16); two runs give
// the same bits; results over operands; empty sizes. The checks need no
// device: bad calls get the CPU kernels' messages, and head dims above 128
// are refused in one line. The rest skips itself without a CUDA device.
//
// Tolerances, |cuda - cpu| <= 1e-6 + a max|cpu| + r |cpu| per result:
// - f32: a = r = 1e-5 (f32 summation order);
// - bf16 and f16 on the f32-FMA path: a = 2^-10 and r = one unit in the
//   last place (2^-7, 2^-10), since both sides compute in f32 and round
//   once;
// - tensor cores: p (and ds) enter the second product rounded to the
//   storage type, as in FlashAttention: a = r = 2^-6 for bf16, 2^-8 for
//   f16 (an emulation of the kernels measured at most 0.0036 and 0.0009
//   of max|cpu| on these shapes).
// lse is f32 on every path: 1e-5 relative plus 1e-5.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/OpKernels.h"
#include "tests/gpu/gpu_test_util.h"

#include <cmath>

namespace zerosbp::runtime::gputest {
namespace {

using Shape = std::vector<int64_t>;

constexpr std::string_view kForward = "nn.attention";
constexpr std::string_view kBackward = "nn.attention_grad";

/// Batch dims, queries, keys, head dim, value dim.
struct Case {
  Shape lead;
  int64_t sq, sk, d, dv;

  Shape dims(std::initializer_list<int64_t> tail) const {
    Shape shape = lead;
    shape.insert(shape.end(), tail);
    return shape;
  }
  std::string name() const {
    std::string text = "lead [";
    for (size_t i = 0; i < lead.size(); ++i)
      text += (i ? ", " : "") + std::to_string(lead[i]);
    return text + "] Sq " + std::to_string(sq) + " Sk " + std::to_string(sk) +
           " D " + std::to_string(d) + " Dv " + std::to_string(dv);
  }
};

/// Sizes that are not multiples of the 64-row tiles, D != Dv, and head
/// dims that the tensor cores do not take (20, 12).
const Case kCases[] = {
    {{2}, 1, 1, 64, 64},      {{2, 3}, 7, 7, 64, 64},
    {{3}, 65, 65, 64, 64},    {{2}, 300, 300, 64, 64},
    {{1}, 65, 300, 64, 32},   {{2}, 300, 7, 48, 80},
    {{1}, 33, 33, 20, 12},    {{1}, 130, 130, 128, 128},
    {{2}, 100, 100, 16, 112},
};

AttrMap attentionAttrs(const Case &c, bool causal) {
  AttrMap attrs;
  attrs.set("scale", 1.0 / std::sqrt(static_cast<double>(c.d)));
  if (causal)
    attrs.set("causal", true);
  return attrs;
}

struct Inputs {
  HostTensor q, k, v, gradOutput;
};

Inputs makeInputs(DType type, const Case &c, unsigned seed) {
  return {randomTensor(type, c.dims({c.sq, c.d}), seed),
          randomTensor(type, c.dims({c.sk, c.d}), seed + 1),
          randomTensor(type, c.dims({c.sk, c.dv}), seed + 2),
          randomTensor(type, c.dims({c.sq, c.dv}), seed + 3)};
}

struct Spec {
  DType type;
  Shape shape;
};

std::vector<Spec> forwardResults(DType type, const Case &c) {
  return {{type, c.dims({c.sq, c.dv})}, {DType::F32, c.dims({c.sq})}};
}

std::vector<Spec> backwardResults(DType type, const Case &c) {
  return {{type, c.dims({c.sq, c.d})},
          {type, c.dims({c.sk, c.d})},
          {type, c.dims({c.sk, c.dv})}};
}

HostTensor unwritten(const Spec &spec) {
  HostTensor tensor(spec.type, spec.shape);
  std::memset(tensor.ref.data, kUnwrittenByte, tensor.ref.bytes());
  return tensor;
}

/// The CPU kernel's results on copies of `operands`.
std::vector<HostTensor> runCpu(std::string_view op, const AttrMap &attrs,
                               const std::vector<const HostTensor *> &operands,
                               const std::vector<Spec> &specs) {
  std::vector<HostTensor> copies, results;
  std::vector<TensorRef> operandRefs, resultRefs;
  for (const HostTensor *operand : operands)
    copies.push_back(operand->clone());
  for (const HostTensor &copy : copies)
    operandRefs.push_back(copy.ref);
  for (const Spec &spec : specs)
    results.push_back(unwritten(spec));
  for (const HostTensor &result : results)
    resultRefs.push_back(result.ref);
  findCpuKernel(op)(attrs, operandRefs, resultRefs);
  return results;
}

/// The CUDA kernel's results on device copies of `operands`.
std::vector<HostTensor> runCuda(std::string_view op, const AttrMap &attrs,
                                const std::vector<const HostTensor *> &operands,
                                const std::vector<Spec> &specs) {
  std::vector<std::unique_ptr<DeviceTensor>> deviceOperands, deviceResults;
  std::vector<TensorRef> operandRefs, resultRefs;
  for (const HostTensor *operand : operands) {
    deviceOperands.push_back(std::make_unique<DeviceTensor>(*operand));
    operandRefs.push_back(deviceOperands.back()->ref);
  }
  for (const Spec &spec : specs) {
    deviceResults.push_back(std::make_unique<DeviceTensor>(unwritten(spec)));
    resultRefs.push_back(deviceResults.back()->ref);
  }
  CudaContext ctx;
  findCudaKernel(op)(attrs, operandRefs, resultRefs, ctx);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << op;
  std::vector<HostTensor> results;
  for (const auto &result : deviceResults)
    results.push_back(result->toHost());
  return results;
}

/// |cuda - cpu| <= 1e-6 + ofMax max|cpu| + rtol |cpu| (file comment).
struct Bound {
  double ofMax;
  double rtol;
};

bool tensorCorePath(DType type, const Case &c, bool enabled) {
  return enabled && (type == DType::BF16 || type == DType::F16) &&
         c.d % 16 == 0 && c.dv % 16 == 0;
}

Bound boundFor(DType type, bool tensorCores) {
  if (tensorCores)
    return type == DType::BF16 ? Bound{1.0 / 64, 1.0 / 64}
                               : Bound{1.0 / 256, 1.0 / 256};
  switch (type) {
  case DType::BF16:
    return {1.0 / 1024, 1.0 / 128};
  case DType::F16:
    return {1.0 / 1024, 1.0 / 1024};
  default:
    return {1e-5, 1e-5};
  }
}

constexpr Bound kLseBound{1e-5, 1e-5};

void expectNear(const HostTensor &cuda, const HostTensor &cpu, Bound bound,
                const std::string &what) {
  ASSERT_EQ(cuda.ref.shape, cpu.ref.shape) << what;
  ASSERT_EQ(cuda.ref.dtype, cpu.ref.dtype) << what;
  double largest = 0.0;
  for (int64_t i = 0; i < cpu.numel(); ++i)
    if (std::isfinite(cpu.get(i)))
      largest = std::max(largest, std::fabs(cpu.get(i)));
  double atol = 1e-6 + bound.ofMax * largest;
  int differing = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double a = cuda.get(i), b = cpu.get(i);
    bool close = std::isfinite(b)
                     ? std::fabs(a - b) <= atol + bound.rtol * std::fabs(b)
                     : a == b || (std::isnan(a) && std::isnan(b));
    if (!close && differing++ < 5)
      ADD_FAILURE() << what << " element " << i << ": CUDA " << a << ", CPU "
                    << b << " (allowed " << atol + bound.rtol * std::fabs(b)
                    << ")";
  }
  EXPECT_EQ(differing, 0) << what << " (max |cpu| " << largest << ")";
}

void expectSameBits(const HostTensor &a, const HostTensor &b,
                    const std::string &what) {
  ASSERT_EQ(a.ref.shape, b.ref.shape) << what;
  EXPECT_EQ(std::memcmp(a.ref.data, b.ref.data, a.ref.bytes()), 0) << what;
}

/// Forward and backward of one case against the CPU: the backward on the
/// CPU forward's result and lse, so that both sides read the same operands.
void expectCaseMatchesCpu(DType type, const Case &c, bool causal,
                          bool tensorCores, unsigned seed) {
  gpu::setAttentionTensorCores(tensorCores);
  std::string label =
      std::string(dtypeName(type)) +
      (tensorCorePath(type, c, tensorCores) ? " tensor cores" : " f32 FMAs") +
      (causal ? " causal " : " ") + c.name();
  SCOPED_TRACE(label);
  AttrMap attrs = attentionAttrs(c, causal);
  Inputs in = makeInputs(type, c, seed);
  Bound bound = boundFor(type, tensorCorePath(type, c, tensorCores));

  std::vector<const HostTensor *> forwardOperands = {&in.q, &in.k, &in.v};
  std::vector<HostTensor> cpu =
      runCpu(kForward, attrs, forwardOperands, forwardResults(type, c));
  std::vector<HostTensor> cuda =
      runCuda(kForward, attrs, forwardOperands, forwardResults(type, c));
  expectNear(cuda[0], cpu[0], bound, "result");
  expectNear(cuda[1], cpu[1], kLseBound, "lse");

  std::vector<const HostTensor *> backwardOperands = {
      &in.gradOutput, &in.q, &in.k, &in.v, &cpu[0], &cpu[1]};
  std::vector<HostTensor> cpuGrads =
      runCpu(kBackward, attrs, backwardOperands, backwardResults(type, c));
  std::vector<HostTensor> cudaGrads =
      runCuda(kBackward, attrs, backwardOperands, backwardResults(type, c));
  expectNear(cudaGrads[0], cpuGrads[0], bound, "grad_q");
  expectNear(cudaGrads[1], cpuGrads[1], bound, "grad_k");
  expectNear(cudaGrads[2], cpuGrads[2], bound, "grad_v");
}

class CudaAttention : public CudaDeviceTest {
protected:
  void TearDown() override { gpu::setAttentionTensorCores(true); }
};

TEST_F(CudaAttention, F32MatchesTheCpu) {
  unsigned seed = 1;
  for (const Case &c : kCases)
    for (bool causal : {false, true})
      if (!causal || c.sq == c.sk)
        expectCaseMatchesCpu(DType::F32, c, causal, true, seed += 10);
}

TEST_F(CudaAttention, Bf16AndF16OnTensorCoresMatchTheCpu) {
  unsigned seed = 1;
  for (DType type : {DType::BF16, DType::F16})
    for (const Case &c : kCases)
      for (bool causal : {false, true})
        if (!causal || c.sq == c.sk)
          expectCaseMatchesCpu(type, c, causal, true, seed += 10);
}

TEST_F(CudaAttention, Bf16AndF16OnF32FmasMatchTheCpu) {
  unsigned seed = 1;
  for (DType type : {DType::BF16, DType::F16})
    for (const Case &c : kCases)
      for (bool causal : {false, true})
        if (!causal || c.sq == c.sk)
          expectCaseMatchesCpu(type, c, causal, false, seed += 10);
}

/// Small shapes through every kernel (both paths, forward and backward,
/// causal, the shared-memory opt-in above 48 KiB, no keys), quick enough
/// for compute-sanitizer (bench/gpu/on_gpu.sh runs memcheck and racecheck
/// on this test alone).
TEST_F(CudaAttention, EveryKernelOnSmallShapes) {
  const Case small[] = {
      {{2}, 7, 7, 20, 12},
      {{1}, 65, 70, 64, 32},
      {{1}, 70, 70, 128, 128},
      {{2}, 7, 70, 16, 48},
  };
  unsigned seed = 1;
  for (DType type : {DType::F32, DType::BF16, DType::F16})
    for (const Case &c : small)
      for (bool causal : {false, true})
        if (!causal || c.sq == c.sk)
          for (bool tensorCores : {true, false})
            if (tensorCores || type != DType::F32)
              expectCaseMatchesCpu(type, c, causal, tensorCores, seed += 10);
  // No keys: lse -inf, result and grad_q zero.
  expectCaseMatchesCpu(DType::F32, {{2}, 5, 0, 16, 16}, false, true, 7);
  expectCaseMatchesCpu(DType::BF16, {{2}, 5, 0, 16, 16}, false, true, 7);
  // No queries: grad_k and grad_v zero.
  expectCaseMatchesCpu(DType::F32, {{2}, 0, 5, 16, 16}, false, true, 8);
  expectCaseMatchesCpu(DType::F16, {{2}, 0, 5, 16, 16}, false, true, 8);
}

TEST_F(CudaAttention, EmptyBatchWritesNothing) {
  Case c{{3, 0}, 9, 9, 16, 16};
  for (DType type : {DType::F32, DType::BF16}) {
    Inputs in = makeInputs(type, c, 1);
    std::vector<HostTensor> results =
        runCuda(kForward, attentionAttrs(c, true), {&in.q, &in.k, &in.v},
                forwardResults(type, c));
    EXPECT_EQ(results[0].numel(), 0);
  }
}

TEST_F(CudaAttention, TwoRunsGiveTheSameBits) {
  Case c{{3}, 300, 300, 64, 64};
  for (DType type : {DType::F32, DType::BF16, DType::F16})
    for (bool tensorCores : {true, false}) {
      if (type == DType::F32 && !tensorCores)
        continue;
      gpu::setAttentionTensorCores(tensorCores);
      SCOPED_TRACE(std::string(dtypeName(type)) +
                   (tensorCores ? " tensor cores" : " f32 FMAs"));
      AttrMap attrs = attentionAttrs(c, true);
      Inputs in = makeInputs(type, c, 5);
      std::vector<const HostTensor *> operands = {&in.q, &in.k, &in.v};
      std::vector<HostTensor> first =
          runCuda(kForward, attrs, operands, forwardResults(type, c));
      std::vector<HostTensor> second =
          runCuda(kForward, attrs, operands, forwardResults(type, c));
      expectSameBits(first[0], second[0], "result");
      expectSameBits(first[1], second[1], "lse");
      std::vector<const HostTensor *> backwardOperands = {
          &in.gradOutput, &in.q, &in.k, &in.v, &first[0], &first[1]};
      std::vector<HostTensor> gradsFirst =
          runCuda(kBackward, attrs, backwardOperands, backwardResults(type, c));
      std::vector<HostTensor> gradsSecond =
          runCuda(kBackward, attrs, backwardOperands, backwardResults(type, c));
      expectSameBits(gradsFirst[0], gradsSecond[0], "grad_q");
      expectSameBits(gradsFirst[1], gradsSecond[1], "grad_k");
      expectSameBits(gradsFirst[2], gradsSecond[2], "grad_v");
    }
}

/// Results in the bytes of operands of their type and shape (the planner
/// may reuse a dead operand's bytes): the same bits as separate results.
TEST_F(CudaAttention, ResultsOverOperands) {
  Case c{{2}, 130, 130, 64, 64};
  for (DType type : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtypeName(type));
    AttrMap attrs = attentionAttrs(c, true);
    Inputs in = makeInputs(type, c, 9);
    std::vector<HostTensor> separate = runCuda(
        kForward, attrs, {&in.q, &in.k, &in.v}, forwardResults(type, c));
    {
      // result over q (D == Dv).
      DeviceTensor q(in.q), k(in.k), v(in.v);
      DeviceTensor lse(unwritten(forwardResults(type, c)[1]));
      CudaContext ctx;
      findCudaKernel(kForward)(attrs, {q.ref, k.ref, v.ref}, {q.ref, lse.ref},
                               ctx);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expectSameBits(q.toHost(), separate[0], "result over q");
      expectSameBits(lse.toHost(), separate[1], "lse");
    }
    std::vector<const HostTensor *> operands = {
        &in.gradOutput, &in.q, &in.k, &in.v, &separate[0], &separate[1]};
    std::vector<HostTensor> grads =
        runCuda(kBackward, attrs, operands, backwardResults(type, c));
    {
      // grad_q over q, grad_k over k, grad_v over v.
      DeviceTensor gradOutput(in.gradOutput), q(in.q), k(in.k), v(in.v),
          out(separate[0]), lse(separate[1]);
      CudaContext ctx;
      findCudaKernel(kBackward)(
          attrs, {gradOutput.ref, q.ref, k.ref, v.ref, out.ref, lse.ref},
          {q.ref, k.ref, v.ref}, ctx);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expectSameBits(q.toHost(), grads[0], "grad_q over q");
      expectSameBits(k.toHost(), grads[1], "grad_k over k");
      expectSameBits(v.toHost(), grads[2], "grad_v over v");
    }
  }
}

//===----------------------------------------------------------------------===//
// Checks: no device needed
//===----------------------------------------------------------------------===//

TEST(CudaAttentionChecks, BadCallsGetTheCpuMessages) {
  HostTensor q = randomTensor(DType::F32, {2, 7, 16}, 1);
  HostTensor k = randomTensor(DType::F32, {2, 7, 16}, 2);
  HostTensor v = randomTensor(DType::F32, {2, 7, 8}, 3);
  HostTensor out(DType::F32, {2, 7, 8});
  HostTensor lse(DType::F32, {2, 7});
  HostTensor shortQ = randomTensor(DType::F32, {2, 5, 16}, 4);
  HostTensor shortOut(DType::F32, {2, 5, 8});
  HostTensor shortLse(DType::F32, {2, 5});
  HostTensor narrowK = randomTensor(DType::F32, {2, 7, 12}, 5);
  HostTensor shortV = randomTensor(DType::F32, {2, 6, 8}, 6);
  HostTensor bf16K = randomTensor(DType::BF16, {2, 7, 16}, 7);
  HostTensor flatQ = randomTensor(DType::F32, {7, 16}, 8);
  HostTensor intQ(DType::I32, {2, 7, 16});
  HostTensor wideOut(DType::F32, {2, 7, 16});
  HostTensor bf16Lse(DType::BF16, {2, 7});
  HostTensor longLse(DType::F32, {2, 8});
  AttrMap attrs = makeAttrs({{"scale", 0.25}});
  AttrMap causal = makeAttrs({{"scale", 0.25}, {"causal", true}});

  expectRejectedNamingOp(kForward, {}, {&q, &k, &v}, {&out, &lse});
  expectRejectedNamingOp(kForward, makeAttrs({{"scale", INFINITY}}),
                         {&q, &k, &v}, {&out, &lse});
  expectRejectedNamingOp(kForward, makeAttrs({{"scale", std::string("x")}}),
                         {&q, &k, &v}, {&out, &lse});
  expectRejectedNamingOp(kForward, causal, {&shortQ, &k, &v},
                         {&shortOut, &shortLse});
  expectRejectedNamingOp(kForward, attrs, {&q, &narrowK, &v}, {&out, &lse});
  expectRejectedNamingOp(kForward, attrs, {&q, &k, &shortV}, {&out, &lse});
  expectRejectedNamingOp(kForward, attrs, {&q, &bf16K, &v}, {&out, &lse});
  expectRejectedNamingOp(kForward, attrs, {&flatQ, &k, &v}, {&out, &lse});
  expectRejectedNamingOp(kForward, attrs, {&intQ, &k, &v}, {&out, &lse});
  expectRejectedNamingOp(kForward, attrs, {&q, &k, &v}, {&wideOut, &lse});
  expectRejectedNamingOp(kForward, attrs, {&q, &k, &v}, {&out, &bf16Lse});
  expectRejectedNamingOp(kForward, attrs, {&q, &k, &v}, {&out, &longLse});
  expectRejectedNamingOp(kForward, attrs, {&q, &k}, {&out, &lse});
  expectRejectedNamingOp(kForward, attrs, {&q, &k, &v}, {&out});

  HostTensor dq(DType::F32, {2, 7, 16}), dk(DType::F32, {2, 7, 16}),
      dv(DType::F32, {2, 7, 8});
  HostTensor bf16Dk(DType::BF16, {2, 7, 16});
  HostTensor bf16Out(DType::BF16, {2, 7, 8});
  expectRejectedNamingOp(kBackward, {}, {&out, &q, &k, &v, &out, &lse},
                         {&dq, &dk, &dv});
  expectRejectedNamingOp(kBackward, attrs, {&wideOut, &q, &k, &v, &out, &lse},
                         {&dq, &dk, &dv});
  expectRejectedNamingOp(kBackward, attrs, {&out, &q, &k, &v, &bf16Out, &lse},
                         {&dq, &dk, &dv});
  expectRejectedNamingOp(kBackward, attrs, {&out, &q, &k, &v, &out, &longLse},
                         {&dq, &dk, &dv});
  expectRejectedNamingOp(kBackward, attrs, {&out, &q, &k, &v, &out, &lse},
                         {&dv, &dk, &dv});
  expectRejectedNamingOp(kBackward, attrs, {&out, &q, &k, &v, &out, &lse},
                         {&dq, &bf16Dk, &dv});
  expectRejectedNamingOp(kBackward, attrs, {&out, &q, &k, &v, &out, &lse},
                         {&dq, &dk, &dq});
  expectRejectedNamingOp(kBackward, causal, {&out, &shortQ, &k, &v, &out, &lse},
                         {&dq, &dk, &dv});
  expectRejectedNamingOp(kBackward, attrs, {&out, &q, &k, &v, &out},
                         {&dq, &dk, &dv});
}

/// The CPU kernels take any head dim; the CUDA kernels refuse those above
/// 128, in one line, before any CUDA call.
TEST(CudaAttentionChecks, HeadDimsAbove128AreRefused) {
  HostTensor q = randomTensor(DType::F32, {1, 2, 130}, 1);
  HostTensor k = randomTensor(DType::F32, {1, 2, 130}, 2);
  HostTensor v = randomTensor(DType::F32, {1, 2, 8}, 3);
  HostTensor wideV = randomTensor(DType::F32, {1, 2, 200}, 4);
  HostTensor smallQ = randomTensor(DType::F32, {1, 2, 8}, 5);
  HostTensor smallK = randomTensor(DType::F32, {1, 2, 8}, 6);
  HostTensor out(DType::F32, {1, 2, 8}), wideOut(DType::F32, {1, 2, 200});
  HostTensor lse(DType::F32, {1, 2});
  HostTensor dq(DType::F32, {1, 2, 130}), dk(DType::F32, {1, 2, 130}),
      dv(DType::F32, {1, 2, 8});
  AttrMap attrs = makeAttrs({{"scale", 0.1}});
  struct Call {
    std::string_view op;
    std::vector<TensorRef> operands, results;
    std::string message;
  };
  const Call calls[] = {
      {kForward,
       {q.ref, k.ref, v.ref},
       {out.ref, lse.ref},
       "nn.attention: the CUDA kernel takes head dims up to 128, got 130 "
       "(q, k) and 8 (v)"},
      {kForward,
       {smallQ.ref, smallK.ref, wideV.ref},
       {wideOut.ref, lse.ref},
       "nn.attention: the CUDA kernel takes head dims up to 128, got 8 "
       "(q, k) and 200 (v)"},
      {kBackward,
       {out.ref, q.ref, k.ref, v.ref, out.ref, lse.ref},
       {dq.ref, dk.ref, dv.ref},
       "nn.attention_grad: the CUDA kernel takes head dims up to 128, got "
       "130 (q, k) and 8 (v)"},
  };
  for (const Call &call : calls) {
    EXPECT_NO_THROW(findCpuKernel(call.op)(attrs, call.operands, call.results))
        << call.op;
    CudaContext ctx;
    try {
      findCudaKernel(call.op)(attrs, call.operands, call.results, ctx);
      ADD_FAILURE() << call.op << " did not throw";
    } catch (const RuntimeError &error) {
      EXPECT_EQ(std::string(error.what()), call.message);
    }
  }
}

TEST(CudaAttentionChecks, WithoutADeviceTheFirstCudaCallFailsNamingTheOp) {
  std::string reason = noDeviceReason();
  if (reason.empty())
    GTEST_SKIP() << "a CUDA device is present";
  HostTensor q = randomTensor(DType::F32, {1, 4, 8}, 1);
  HostTensor out(DType::F32, {1, 4, 8}), lse(DType::F32, {1, 4});
  HostTensor dq(DType::F32, {1, 4, 8}), dk(DType::F32, {1, 4, 8}),
      dv(DType::F32, {1, 4, 8});
  AttrMap attrs = makeAttrs({{"scale", 0.5}});
  struct Call {
    std::string_view op;
    std::vector<TensorRef> operands, results;
  };
  const Call calls[] = {
      {kForward, {q.ref, q.ref, q.ref}, {out.ref, lse.ref}},
      {kBackward,
       {q.ref, q.ref, q.ref, q.ref, q.ref, lse.ref},
       {dq.ref, dk.ref, dv.ref}},
  };
  for (const Call &call : calls) {
    std::string prefix = std::string(call.op) + ": cudaError";
    CudaContext ctx;
    try {
      findCudaKernel(call.op)(attrs, call.operands, call.results, ctx);
      ADD_FAILURE() << call.op << " did not throw";
    } catch (const RuntimeError &error) {
      std::string message = error.what();
      EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

} // namespace
} // namespace zerosbp::runtime::gputest
