//===- cpu_matmul_epilogue_test.cc - the fused matmul epilogues on the CPU ===//
//
// nn.matmul_bias and nn.matmul_bias_gelu:
// - against a float64 reference for every transpose combination: f32
//   results within the rounding-error bound of an f32 dot product,
//   (k + 2) 2^-24 sum |a b| + |bias| (and GELU's own few ulps); f16 and
//   bf16 results one rounding to the storage type (2^-11 and 2^-8
//   relative) more;
// - in f32, bit for bit the unfused kernels: nn.matmul, nn.bias_add,
//   nn.gelu;
// - in f16 and bf16, bit for bit the f32 computation on the same values
//   rounded once;
// - empty shapes, and the checks' exact messages.
// nn.matmul_add (op(lhs) op(rhs) + addend, zero-fuse-accumulation's op):
// - against the float64 reference, (k + 2) 2^-24 (sum |a b| + |addend|)
//   in f32 and one rounding to the storage type more in f16 and bf16;
// - in f32, bit for bit nn.matmul then nn.add (total + product);
// - written over its addend (the running total in place), the same bits as
//   into a separate result;
// - the checks' messages.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include "runtime/core/Error.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime::test {
namespace {

using Shape = std::vector<int64_t>;

constexpr const char *kBias = "nn.matmul_bias";
constexpr const char *kBiasGelu = "nn.matmul_bias_gelu";

/// PyTorch's gelu(x, approximate="tanh"), in double.
double geluTanh(double x) {
  const double beta = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(beta * (x + 0.044715 * x * x * x)));
}

/// The unit roundoff of a float type: half its ulp at 1.
double unitRoundoff(DType type) {
  switch (type) {
  case DType::BF16:
    return std::ldexp(1.0, -8);
  case DType::F16:
    return std::ldexp(1.0, -11);
  default:
    return std::ldexp(1.0, -24);
  }
}

AttrMap transposes(bool transA, bool transB) {
  return makeAttrs({{"transpose_lhs", transA}, {"transpose_rhs", transB}});
}

/// The operands of an (m, k) x (k, n) product stored as the transposes ask.
struct Operands {
  Buffer lhs, rhs, bias;
};

Operands makeOperands(DType type, int64_t m, int64_t n, int64_t k, bool transA,
                      bool transB, unsigned seed) {
  return {randomTensor(type, transA ? Shape{k, m} : Shape{m, k}, seed),
          randomTensor(type, transB ? Shape{n, k} : Shape{k, n}, seed + 1),
          randomTensor(type, {n}, seed + 2)};
}

/// A result tensor whose bytes are not zero, so that an unwritten element
/// shows.
Buffer freshResult(DType type, Shape shape) {
  Buffer buffer(type, std::move(shape));
  std::memset(buffer.ref.data, 0x5a, buffer.ref.bytes());
  return buffer;
}

/// Runs an epilogue op: {result} for matmul_bias, {result, pre_activation}
/// for matmul_bias_gelu.
std::vector<Buffer> runEpilogue(const char *op, bool transA, bool transB,
                                const Operands &in, int64_t m, int64_t n) {
  std::vector<Buffer> results;
  results.push_back(freshResult(in.lhs.ref.dtype, {m, n}));
  if (std::string(op) == kBiasGelu)
    results.push_back(freshResult(in.lhs.ref.dtype, {m, n}));
  std::vector<TensorRef> refs;
  for (const Buffer &result : results)
    refs.push_back(result.ref);
  runKernel(op, transposes(transA, transB),
            {in.lhs.ref, in.rhs.ref, in.bias.ref}, refs);
  return results;
}

/// z = op(lhs) op(rhs) + bias in double, and sum |a b| + |bias| per element.
struct Reference {
  std::vector<double> z, magnitude;
};

