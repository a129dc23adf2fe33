//===- cpu_attention_kernel_test.cc - nn.attention and its gradient -------===//
//
// The fused attention kernels against a float64 reference written here
// (naive softmax attention and its hand-derived gradients, themselves
// checked by central differences), against the unfused chain of CPU
// kernels they replace, their checks' messages, and their determinism.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include "runtime/core/Error.h"

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

namespace zerosbp::runtime::test {
namespace {

/// One attention problem: the batch dims, Sq, Sk, D and Dv.
struct Problem {
  std::vector<int64_t> batchDims;
  int64_t queries, keys, headDim, valueDim;
  bool causal;

  int64_t batch() const { return productOf(batchDims); }
  double scale() const {
    return 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(headDim, 1)));
  }
  std::vector<int64_t> shape(std::initializer_list<int64_t> tail) const {
    std::vector<int64_t> shape = batchDims;
    shape.insert(shape.end(), tail);
    return shape;
  }
  AttrMap attrs() const {
    AttrMap attrs;
    attrs.set("scale", scale());
    if (causal)
      attrs.set("causal", true);
    return attrs;
  }
  std::string name() const {
    return "batch " + std::to_string(batch()) + " Sq " +
           std::to_string(queries) + " Sk " + std::to_string(keys) + " D " +
           std::to_string(headDim) + " Dv " + std::to_string(valueDim) +
           (causal ? " causal" : "");
  }
};

//===----------------------------------------------------------------------===//
// Float64 reference
//===----------------------------------------------------------------------===//

struct Forward {
  std::vector<double> result, lse, probs; // probs: batch x Sq x Sk
};

bool visible(const Problem &p, int64_t i, int64_t j) {
  return !p.causal || j <= i;
}