Reference reference(const Operands &in, int64_t m, int64_t n, int64_t k,
                    bool transA, bool transB) {
  std::vector<double> a = in.lhs.values(), b = in.rhs.values(),
                      bias = in.bias.values();
  Reference ref;
  ref.z.resize(static_cast<size_t>(m * n));
  ref.magnitude.resize(ref.z.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias[j], magnitude = std::fabs(bias[j]);
      for (int64_t p = 0; p < k; ++p) {
        double product = a[transA ? p * m + i : i * k + p] *
                         b[transB ? j * k + p : p * n + j];
        sum += product;
        magnitude += std::fabs(product);
      }
      ref.z[i * n + j] = sum;
      ref.magnitude[i * n + j] = magnitude;
    }
  return ref;
}

/// Expects |got - want| <= bound element by element.
void expectWithin(const std::vector<double> &got,
                  const std::vector<double> &want,
                  const std::vector<double> &bound, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= bound[i]) && failures++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i]
                    << ", expected " << want[i] << " within " << bound[i];
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << got.size()
                         << " elements out of bounds";
}

void expectSameBits(const Buffer &got, const Buffer &want,
                    const std::string &what) {
  ASSERT_EQ(got.ref.dtype, want.ref.dtype) << what;
  ASSERT_EQ(got.ref.shape, want.ref.shape) << what;
  EXPECT_EQ(std::memcmp(got.ref.data, want.ref.data, got.ref.bytes()), 0)
      << what << ": the bytes differ";
}

std::string label(const char *op, DType type, bool transA, bool transB) {
  return std::string(op) + " " + dtypeName(type) + " " + (transA ? "T" : "N") +
         (transB ? "T" : "N");
}

TEST(CpuMatmulEpilogue, MatchesFloat64ReferenceEveryTranspose) {
  // op(lhs) 37 x 53, op(rhs) 53 x 29: z spreads over about [-6, 6], where
  // GELU bends.
  const int64_t m = 37, n = 29, k = 53;
  unsigned seed = 1;
  for (DType type : {DType::F32, DType::BF16, DType::F16}) {
    // The storage type's rounding of z and of y, on top of f32's errors.
    double storage = type == DType::F32 ? 0.0 : unitRoundoff(type);
    double subnormal = type == DType::F16 ? std::ldexp(1.0, -25) : 0.0;
    double u = unitRoundoff(DType::F32);
    for (bool transA : {false, true}) {
      for (bool transB : {false, true}) {
        Operands in = makeOperands(type, m, n, k, transA, transB, seed);
        seed += 3;
        Reference ref = reference(in, m, n, k, transA, transB);
        std::vector<double> zBound(ref.z.size()), y(ref.z.size()),
            yBound(ref.z.size());
        for (size_t i = 0; i < ref.z.size(); ++i) {
          double zf32 = static_cast<double>(k + 2) * u * ref.magnitude[i];
          zBound[i] = zf32 + storage * (std::fabs(ref.z[i]) + zf32) + subnormal;
          y[i] = geluTanh(ref.z[i]);
          // GELU's slope is below 1.13; its evaluation (x sigmoid(2u) with
          // the CPU's exp) adds a few ulps, more where exp(-2u) is far from
          // 1.
          double yf32 = 1.13 * zf32 + (32.0 + 16.0 * std::fabs(ref.z[i])) * u *
                                          std::fabs(y[i]);
          yBound[i] = yf32 + storage * (std::fabs(y[i]) + yf32) + subnormal;
        }
        std::string what = label(kBias, type, transA, transB);
        std::vector<Buffer> biased =
            runEpilogue(kBias, transA, transB, in, m, n);
        expectWithin(biased[0].values(), ref.z, zBound, what + " result");
        what = label(kBiasGelu, type, transA, transB);
        std::vector<Buffer> fused =
            runEpilogue(kBiasGelu, transA, transB, in, m, n);
        expectWithin(fused[0].values(), y, yBound, what + " result");
        expectWithin(fused[1].values(), ref.z, zBound,
                     what + " pre_activation");
        // The two ops' z are the same computation.
        expectSameBits(fused[1], biased[0], what + " z of both ops");
      }
    }
  }
}

TEST(CpuMatmulEpilogue, F32EqualsTheUnfusedKernelsBitForBit) {
  struct Case {
    int64_t m, n, k;
  };
  // Odd sizes, and rows longer than the elementwise kernels' chunk of 1024.
  const Case cases[] = {{37, 29, 53}, {24, 1100, 96}, {1, 1, 1}};
  unsigned seed = 100;
  for (const Case &c : cases) {
    for (bool transA : {false, true}) {
      for (bool transB : {false, true}) {
        Operands in =
            makeOperands(DType::F32, c.m, c.n, c.k, transA, transB, seed);
        seed += 3;
        Buffer product(DType::F32, {c.m, c.n}), z(DType::F32, {c.m, c.n}),
            y(DType::F32, {c.m, c.n});
        runKernel("nn.matmul", transposes(transA, transB),
                  {in.lhs.ref, in.rhs.ref}, {product.ref});
        runKernel("nn.bias_add", {}, {product.ref, in.bias.ref}, {z.ref});
        runKernel("nn.gelu", {}, {z.ref}, {y.ref});
        std::string what = std::string(transA ? "T" : "N") +
                           (transB ? "T" : "N") + " m=" + std::to_string(c.m) +
                           " n=" + std::to_string(c.n) +
                           " k=" + std::to_string(c.k) + ": ";
        std::vector<Buffer> biased =
            runEpilogue(kBias, transA, transB, in, c.m, c.n);
        expectSameBits(biased[0], z, what + "matmul_bias vs matmul, bias_add");
        std::vector<Buffer> fused =
            runEpilogue(kBiasGelu, transA, transB, in, c.m, c.n);
        expectSameBits(fused[0], y,
                       what + "matmul_bias_gelu vs matmul, bias_add, gelu");
        expectSameBits(fused[1], z,
                       what + "its pre_activation vs matmul, bias_add");
      }
    }
  }
}

TEST(CpuMatmulEpilogue, HalfTypesRoundTheF32ComputationOnce) {
  const int64_t m = 19, n = 40, k = 77;
  unsigned seed = 200;
  for (DType type : {DType::BF16, DType::F16}) {
    for (bool transA : {false, true}) {
      for (bool transB : {false, true}) {
        Operands half = makeOperands(type, m, n, k, transA, transB, seed);
        seed += 3;
        // The same values in f32 (widening is exact).
        Operands wide = {
            makeTensor(DType::F32, half.lhs.ref.shape, half.lhs.values()),
            makeTensor(DType::F32, half.rhs.ref.shape, half.rhs.values()),
            makeTensor(DType::F32, half.bias.ref.shape, half.bias.values())};
        for (const char *op : {kBias, kBiasGelu}) {
          std::vector<Buffer> got = runEpilogue(op, transA, transB, half, m, n);
          std::vector<Buffer> f32 = runEpilogue(op, transA, transB, wide, m, n);
          ASSERT_EQ(got.size(), f32.size());
          for (size_t r = 0; r < got.size(); ++r) {
            // Buffer::set rounds to nearest even, as the kernels narrow.
            Buffer rounded = makeTensor(type, {m, n}, f32[r].values());
            expectSameBits(got[r], rounded,
                           label(op, type, transA, transB) + " result " +
                               std::to_string(r));
          }
        }
      }
    }
  }
}

TEST(CpuMatmulEpilogue, EmptyShapes) {
  // k = 0: an empty sum, so z is the bias in every row.
  Operands noK = {Buffer(DType::F32, {3, 0}), Buffer(DType::F32, {0, 4}),
                  makeTensor(DType::F32, {4}, {-2.0, -0.5, 0.0, 1.5})};
  std::vector<Buffer> biased = runEpilogue(kBias, false, false, noK, 3, 4);
  std::vector<Buffer> fused = runEpilogue(kBiasGelu, false, false, noK, 3, 4);
  Buffer geluOfBias(DType::F32, {4});
  runKernel("nn.gelu", {}, {noK.bias.ref}, {geluOfBias.ref});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(biased[0].get(i * 4 + j), noK.bias.get(j));
      EXPECT_EQ(fused[1].get(i * 4 + j), noK.bias.get(j));
      EXPECT_EQ(fused[0].get(i * 4 + j), geluOfBias.get(j));
    }
  // No rows, and no columns: nothing to write, and nothing fails.
  Operands noRows = {Buffer(DType::BF16, {0, 5}), Buffer(DType::BF16, {5, 4}),
                     Buffer(DType::BF16, {4})};
  EXPECT_EQ(runEpilogue(kBiasGelu, false, false, noRows, 0, 4)[0].numel(), 0);
  Operands noColumns = {Buffer(DType::F32, {3, 5}), Buffer(DType::F32, {0, 5}),
                        Buffer(DType::F32, {0})};
  EXPECT_EQ(runEpilogue(kBias, false, true, noColumns, 3, 0)[0].numel(), 0);
}