Forward referenceForward(const Problem &p, const std::vector<double> &q,
                         const std::vector<double> &k,
                         const std::vector<double> &v) {
  int64_t sq = p.queries, sk = p.keys, d = p.headDim, dv = p.valueDim;
  Forward f;
  f.result.assign(static_cast<size_t>(p.batch() * sq * dv), 0.0);
  f.lse.assign(static_cast<size_t>(p.batch() * sq), 0.0);
  f.probs.assign(static_cast<size_t>(p.batch() * sq * sk), 0.0);
  std::vector<double> s(static_cast<size_t>(sk));
  for (int64_t b = 0; b < p.batch(); ++b) {
    for (int64_t i = 0; i < sq; ++i) {
      double max = -INFINITY;
      for (int64_t j = 0; j < sk; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += q[(b * sq + i) * d + c] * k[(b * sk + j) * d + c];
        s[j] = p.scale() * dot;
        if (visible(p, i, j))
          max = std::max(max, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < sk; ++j)
        if (visible(p, i, j))
          sum += std::exp(s[j] - max);
      double lse = max + std::log(sum);
      f.lse[b * sq + i] = lse;
      for (int64_t j = 0; j < sk; ++j) {
        if (!visible(p, i, j))
          continue;
        double prob = std::exp(s[j] - lse);
        f.probs[(b * sq + i) * sk + j] = prob;
        for (int64_t c = 0; c < dv; ++c)
          f.result[(b * sq + i) * dv + c] += prob * v[(b * sk + j) * dv + c];
      }
    }
  }
  return f;
}

struct Gradients {
  std::vector<double> q, k, v;
};

/// The hand-derived gradients: D_i = dO_i . O_i, dp = dO v^T,
/// ds = p (dp - D), dq = scale ds k, dk = scale ds^T q, dv = p^T dO.
Gradients referenceBackward(const Problem &p, const std::vector<double> &dout,
                            const std::vector<double> &q,
                            const std::vector<double> &k,
                            const std::vector<double> &v) {
  int64_t sq = p.queries, sk = p.keys, d = p.headDim, dv = p.valueDim;
  Forward f = referenceForward(p, q, k, v);
  Gradients g;
  g.q.assign(q.size(), 0.0);
  g.k.assign(k.size(), 0.0);
  g.v.assign(v.size(), 0.0);
  for (int64_t b = 0; b < p.batch(); ++b) {
    for (int64_t i = 0; i < sq; ++i) {
      const double *dOut = dout.data() + (b * sq + i) * dv;
      double delta = 0;
      for (int64_t c = 0; c < dv; ++c)
        delta += dOut[c] * f.result[(b * sq + i) * dv + c];
      for (int64_t j = 0; j < sk; ++j) {
        if (!visible(p, i, j))
          continue;
        double prob = f.probs[(b * sq + i) * sk + j];
        double dp = 0;
        for (int64_t c = 0; c < dv; ++c) {
          dp += dOut[c] * v[(b * sk + j) * dv + c];
          g.v[(b * sk + j) * dv + c] += prob * dOut[c];
        }
        double ds = prob * (dp - delta);
        for (int64_t c = 0; c < d; ++c) {
          g.q[(b * sq + i) * d + c] += p.scale() * ds * k[(b * sk + j) * d + c];
          g.k[(b * sk + j) * d + c] += p.scale() * ds * q[(b * sq + i) * d + c];
        }
      }
    }
  }
  return g;
}

//===----------------------------------------------------------------------===//
// Running the kernels
//===----------------------------------------------------------------------===//

struct Inputs {
  Buffer q, k, v, dout;
};

Inputs makeInputs(const Problem &p, DType type, unsigned seed) {
  return {randomTensor(type, p.shape({p.queries, p.headDim}), seed),
          randomTensor(type, p.shape({p.keys, p.headDim}), seed + 1),
          randomTensor(type, p.shape({p.keys, p.valueDim}), seed + 2),
          randomTensor(type, p.shape({p.queries, p.valueDim}), seed + 3)};
}

struct Outputs {
  Buffer result, lse, dq, dk, dv;
};

/// nn.attention, then nn.attention_grad on its result and lse.
Outputs runFused(const Problem &p, const Inputs &in) {
  DType type = in.q.ref.dtype;
  Outputs out{Buffer(type, p.shape({p.queries, p.valueDim})),
              Buffer(DType::F32, p.shape({p.queries})),
              Buffer(type, in.q.ref.shape), Buffer(type, in.k.ref.shape),
              Buffer(type, in.v.ref.shape)};
  runKernel("nn.attention", p.attrs(), {in.q.ref, in.k.ref, in.v.ref},
            {out.result.ref, out.lse.ref});
  runKernel(
      "nn.attention_grad", p.attrs(),
      {in.dout.ref, in.q.ref, in.k.ref, in.v.ref, out.result.ref, out.lse.ref},
      {out.dq.ref, out.dk.ref, out.dv.ref});
  return out;
}

/// The chain nn.attention replaces: batch_matmul(q, k^T), scale, softmax,
/// batch_matmul(p, v), and its backward as autodiff builds it.
Outputs runUnfused(const Problem &p, const Inputs &in) {
  DType type = in.q.ref.dtype;
  std::vector<int64_t> square = p.shape({p.queries, p.keys});
  Buffer scores(type, square), scaled(type, square), probs(type, square);
  Buffer dprobs(type, square), dscaled(type, square), dscores(type, square);
  Outputs out{Buffer(type, p.shape({p.queries, p.valueDim})),
              Buffer(DType::F32, p.shape({p.queries})),
              Buffer(type, in.q.ref.shape), Buffer(type, in.k.ref.shape),
              Buffer(type, in.v.ref.shape)};
  AttrMap transposeRhs = makeAttrs({{"transpose_rhs", true}});
  AttrMap transposeLhs = makeAttrs({{"transpose_lhs", true}});
  AttrMap scale = makeAttrs({{"factor", p.scale()}});
  AttrMap softmax;
  if (p.causal)
    softmax.set("causal", true);
  runKernel("nn.batch_matmul", transposeRhs, {in.q.ref, in.k.ref},
            {scores.ref});
  runKernel("nn.scale", scale, {scores.ref}, {scaled.ref});
  runKernel("nn.softmax", softmax, {scaled.ref}, {probs.ref});
  runKernel("nn.batch_matmul", {}, {probs.ref, in.v.ref}, {out.result.ref});
  runKernel("nn.batch_matmul", transposeRhs, {in.dout.ref, in.v.ref},
            {dprobs.ref});
  runKernel("nn.softmax_grad", softmax, {dprobs.ref, probs.ref}, {dscaled.ref});
  runKernel("nn.scale", scale, {dscaled.ref}, {dscores.ref});
  runKernel("nn.batch_matmul", {}, {dscores.ref, in.k.ref}, {out.dq.ref});
  runKernel("nn.batch_matmul", transposeLhs, {dscores.ref, in.q.ref},
            {out.dk.ref});
  runKernel("nn.batch_matmul", transposeLhs, {probs.ref, in.dout.ref},
            {out.dv.ref});
  return out;
}

/// Tolerances as |error| <= atol + rtol |expected|.
struct Tolerance {
  double atol, rtol;
};

void expectMatchesReference(const Problem &p, DType type, Tolerance forward,
                            Tolerance backward) {
  Inputs in = makeInputs(p, type, 11);
  Outputs out = runFused(p, in);
  std::string what = p.name() + " " + dtypeName(type);
  Forward f = referenceForward(p, in.q.values(), in.k.values(), in.v.values());
  expectClose(out.result.values(), f.result, forward.atol, forward.rtol,
              what + " result");
  // lse is f32 whatever the storage type: only the inputs' rounding.
  expectClose(out.lse.values(), f.lse, 1e-5, 1e-5, what + " lse");
  Gradients g = referenceBackward(p, in.dout.values(), in.q.values(),
                                  in.k.values(), in.v.values());
  expectClose(out.dq.values(), g.q, backward.atol, backward.rtol,
              what + " grad_q");
  expectClose(out.dk.values(), g.k, backward.atol, backward.rtol,
              what + " grad_k");
  expectClose(out.dv.values(), g.v, backward.atol, backward.rtol,
              what + " grad_v");
}

/// Shapes around the 64-wide tiles: one query or key, partial tiles, more
/// queries than keys and fewer, D != Dv, head dims that are not multiples
/// of the vector width, one to three batch dims.
const Problem kProblems[] = {
    {{2}, 1, 1, 8, 8, true},          // one query, one key
    {{2}, 1, 1, 8, 8, false},         //
    {{3}, 7, 7, 16, 16, true},        // less than a tile
    {{2, 3}, 65, 65, 32, 16, true},   // a tile and one row, Dv < D
    {{1, 2}, 130, 130, 64, 64, true}, // two tiles and two rows
    {{2}, 130, 130, 32, 32, false},   //
    {{3}, 7, 130, 8, 24, false},      // few queries, many keys
    {{2}, 130, 65, 40, 33, false},    // more queries than keys, odd dims
    {{2, 1, 2}, 65, 7, 5, 70, false}, // three batch dims, D < Dv
    {{1}, 200, 200, 24, 8, true},     // a partial fourth tile
};

TEST(CpuAttentionKernel, MatchesFloat64ReferenceF32) {
  // Round-off of f32 sums over at most 200 keys and 70 dims.
  for (const Problem &p : kProblems)
    expectMatchesReference(p, DType::F32, {5e-7, 2e-6}, {1e-6, 1e-5});
}

TEST(CpuAttentionKernel, MatchesFloat64ReferenceHalfTypes) {
  // The reference reads the same rounded inputs; the kernel stores each
  // result rounded once: half an ulp of bf16 (2^-9) or f16 (2^-12) relative,
  // plus, for the gradients, the rounded result that D_i is computed from.
  for (const Problem &p : kProblems) {
    expectMatchesReference(p, DType::BF16, {1e-3, 4e-3}, {5e-3, 5e-3});
    expectMatchesReference(p, DType::F16, {2e-4, 5e-4}, {1e-3, 1e-3});
  }
}

TEST(CpuAttentionKernel, ReferenceGradientsMatchFiniteDifferences) {
  // The hand-derived formulas the kernels are checked against, checked in
  // turn: d/dx sum(attention(q, k, v) * dout).
  for (const Problem &p :
       {Problem{{2}, 5, 5, 3, 4, true}, Problem{{1, 2}, 3, 6, 4, 2, false}}) {
    Inputs in = makeInputs(p, DType::F64, 5);
    std::vector<double> q = in.q.values(), k = in.k.values(), v = in.v.values(),
                        dout = in.dout.values();
    Gradients g = referenceBackward(p, dout, q, k, v);
    auto loss = [&](const std::vector<double> &qx,
                    const std::vector<double> &kx,
                    const std::vector<double> &vx) {
      std::vector<double> y = referenceForward(p, qx, kx, vx).result;
      double total = 0;
      for (size_t i = 0; i < y.size(); ++i)
        total += y[i] * dout[i];
      return total;
    };
    expectClose(
        g.q,
        numericGradient(
            [&](const std::vector<double> &x) { return loss(x, k, v); }, q),
        1e-7, 1e-6, p.name() + " q");
    expectClose(
        g.k,
        numericGradient(
            [&](const std::vector<double> &x) { return loss(q, x, v); }, k),
        1e-7, 1e-6, p.name() + " k");
    expectClose(
        g.v,
        numericGradient(
            [&](const std::vector<double> &x) { return loss(q, k, x); }, v),
        1e-7, 1e-6, p.name() + " v");
  }
}

TEST(CpuAttentionKernel, MatchesUnfusedKernels) {
  // Both compute in f32: they differ by the order of their roundings only.
  for (const Problem &p : {Problem{{2, 2}, 130, 130, 32, 32, true},
                           Problem{{3}, 65, 65, 64, 64, false},
                           Problem{{2}, 100, 100, 16, 48, true}}) {
    Inputs in = makeInputs(p, DType::F32, 21);
    Outputs fused = runFused(p, in);
    Outputs unfused = runUnfused(p, in);
    expectClose(fused.result.values(), unfused.result.values(), 2e-7, 2e-6,
                p.name() + " result");
    expectClose(fused.dq.values(), unfused.dq.values(), 5e-7, 1e-5,
                p.name() + " grad_q");
    expectClose(fused.dk.values(), unfused.dk.values(), 5e-7, 1e-5,
                p.name() + " grad_k");
    expectClose(fused.dv.values(), unfused.dv.values(), 5e-7, 1e-5,
                p.name() + " grad_v");
  }
}

TEST(CpuAttentionKernel, LargeScoresDoNotOverflow) {
  // Scores of +-100 overflow exp without the running max.
  Problem p{{1}, 70, 70, 4, 4, true};
  Inputs in = makeInputs(p, DType::F32, 31);
  for (int64_t i = 0; i < in.q.numel(); ++i)
    in.q.set(i, in.q.get(i) * 50.0);
  Outputs out = runFused(p, in);
  Forward f = referenceForward(p, in.q.values(), in.k.values(), in.v.values());
  expectClose(out.result.values(), f.result, 1e-5, 1e-4, "result");
  expectClose(out.lse.values(), f.lse, 1e-4, 1e-5, "lse");
  Gradients g = referenceBackward(p, in.dout.values(), in.q.values(),
                                  in.k.values(), in.v.values());
  expectClose(out.dq.values(), g.q, 1e-4, 1e-3, "grad_q");
  expectClose(out.dk.values(), g.k, 1e-3, 1e-3, "grad_k");
  expectClose(out.dv.values(), g.v, 1e-5, 1e-4, "grad_v");
}

//===----------------------------------------------------------------------===//
// Determinism
//===----------------------------------------------------------------------===//

void expectBitEqual(const Buffer &actual, const Buffer &expected,
                    int64_t offsetBytes, const std::string &what) {
  EXPECT_EQ(
      std::memcmp(actual.ref.data,
                  static_cast<const char *>(expected.ref.data) + offsetBytes,
                  actual.ref.bytes()),
      0)
      << what;
}

/// Elements [begin, begin + count) of the leading dim of `buffer`.
Buffer leadingSlice(const Buffer &buffer, int64_t begin, int64_t count) {
  std::vector<int64_t> shape = buffer.ref.shape;
  int64_t rowBytes = static_cast<int64_t>(buffer.ref.bytes()) / shape[0];
  shape[0] = count;
  Buffer slice(buffer.ref.dtype, shape);
  std::memcpy(slice.ref.data,
              static_cast<const char *>(buffer.ref.data) + begin * rowBytes,
              slice.ref.bytes());
  return slice;
}

TEST(CpuAttentionKernel, DeterministicAcrossRunsThreadsAndSlices) {
  for (DType type : {DType::F32, DType::BF16}) {
    for (bool causal : {true, false}) {
      Problem p{{4, 2}, 130, 130, 32, 24, causal};
      std::string what = p.name() + " " + dtypeName(type);
      Inputs in = makeInputs(p, type, 41);
      setCpuKernelThreads(1);
      Outputs first = runFused(p, in);
      setCpuKernelThreads(2);
      Outputs second = runFused(p, in);
      setCpuKernelThreads(1);
      for (auto [a, b, name] :
           {std::make_tuple(&second.result, &first.result, "result"),
            std::make_tuple(&second.lse, &first.lse, "lse"),
            std::make_tuple(&second.dq, &first.dq, "grad_q"),
            std::make_tuple(&second.dk, &first.dk, "grad_k"),
            std::make_tuple(&second.dv, &first.dv, "grad_v")})
        expectBitEqual(*a, *b, 0, what + " rerun " + name);

      // A rank holding batch rows 1 and 2 of 4 computes those rows' bits.
      Problem part = p;
      part.batchDims[0] = 2;
      Inputs partIn{leadingSlice(in.q, 1, 2), leadingSlice(in.k, 1, 2),
                    leadingSlice(in.v, 1, 2), leadingSlice(in.dout, 1, 2)};
      Outputs partOut = runFused(part, partIn);
      for (auto [a, b, name] :
           {std::make_tuple(&partOut.result, &first.result, "result"),
            std::make_tuple(&partOut.lse, &first.lse, "lse"),
            std::make_tuple(&partOut.dq, &first.dq, "grad_q"),
            std::make_tuple(&partOut.dk, &first.dk, "grad_k"),
            std::make_tuple(&partOut.dv, &first.dv, "grad_v")}) {
        int64_t rowBytes = static_cast<int64_t>(b->ref.bytes()) / 4;
        expectBitEqual(*a, *b, rowBytes, what + " slice " + name);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Runs `op` and expects a RuntimeError with exactly `message`.
void expectMessage(std::string_view op, const AttrMap &attrs,
                   const std::vector<TensorRef> &operands,
                   const std::vector<TensorRef> &results,
                   const std::string &message) {
  KernelFn kernel = findCpuKernel(op);
  ASSERT_NE(kernel, nullptr) << op;
  try {
    kernel(attrs, operands, results);
    ADD_FAILURE() << op << " did not throw; expected: " << message;
  } catch (const RuntimeError &error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

TEST(CpuAttentionKernel, ForwardErrors) {
  const std::string op = "nn.attention";
  AttrMap attrs = makeAttrs({{"scale", 0.5}});
  Buffer q(DType::F32, {2, 7, 8}), k(DType::F32, {2, 5, 8}),
      v(DType::F32, {2, 5, 16});
  Buffer result(DType::F32, {2, 7, 16}), lse(DType::F32, {2, 7});
  auto expect = [&](const AttrMap &a, const std::vector<TensorRef> &operands,
                    const std::vector<TensorRef> &results,
                    const std::string &message) {
    expectMessage(op, a, operands, results, op + ": " + message);
  };
  // The good call runs.
  runKernel(op, attrs, {q.ref, k.ref, v.ref}, {result.ref, lse.ref});

  expect(attrs, {q.ref, k.ref}, {result.ref, lse.ref},
         "expects 3 operands and 2 results, got 2 and 2");
  expect(attrs, {q.ref, k.ref, v.ref}, {result.ref},
         "expects 3 operands and 2 results, got 3 and 1");
  Buffer flat(DType::F32, {7, 8});
  expect(attrs, {flat.ref, k.ref, v.ref}, {result.ref, lse.ref},
         "q must have batch dims, queries and a head dim, got shape [7, 8]");
  Buffer ints(DType::I64, {2, 7, 8});
  expect(attrs, {ints.ref, k.ref, v.ref}, {result.ref, lse.ref},
         "q has element type i64, expected f32, f16 or bf16");
  Buffer kHalf(DType::BF16, {2, 5, 8});
  expect(attrs, {q.ref, kHalf.ref, v.ref}, {result.ref, lse.ref},
         "k has element type bf16, expected f32");
  Buffer kNarrow(DType::F32, {2, 5, 4});
  expect(attrs, {q.ref, kNarrow.ref, v.ref}, {result.ref, lse.ref},
         "k has shape [2, 5, 4], expected [2, 5, 8]");
  Buffer kBatch(DType::F32, {3, 5, 8});
  expect(attrs, {q.ref, kBatch.ref, v.ref}, {result.ref, lse.ref},
         "k has shape [3, 5, 8], expected [2, 5, 8]");
  Buffer vKeys(DType::F32, {2, 6, 16});
  expect(attrs, {q.ref, k.ref, vKeys.ref}, {result.ref, lse.ref},
         "v has shape [2, 6, 16], expected [2, 5, 16]");
  Buffer wrongResult(DType::F32, {2, 7, 8});
  expect(attrs, {q.ref, k.ref, v.ref}, {wrongResult.ref, lse.ref},
         "result has shape [2, 7, 8], expected [2, 7, 16]");
  Buffer halfResult(DType::F16, {2, 7, 16});
  expect(attrs, {q.ref, k.ref, v.ref}, {halfResult.ref, lse.ref},
         "result has element type f16, expected f32");
  Buffer halfLse(DType::BF16, {2, 7});
  expect(attrs, {q.ref, k.ref, v.ref}, {result.ref, halfLse.ref},
         "lse has element type bf16, expected f32");
  Buffer wrongLse(DType::F32, {2, 7, 1});
  expect(attrs, {q.ref, k.ref, v.ref}, {result.ref, wrongLse.ref},
         "lse has shape [2, 7, 1], expected [2, 7]");
  // lse stays f32 when the rest is bf16.
  Buffer qb(DType::BF16, {2, 7, 8}), kb(DType::BF16, {2, 5, 8}),
      vb(DType::BF16, {2, 5, 16}), resultB(DType::BF16, {2, 7, 16}),
      lseB(DType::BF16, {2, 7});
  expect(attrs, {qb.ref, kb.ref, vb.ref}, {resultB.ref, lseB.ref},
         "lse has element type bf16, expected f32");
  runKernel(op, attrs, {qb.ref, kb.ref, vb.ref}, {resultB.ref, lse.ref});

  expect({}, {q.ref, k.ref, v.ref}, {result.ref, lse.ref},
         "attribute 'scale' is missing");
  expect(makeAttrs({{"scale", std::string("half")}}), {q.ref, k.ref, v.ref},
         {result.ref, lse.ref}, "attribute 'scale' is not a number");
  expect(makeAttrs({{"scale", static_cast<double>(INFINITY)}}),
         {q.ref, k.ref, v.ref}, {result.ref, lse.ref},
         "scale must be a finite f32, got inf");
  expect(makeAttrs({{"scale", static_cast<double>(NAN)}}),
         {q.ref, k.ref, v.ref}, {result.ref, lse.ref},
         "scale must be a finite f32, got nan");
  expect(makeAttrs({{"scale", 1e300}}), {q.ref, k.ref, v.ref},
         {result.ref, lse.ref}, "scale must be a finite f32, got 1e+300");
  // An integral scale may arrive as an integer (JSON writes 1.0 as 1).
  runKernel(op, makeAttrs({{"scale", int64_t{1}}}), {q.ref, k.ref, v.ref},
            {result.ref, lse.ref});
  expect(makeAttrs({{"scale", 0.5}, {"causal", true}}), {q.ref, k.ref, v.ref},
         {result.ref, lse.ref},
         "causal needs as many queries as keys, got 7 and 5");
}

TEST(CpuAttentionKernel, GradientErrors) {
  const std::string op = "nn.attention_grad";
  AttrMap attrs = makeAttrs({{"scale", 0.5}});
  Buffer q(DType::F32, {2, 7, 8}), k(DType::F32, {2, 5, 8}),
      v(DType::F32, {2, 5, 16}), result(DType::F32, {2, 7, 16}),
      dout(DType::F32, {2, 7, 16}), lse(DType::F32, {2, 7});
  Buffer dq(DType::F32, {2, 7, 8}), dk(DType::F32, {2, 5, 8}),
      dv(DType::F32, {2, 5, 16});
  auto expect = [&](const std::vector<TensorRef> &operands,
                    const std::vector<TensorRef> &results,
                    const std::string &message) {
    expectMessage(op, attrs, operands, results, op + ": " + message);
  };
  runKernel(op, attrs, {dout.ref, q.ref, k.ref, v.ref, result.ref, lse.ref},
            {dq.ref, dk.ref, dv.ref});

  expect({dout.ref, q.ref, k.ref, v.ref, result.ref}, {dq.ref, dk.ref, dv.ref},
         "expects 6 operands and 3 results, got 5 and 3");
  Buffer wrongDout(DType::F32, {2, 7, 8});
  expect({wrongDout.ref, q.ref, k.ref, v.ref, result.ref, lse.ref},
         {dq.ref, dk.ref, dv.ref},
         "grad_output has shape [2, 7, 8], expected [2, 7, 16]");
  Buffer halfDout(DType::BF16, {2, 7, 16});
  expect({halfDout.ref, q.ref, k.ref, v.ref, result.ref, lse.ref},
         {dq.ref, dk.ref, dv.ref},
         "grad_output has element type bf16, expected f32");
  Buffer wrongResult(DType::F32, {2, 6, 16});
  expect({dout.ref, q.ref, k.ref, v.ref, wrongResult.ref, lse.ref},
         {dq.ref, dk.ref, dv.ref},
         "result has shape [2, 6, 16], expected [2, 7, 16]");
  Buffer halfLse(DType::F16, {2, 7});
  expect({dout.ref, q.ref, k.ref, v.ref, result.ref, halfLse.ref},
         {dq.ref, dk.ref, dv.ref}, "lse has element type f16, expected f32");
  Buffer wrongLse(DType::F32, {2, 5});
  expect({dout.ref, q.ref, k.ref, v.ref, result.ref, wrongLse.ref},
         {dq.ref, dk.ref, dv.ref}, "lse has shape [2, 5], expected [2, 7]");
  Buffer wrongDk(DType::F32, {2, 7, 8});
  expect({dout.ref, q.ref, k.ref, v.ref, result.ref, lse.ref},
         {dq.ref, wrongDk.ref, dv.ref},
         "grad_k has shape [2, 7, 8], expected [2, 5, 8]");
  Buffer halfDq(DType::BF16, {2, 7, 8});
  expect({dout.ref, q.ref, k.ref, v.ref, result.ref, lse.ref},
         {halfDq.ref, dk.ref, dv.ref},
         "grad_q has element type bf16, expected f32");
  Buffer wrongDv(DType::F32, {2, 5, 8});
  expect({dout.ref, q.ref, k.ref, v.ref, result.ref, lse.ref},
         {dq.ref, dk.ref, wrongDv.ref},
         "grad_v has shape [2, 5, 8], expected [2, 5, 16]");
  Buffer kBatch(DType::F32, {1, 5, 8});
  expect({dout.ref, q.ref, kBatch.ref, v.ref, result.ref, lse.ref},
         {dq.ref, dk.ref, dv.ref}, "k has shape [1, 5, 8], expected [2, 5, 8]");
  expectMessage(op, makeAttrs({{"scale", 0.5}, {"causal", true}}),
                {dout.ref, q.ref, k.ref, v.ref, result.ref, lse.ref},
                {dq.ref, dk.ref, dv.ref},
                op + ": causal needs as many queries as keys, got 7 and 5");
}

TEST(CpuAttentionKernel, EmptyShapes) {
  // No keys: every row's sum is empty, so the result is 0 and lse -inf.
  Problem p{{2}, 3, 0, 4, 5, false};
  Inputs in = makeInputs(p, DType::F32, 51);
  Outputs out = runFused(p, in);
  for (double x : out.result.values())
    EXPECT_EQ(x, 0.0);
  for (double x : out.lse.values())
    EXPECT_EQ(x, -INFINITY);
  for (double x : out.dq.values())
    EXPECT_EQ(x, 0.0);
  // No queries: nothing attends, so k and v get no gradient.
  Problem none{{2}, 0, 4, 4, 5, false};
  Inputs noneIn = makeInputs(none, DType::F32, 52);
  Outputs noneOut = runFused(none, noneIn);
  for (double x : noneOut.dk.values())
    EXPECT_EQ(x, 0.0);
  for (double x : noneOut.dv.values())
    EXPECT_EQ(x, 0.0);
}

} // namespace
} // namespace zerosbp::runtime::test