/// The message of the RuntimeError that `op` throws, or "(no error)".
std::string errorOf(const char *op, const AttrMap &attrs,
                    const std::vector<TensorRef> &operands,
                    const std::vector<TensorRef> &results) {
  try {
    runKernel(op, attrs, operands, results);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(CpuMatmulEpilogue, ErrorMessages) {
  Buffer a = randomTensor(DType::F32, {2, 3}, 1);
  Buffer b = randomTensor(DType::F32, {3, 5}, 2);
  Buffer bias = randomTensor(DType::F32, {5}, 3);
  Buffer c(DType::F32, {2, 5}), pre(DType::F32, {2, 5});
  AttrMap none;
  // Good calls first.
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b.ref, bias.ref}, {c.ref}),
            "(no error)");
  EXPECT_EQ(
      errorOf(kBiasGelu, none, {a.ref, b.ref, bias.ref}, {c.ref, pre.ref}),
      "(no error)");

  // Arity.
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b.ref}, {c.ref}),
            "nn.matmul_bias: expects 3 operands and 1 results, got 2 and 1");
  EXPECT_EQ(errorOf(kBiasGelu, none, {a.ref, b.ref, bias.ref}, {c.ref}),
            "nn.matmul_bias_gelu: expects 3 operands and 2 results, got 3 and "
            "1");
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b.ref, bias.ref}, {c.ref, pre.ref}),
            "nn.matmul_bias: expects 3 operands and 1 results, got 3 and 2");

  // Types: one float type, f32, f16 or bf16.
  Buffer a64 = randomTensor(DType::F64, {2, 3}, 4);
  Buffer aInt(DType::I64, {2, 3});
  Buffer b16 = randomTensor(DType::BF16, {3, 5}, 5);
  Buffer bias16 = randomTensor(DType::F16, {5}, 6);
  Buffer c16(DType::BF16, {2, 5});
  EXPECT_EQ(errorOf(kBias, none, {a64.ref, b.ref, bias.ref}, {c.ref}),
            "nn.matmul_bias: lhs has element type f64, expected f32, f16 or "
            "bf16");
  EXPECT_EQ(errorOf(kBias, none, {aInt.ref, b.ref, bias.ref}, {c.ref}),
            "nn.matmul_bias: lhs has element type i64, expected f32, f16 or "
            "bf16");
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b16.ref, bias.ref}, {c.ref}),
            "nn.matmul_bias: rhs has element type bf16, expected f32");
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b.ref, bias16.ref}, {c.ref}),
            "nn.matmul_bias: bias has element type f16, expected f32");
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b.ref, bias.ref}, {c16.ref}),
            "nn.matmul_bias: result has element type bf16, expected f32");
  EXPECT_EQ(
      errorOf(kBiasGelu, none, {a.ref, b.ref, bias.ref}, {c.ref, c16.ref}),
      "nn.matmul_bias_gelu: pre_activation has element type bf16, expected "
      "f32");

  // Ranks and contracting dims, with and without transposes.
  Buffer a3 = randomTensor(DType::F32, {1, 2, 3}, 7);
  Buffer b45 = randomTensor(DType::F32, {4, 5}, 8);
  Buffer b54 = randomTensor(DType::F32, {5, 4}, 9);
  EXPECT_EQ(errorOf(kBias, none, {a3.ref, b.ref, bias.ref}, {c.ref}),
            "nn.matmul_bias: operand shapes [1, 2, 3] and [3, 5] have the "
            "wrong ranks");
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b45.ref, bias.ref}, {c.ref}),
            "nn.matmul_bias: contracting dims of [2, 3] and [4, 5] differ");
  EXPECT_EQ(errorOf(kBiasGelu, transposes(false, true),
                    {a.ref, b54.ref, bias.ref}, {c.ref, pre.ref}),
            "nn.matmul_bias_gelu: contracting dims of [2, 3] and [5, 4] "
            "differ");
  EXPECT_EQ(errorOf(kBias, transposes(true, false), {a.ref, b.ref, bias.ref},
                    {c.ref}),
            "nn.matmul_bias: contracting dims of [2, 3] and [3, 5] differ");

  // The bias: 1-D of n.
  Buffer bias4 = randomTensor(DType::F32, {4}, 10);
  Buffer bias2d = randomTensor(DType::F32, {1, 5}, 11);
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b.ref, bias4.ref}, {c.ref}),
            "nn.matmul_bias: bias has shape [4], expected [5]");
  EXPECT_EQ(
      errorOf(kBiasGelu, none, {a.ref, b.ref, bias2d.ref}, {c.ref, pre.ref}),
      "nn.matmul_bias_gelu: bias has shape [1, 5], expected [5]");

  // The results: (m, n).
  Buffer wrong(DType::F32, {5, 2});
  EXPECT_EQ(errorOf(kBias, none, {a.ref, b.ref, bias.ref}, {wrong.ref}),
            "nn.matmul_bias: result has shape [5, 2], expected [2, 5]");
  EXPECT_EQ(
      errorOf(kBiasGelu, none, {a.ref, b.ref, bias.ref}, {c.ref, wrong.ref}),
      "nn.matmul_bias_gelu: pre_activation has shape [5, 2], expected [2, "
      "5]");

  // No result may share bytes with an operand or the other result.
  Buffer square = randomTensor(DType::F32, {3, 3}, 12);
  Buffer squareBias = randomTensor(DType::F32, {3}, 13);
  Buffer out(DType::F32, {3, 3});
  EXPECT_EQ(
      errorOf(kBias, none, {square.ref, out.ref, squareBias.ref}, {square.ref}),
      "nn.matmul_bias: result overlaps an operand");
  TensorRef rowOfOut = out.ref;
  rowOfOut.shape = {1, 3};
  Buffer row(DType::F32, {1, 3});
  Buffer oneRow = randomTensor(DType::F32, {1, 3}, 14);
  EXPECT_EQ(errorOf(kBiasGelu, none, {oneRow.ref, out.ref, squareBias.ref},
                    {row.ref, rowOfOut}),
            "nn.matmul_bias_gelu: pre_activation overlaps an operand");
  EXPECT_EQ(errorOf(kBiasGelu, none, {oneRow.ref, square.ref, squareBias.ref},
                    {rowOfOut, rowOfOut}),
            "nn.matmul_bias_gelu: result overlaps pre_activation");
  // Messages are one line.
  for (const std::string &message :
       {errorOf(kBias, none, {}, {}), errorOf(kBiasGelu, none, {}, {})})
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

constexpr const char *kAdd = "nn.matmul_add";

/// lhs and rhs as makeOperands gives them, and in the bias's place an
/// addend (m, n) in [-4, 4).
Operands makeAddOperands(DType type, int64_t m, int64_t n, int64_t k,
                         bool transA, bool transB, unsigned seed) {
  Operands in = makeOperands(type, m, n, k, transA, transB, seed);
  in.bias = randomTensor(type, {m, n}, seed + 2, -4.0, 4.0);
  return in;
}

Buffer runAdd(const Operands &in, bool transA, bool transB, int64_t m,
              int64_t n) {
  Buffer result = freshResult(in.lhs.ref.dtype, {m, n});
  runKernel(kAdd, transposes(transA, transB),
            {in.lhs.ref, in.rhs.ref, in.bias.ref}, {result.ref});
  return result;
}

TEST(CpuMatmulAdd, MatchesFloat64ReferenceEveryTranspose) {
  const int64_t m = 37, n = 29, k = 53;
  for (DType type : {DType::F32, DType::F16, DType::BF16})
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        Operands in = makeAddOperands(type, m, n, k, transA, transB, 11);
        std::vector<double> a = in.lhs.values(), b = in.rhs.values(),
                            c = in.bias.values();
        std::vector<double> want(c.size()), bound(c.size());
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = c[i * n + j], magnitude = std::fabs(sum);
            for (int64_t p = 0; p < k; ++p) {
              double product = a[transA ? p * m + i : i * k + p] *
                               b[transB ? j * k + p : p * n + j];
              sum += product;
              magnitude += std::fabs(product);
            }
            // The f32 sum's error, then one rounding to the storage type.
            want[i * n + j] = sum;
            bound[i * n + j] =
                (k + 2) * std::ldexp(1.0, -24) * magnitude +
                (type == DType::F32 ? 0.0
                                    : unitRoundoff(type) * std::fabs(sum));
          }
        expectWithin(runAdd(in, transA, transB, m, n).values(), want, bound,
                     label(kAdd, type, transA, transB));
      }
}

TEST(CpuMatmulAdd, F32EqualsMatmulThenAddBitForBit) {
  const int64_t m = 16, n = 24, k = 40;
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      Operands in = makeAddOperands(DType::F32, m, n, k, transA, transB, 5);
      Buffer product(DType::F32, {m, n}), sum(DType::F32, {m, n});
      runKernel("nn.matmul", transposes(transA, transB),
                {in.lhs.ref, in.rhs.ref}, {product.ref});
      runKernel("nn.add", {}, {in.bias.ref, product.ref}, {sum.ref});
      expectSameBits(runAdd(in, transA, transB, m, n), sum,
                     label(kAdd, DType::F32, transA, transB));
    }
}

// The running total written over itself, as zero-memory-plan places it.
TEST(CpuMatmulAdd, InPlaceOverTheAddend) {
  const int64_t m = 12, n = 20, k = 32;
  for (DType type : {DType::F32, DType::BF16}) {
    Operands in = makeAddOperands(type, m, n, k, true, false, 7);
    Buffer separate = runAdd(in, true, false, m, n);
    runKernel(kAdd, transposes(true, false),
              {in.lhs.ref, in.rhs.ref, in.bias.ref}, {in.bias.ref});
    expectSameBits(in.bias, separate, label(kAdd, type, true, false));
  }
}

TEST(CpuMatmulAdd, ErrorMessages) {
  Buffer a = randomTensor(DType::F32, {4, 8}, 1),
         b = randomTensor(DType::F32, {8, 6}, 2),
         c = randomTensor(DType::F32, {4, 6}, 3),
         wrong = randomTensor(DType::F32, {6, 4}, 4),
         half = randomTensor(DType::BF16, {4, 6}, 5);
  Buffer result(DType::F32, {4, 6});
  AttrMap none;
  EXPECT_EQ(errorOf(kAdd, none, {a.ref, b.ref, wrong.ref}, {result.ref}),
            "nn.matmul_add: addend has shape [6, 4], expected [4, 6]");
  EXPECT_EQ(errorOf(kAdd, none, {a.ref, b.ref, half.ref}, {result.ref}),
            "nn.matmul_add: addend has element type bf16, expected f32");
  EXPECT_EQ(errorOf(kAdd, none, {a.ref, b.ref, c.ref}, {a.ref}),
            "nn.matmul_add: result has shape [4, 8], expected [4, 6]");
  // A result over part of the addend (its second row onwards).
  Buffer big = randomTensor(DType::F32, {5, 6}, 6);
  TensorRef over = big.ref;
  over.data = static_cast<char *>(big.ref.data) + 6 * sizeof(float);
  over.shape = {4, 6};
  TensorRef addend = big.ref;
  addend.shape = {4, 6};
  EXPECT_EQ(errorOf(kAdd, none, {a.ref, b.ref, addend}, {over}),
            "nn.matmul_add: result overlaps the addend without being it");
}

} // namespace
} // namespace zerosbp::runtime::test
