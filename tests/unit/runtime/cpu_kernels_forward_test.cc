//===- cpu_kernels_forward_test.cc - CPU kernels against double references ===//
//
// Each forward kernel against a float64 reference written here with plain
// loops, on f32 inputs (and f16/bf16 storage for a few ops).
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace zerosbp::runtime::test {
namespace {

//===----------------------------------------------------------------------===//
// References
//===----------------------------------------------------------------------===//

/// op(A) op(B) for row-major A (rows x cols as stored) and B.
std::vector<double> referenceMatmul(const std::vector<double> &a,
                                    const std::vector<double> &b, int64_t m,
                                    int64_t k, int64_t n, bool ta, bool tb) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        double av = ta ? a[p * m + i] : a[i * k + p];
        double bv = tb ? b[j * k + p] : b[p * n + j];
        sum += av * bv;
      }
      c[i * n + j] = sum;
    }
  return c;
}

std::vector<double> referenceSoftmaxRows(const std::vector<double> &x,
                                         int64_t rows, int64_t n, bool causal) {
  std::vector<double> y(x.size(), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t valid = causal ? r % n + 1 : n;
    double max = -INFINITY;
    for (int64_t j = 0; j < valid; ++j)
      max = std::max(max, x[r * n + j]);
    double sum = 0;
    for (int64_t j = 0; j < valid; ++j)
      sum += std::exp(x[r * n + j] - max);
    for (int64_t j = 0; j < valid; ++j)
      y[r * n + j] = std::exp(x[r * n + j] - max) / sum;
  }
  return y;
}

double referenceGelu(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

TEST(CpuKernelsForward, MatmulAllTransposeFlags) {
  const int64_t m = 19, k = 37, n = 11;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Buffer a = randomTensor(DType::F32, ta ? ints({k, m}) : ints({m, k}), 1);
      Buffer b = randomTensor(DType::F32, tb ? ints({n, k}) : ints({k, n}), 2);
      Buffer c(DType::F32, {m, n});
      AttrMap attrs;
      if (ta)
        attrs.set("transpose_lhs", true);
      if (tb)
        attrs.set("transpose_rhs", true);
      runKernel("nn.matmul", attrs, {a.ref, b.ref}, {c.ref});
      expectClose(
          c.values(), referenceMatmul(a.values(), b.values(), m, k, n, ta, tb),
          1e-5, 1e-5, "ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
  }
}

TEST(CpuKernelsForward, MatmulBf16Storage) {
  Buffer a = randomTensor(DType::BF16, {4, 6}, 3);
  Buffer b = randomTensor(DType::BF16, {5, 6}, 4);
  Buffer c(DType::BF16, {4, 5});
  runKernel("nn.matmul", makeAttrs({{"transpose_rhs", true}}), {a.ref, b.ref},
            {c.ref});
  // bf16 keeps 8 bits of mantissa: a relative error up to 2^-8.
  expectClose(c.values(),
              referenceMatmul(a.values(), b.values(), 4, 6, 5, false, true),
              1e-2, 4e-3);
}

TEST(CpuKernelsForward, BatchMatmulAllTransposeFlags) {
  const int64_t m = 5, k = 7, n = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Buffer a = randomTensor(DType::F32,
                              ta ? ints({2, 3, k, m}) : ints({2, 3, m, k}), 5);
      Buffer b = randomTensor(DType::F32,
                              tb ? ints({2, 3, n, k}) : ints({2, 3, k, n}), 6);
      Buffer c(DType::F32, {2, 3, m, n});
      AttrMap attrs;
      if (ta)
        attrs.set("transpose_lhs", true);
      if (tb)
        attrs.set("transpose_rhs", true);
      runKernel("nn.batch_matmul", attrs, {a.ref, b.ref}, {c.ref});
      std::vector<double> av = a.values(), bv = b.values(), expected;
      for (int64_t batch = 0; batch < 6; ++batch) {
        std::vector<double> sliceA(av.begin() + batch * m * k,
                                   av.begin() + (batch + 1) * m * k);
        std::vector<double> sliceB(bv.begin() + batch * k * n,
                                   bv.begin() + (batch + 1) * k * n);
        std::vector<double> product =
            referenceMatmul(sliceA, sliceB, m, k, n, ta, tb);
        expected.insert(expected.end(), product.begin(), product.end());
      }
      expectClose(c.values(), expected, 1e-5, 1e-5);
    }
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// The broadcast of two shapes, NumPy's rule.
std::vector<int64_t> broadcastShape(std::vector<int64_t> a,
                                    std::vector<int64_t> b) {
  while (a.size() < b.size())
    a.insert(a.begin(), 1);
  while (b.size() < a.size())
    b.insert(b.begin(), 1);
  std::vector<int64_t> out(a.size());
  for (size_t d = 0; d < a.size(); ++d)
    out[d] = std::max(a[d], b[d]);
  return out;
}

/// Element `index` (of the broadcast shape) of a tensor of `shape`.
int64_t broadcastSource(const std::vector<int64_t> &index,
                        const std::vector<int64_t> &shape) {
  size_t leading = index.size() - shape.size();
  std::vector<int64_t> strides = stridesOf(shape);
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    offset += (shape[d] == 1 ? 0 : index[leading + d]) * strides[d];
  return offset;
}

TEST(CpuKernelsForward, BinaryOpsBroadcast) {
  struct Case {
    std::vector<int64_t> lhs, rhs;
  };
  std::vector<Case> cases = {{{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {3, 1}},
                             {{4}, {2, 3, 4}},       {{2, 1, 4}, {1, 3, 1}},
                             {{2, 3}, {}},           {{}, {5}},
                             {{3, 1, 5}, {3, 2, 1}}, {{1, 1}, {1, 1}}};
  struct OpCase {
    const char *name;
    double (*fn)(double, double);
  };
  OpCase ops[] = {{"nn.add", [](double a, double b) { return a + b; }},
                  {"nn.sub", [](double a, double b) { return a - b; }},
                  {"nn.mul", [](double a, double b) { return a * b; }},
                  {"nn.div", [](double a, double b) { return a / b; }}};
  unsigned seed = 10;
  for (const Case &shapes : cases) {
    std::vector<int64_t> shape = broadcastShape(shapes.lhs, shapes.rhs);
    Buffer a = randomTensor(DType::F32, shapes.lhs, seed++, 0.5, 2.0);
    Buffer b = randomTensor(DType::F32, shapes.rhs, seed++, 0.5, 2.0);
    for (const OpCase &op : ops) {
      Buffer c(DType::F32, shape);
      runKernel(op.name, {}, {a.ref, b.ref}, {c.ref});
      std::vector<double> expected(static_cast<size_t>(c.numel()));
      for (int64_t i = 0; i < c.numel(); ++i) {
        std::vector<int64_t> index = unravel(i, shape);
        expected[i] = op.fn(a.get(broadcastSource(index, shapes.lhs)),
                            b.get(broadcastSource(index, shapes.rhs)));
      }
      expectClose(c.values(), expected, 0, 1e-6, op.name);
    }
  }
}

TEST(CpuKernelsForward, BinaryOpsLargeAndInPlace) {
  // Longer than one chunk, result in the lhs's bytes.
  Buffer a = randomTensor(DType::F32, {3, 1000}, 20);
  Buffer b = randomTensor(DType::F32, {3, 1000}, 21);
  std::vector<double> av = a.values(), bv = b.values();
  runKernel("nn.mul", {}, {a.ref, b.ref}, {a.ref});
  std::vector<double> expected(av.size());
  for (size_t i = 0; i < av.size(); ++i)
    expected[i] = static_cast<float>(av[i] * bv[i]);
  expectClose(a.values(), expected, 0, 0);

  // Broadcast with the result in the full-size operand's bytes.
  Buffer row = randomTensor(DType::F32, {1000}, 22);
  std::vector<double> before = b.values();
  runKernel("nn.sub", {}, {b.ref, row.ref}, {b.ref});
  for (int64_t i = 0; i < b.numel(); ++i)
    expected[i] = static_cast<float>(before[i] - row.get(i % 1000));
  expectClose(b.values(), expected, 0, 0);
}

TEST(CpuKernelsForward, BinaryOpsBf16AndF16Storage) {
  for (DType type : {DType::BF16, DType::F16}) {
    Buffer a = randomTensor(type, {2, 1500}, 23);
    Buffer b = randomTensor(type, {1500}, 24);
    Buffer c(type, {2, 1500});
    runKernel("nn.add", {}, {a.ref, b.ref}, {c.ref});
    // Computed in f32 and rounded once: exactly the rounded double sum.
    Buffer expected(type, {2, 1500});
    for (int64_t i = 0; i < c.numel(); ++i)
      expected.set(i, static_cast<float>(a.get(i) + b.get(i % 1500)));
    expectClose(c.values(), expected.values(), 0, 0, dtypeName(type));
    // In place.
    runKernel("nn.add", {}, {a.ref, b.ref}, {a.ref});
    expectClose(a.values(), expected.values(), 0, 0, dtypeName(type));
  }
}

TEST(CpuKernelsForward, BiasAdd) {
  Buffer x = randomTensor(DType::F32, {2, 3, 8}, 30);
  Buffer bias = randomTensor(DType::F32, {8}, 31);
  Buffer y(DType::F32, {2, 3, 8});
  runKernel("nn.bias_add", {}, {x.ref, bias.ref}, {y.ref});
  std::vector<double> expected(48);
  for (int64_t i = 0; i < 48; ++i)
    expected[i] = x.get(i) + bias.get(i % 8);
  expectClose(y.values(), expected, 0, 1e-7);
}

TEST(CpuKernelsForward, ActivationsAndScale) {
  Buffer x = randomTensor(DType::F32, {3000}, 40, -6.0, 6.0);
  x.set(0, 0.0);
  x.set(1, -0.0);
  x.set(2, 1e-4);
  x.set(3, -30.0);
  x.set(4, 30.0);
  x.set(5, 0.62);
  x.set(6, 0.63);
  Buffer relu(DType::F32, {3000}), gelu(DType::F32, {3000}),
      tanh(DType::F32, {3000}), scaled(DType::F32, {3000});
  runKernel("nn.relu", {}, {x.ref}, {relu.ref});
  runKernel("nn.gelu", {}, {x.ref}, {gelu.ref});
  runKernel("nn.tanh", {}, {x.ref}, {tanh.ref});
  runKernel("nn.scale", makeAttrs({{"factor", -0.25}}), {x.ref}, {scaled.ref});
  std::vector<double> xs = x.values(), r(3000), g(3000), t(3000), s(3000);
  for (size_t i = 0; i < xs.size(); ++i) {
    r[i] = std::max(xs[i], 0.0);
    g[i] = referenceGelu(xs[i]);
    t[i] = std::tanh(xs[i]);
    s[i] = xs[i] * -0.25;
  }
  expectClose(relu.values(), r, 0, 0, "relu");
  expectClose(gelu.values(), g, 2e-6, 2e-6, "gelu");
  expectClose(tanh.values(), t, 1e-7, 4e-7, "tanh");
  expectClose(scaled.values(), s, 0, 0, "scale");
  // relu keeps NaN, as torch.relu does.
  Buffer nan = makeTensor(DType::F32, {1}, {NAN});
  runKernel("nn.relu", {}, {nan.ref}, {nan.ref});
  EXPECT_TRUE(std::isnan(nan.get(0)));
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, loss
//===----------------------------------------------------------------------===//

std::vector<double> referenceLayerNorm(const std::vector<double> &x,
                                       const std::vector<double> &gamma,
                                       const std::vector<double> &beta,
                                       int64_t n, double epsilon) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      mean += x[r * n + j];
    mean /= n;
    for (int64_t j = 0; j < n; ++j)
      var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
    var /= n;
    for (int64_t j = 0; j < n; ++j)
      y[r * n + j] =
          (x[r * n + j] - mean) / std::sqrt(var + epsilon) * gamma[j] + beta[j];
  }
  return y;
}

TEST(CpuKernelsForward, LayerNorm) {
  const int64_t n = 37;
  Buffer x = randomTensor(DType::F32, {2, 5, n}, 50, -3.0, 5.0);
  Buffer gamma = randomTensor(DType::F32, {n}, 51);
  Buffer beta = randomTensor(DType::F32, {n}, 52);
  Buffer y(DType::F32, {2, 5, n});
  runKernel("nn.layer_norm", {}, {x.ref, gamma.ref, beta.ref}, {y.ref});
  expectClose(
      y.values(),
      referenceLayerNorm(x.values(), gamma.values(), beta.values(), n, 1e-5),
      2e-6, 2e-6, "default epsilon");
  // A large epsilon shows that the attribute is read.
  runKernel("nn.layer_norm", makeAttrs({{"epsilon", 0.5}}),
            {x.ref, gamma.ref, beta.ref}, {y.ref});
  expectClose(
      y.values(),
      referenceLayerNorm(x.values(), gamma.values(), beta.values(), n, 0.5),
      2e-6, 2e-6, "epsilon 0.5");
}

TEST(CpuKernelsForward, LayerNormBf16Storage) {
  const int64_t n = 64;
  Buffer x = randomTensor(DType::BF16, {4, n}, 53);
  Buffer gamma = randomTensor(DType::BF16, {n}, 54);
  Buffer beta = randomTensor(DType::BF16, {n}, 55);
  Buffer y(DType::BF16, {4, n});
  runKernel("nn.layer_norm", {}, {x.ref, gamma.ref, beta.ref}, {y.ref});
  expectClose(
      y.values(),
      referenceLayerNorm(x.values(), gamma.values(), beta.values(), n, 1e-5),
      1e-2, 8e-3);
}

TEST(CpuKernelsForward, SoftmaxLastAxisAndCausal) {
  const int64_t t = 9;
  Buffer x = randomTensor(DType::F32, {2, 3, t, t}, 60, -8.0, 8.0);
  Buffer y(DType::F32, {2, 3, t, t});
  runKernel("nn.softmax", {}, {x.ref}, {y.ref});
  expectClose(y.values(), referenceSoftmaxRows(x.values(), 6 * t, t, false),
              1e-7, 2e-6, "plain");
  runKernel("nn.softmax", makeAttrs({{"causal", true}, {"axis", int64_t{-1}}}),
            {x.ref}, {y.ref});
  std::vector<double> expected =
      referenceSoftmaxRows(x.values(), 6 * t, t, true);
  expectClose(y.values(), expected, 1e-7, 2e-6, "causal");
  // Masked entries are exactly zero.
  for (int64_t i = 0; i < y.numel(); ++i)
    if (i % t > (i / t) % t)
      ASSERT_EQ(y.get(i), 0.0) << i;
  // In place.
  runKernel("nn.softmax", makeAttrs({{"causal", true}}), {x.ref}, {x.ref});
  expectClose(x.values(), expected, 1e-7, 2e-6, "causal in place");
}

TEST(CpuKernelsForward, SoftmaxInnerAxis) {
  // Along axis 1 of (2, 5, 3): strided rows.
  Buffer x = randomTensor(DType::F32, {2, 5, 3}, 61, -4.0, 4.0);
  Buffer y(DType::F32, {2, 5, 3});
  runKernel("nn.softmax", makeAttrs({{"axis", int64_t{1}}}), {x.ref}, {y.ref});
  std::vector<double> expected(30);
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t i = 0; i < 3; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < 5; ++j)
        sum += std::exp(x.get(o * 15 + j * 3 + i));
      for (int64_t j = 0; j < 5; ++j)
        expected[o * 15 + j * 3 + i] =
            std::exp(x.get(o * 15 + j * 3 + i)) / sum;
    }
  expectClose(y.values(), expected, 1e-7, 2e-6);
}

TEST(CpuKernelsForward, SoftmaxF16Storage) {
  Buffer x = randomTensor(DType::F16, {3, 40}, 62, -4.0, 4.0);
  Buffer y(DType::F16, {3, 40});
  runKernel("nn.softmax", {}, {x.ref}, {y.ref});
  expectClose(y.values(), referenceSoftmaxRows(x.values(), 3, 40, false), 1e-4,
              1e-3);
}

TEST(CpuKernelsForward, Embedding) {
  for (DType idType : {DType::I32, DType::I64}) {
    Buffer table = randomTensor(DType::F32, {7, 5}, 70);
    Buffer ids = makeTensor(idType, {2, 3}, {0, 6, 3, 3, 1, 6});
    Buffer y(DType::F32, {2, 3, 5});
    runKernel("nn.embedding", {}, {table.ref, ids.ref}, {y.ref});
    std::vector<double> expected;
    for (int64_t t = 0; t < 6; ++t)
      for (int64_t j = 0; j < 5; ++j)
        expected.push_back(table.get(static_cast<int64_t>(ids.get(t)) * 5 + j));
    expectClose(y.values(), expected, 0, 0, dtypeName(idType));
  }
  // A bf16 table into a bf16 result.
  Buffer table = randomTensor(DType::BF16, {4, 3}, 71);
  Buffer ids = makeTensor(DType::I64, {2}, {2, 0});
  Buffer y(DType::BF16, {2, 3});
  runKernel("nn.embedding", {}, {table.ref, ids.ref}, {y.ref});
  expectClose(y.values(),
              {table.get(6), table.get(7), table.get(8), table.get(0),
               table.get(1), table.get(2)},
              0, 0);
}

TEST(CpuKernelsForward, CrossEntropy) {
  const int64_t classes = 11;
  Buffer logits = randomTensor(DType::F32, {2, 3, classes}, 80, -5.0, 5.0);
  Buffer labels = randomIndices(DType::I64, {2, 3}, 81, classes);
  Buffer loss(DType::F32, {});
  double sum = crossEntropySum(logits.values(), labels.values(), classes);
  // Without count: the local mean.
  runKernel("nn.cross_entropy", {}, {logits.ref, labels.ref}, {loss.ref});
  EXPECT_NEAR(loss.get(0), sum / 6, 1e-6);
  // With count (the global sample count): the local share of the mean.
  runKernel("nn.cross_entropy", makeAttrs({{"count", int64_t{24}}}),
            {logits.ref, labels.ref}, {loss.ref});
  EXPECT_NEAR(loss.get(0), sum / 24, 1e-6);
  // i32 labels.
  Buffer labels32(DType::I32, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    labels32.set(i, labels.get(i));
  runKernel("nn.cross_entropy", {}, {logits.ref, labels32.ref}, {loss.ref});
  EXPECT_NEAR(loss.get(0), sum / 6, 1e-6);
}

TEST(CpuKernelsForward, CrossEntropyLargeLogits) {
  // Logits far from 0 need the max shift.
  Buffer logits =
      makeTensor(DType::F32, {2, 3}, {1000, 1001, 999, -500, -499, -520});
  Buffer labels = makeTensor(DType::I32, {2}, {1, 0});
  Buffer loss(DType::F32, {});
  runKernel("nn.cross_entropy", {}, {logits.ref, labels.ref}, {loss.ref});
  EXPECT_NEAR(loss.get(0),
              crossEntropySum(logits.values(), labels.values(), 3) / 2, 1e-5);
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

TEST(CpuKernelsForward, Transpose) {
  struct Case {
    std::vector<int64_t> shape, permutation;
  };
  std::vector<Case> cases = {
      {{3, 4}, {1, 0}},   {{2, 3, 4, 5}, {0, 2, 1, 3}}, {{2, 3, 4}, {2, 0, 1}},
      {{40, 70}, {1, 0}}, {{3, 33, 65}, {0, 2, 1}},     {{2, 1, 3}, {1, 2, 0}},
      {{5}, {0}}};
  for (DType type : {DType::F32, DType::I64, DType::BF16}) {
    for (const Case &c : cases) {
      Buffer x = randomTensor(type, c.shape, 90, -100.0, 100.0);
      std::vector<int64_t> shape;
      for (int64_t axis : c.permutation)
        shape.push_back(c.shape[axis]);
      Buffer y(type, shape);
      runKernel("nn.transpose", makeAttrs({{"permutation", c.permutation}}),
                {x.ref}, {y.ref});
      std::vector<int64_t> strides = stridesOf(c.shape);
      std::vector<double> expected(static_cast<size_t>(y.numel()));
      for (int64_t i = 0; i < y.numel(); ++i) {
        std::vector<int64_t> index = unravel(i, shape);
        int64_t offset = 0;
        for (size_t d = 0; d < index.size(); ++d)
          offset += index[d] * strides[c.permutation[d]];
        expected[i] = x.get(offset);
      }
      expectClose(y.values(), expected, 0, 0, dtypeName(type));
    }
  }
}

TEST(CpuKernelsForward, SliceWithStrides) {
  Buffer x = randomTensor(DType::F32, {6, 7, 5}, 100);
  Buffer y(DType::F32, {2, 3, 5});
  runKernel("nn.slice",
            makeAttrs({{"offsets", ints({1, 0, 0})},
                       {"sizes", ints({2, 3, 5})},
                       {"strides", ints({3, 3, 1})}}),
            {x.ref}, {y.ref});
  std::vector<double> expected;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 5; ++k)
        expected.push_back(x.get((1 + 3 * i) * 35 + (3 * j) * 5 + k));
  expectClose(y.values(), expected, 0, 0, "strided");

  // Unit strides (no attribute), an inner window.
  Buffer z(DType::F32, {3, 2, 2});
  runKernel(
      "nn.slice",
      makeAttrs({{"offsets", ints({2, 4, 1})}, {"sizes", ints({3, 2, 2})}}),
      {x.ref}, {z.ref});
  expected.clear();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 2; ++k)
        expected.push_back(x.get((2 + i) * 35 + (4 + j) * 5 + 1 + k));
  expectClose(z.values(), expected, 0, 0, "window");
}

TEST(CpuKernelsForward, Pad) {
  Buffer x = randomTensor(DType::F32, {2, 3}, 110);
  Buffer y(DType::F32, {5, 4});
  runKernel("nn.pad",
            makeAttrs({{"low", ints({1, 0})}, {"high", ints({2, 1})}}), {x.ref},
            {y.ref});
  std::vector<double> expected(20, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      expected[(i + 1) * 4 + j] = x.get(i * 3 + j);
  expectClose(y.values(), expected, 0, 0);
}

TEST(CpuKernelsForward, SplitAndConcat) {
  for (int64_t axis : {int64_t{0}, int64_t{1}, int64_t{-1}}) {
    std::vector<int64_t> shape = {4, 6, 3};
    int64_t d = axis < 0 ? axis + 3 : axis;
    std::vector<int64_t> sizes = d == 0   ? ints({1, 3})
                                 : d == 1 ? ints({2, 0, 4})
                                          : ints({1, 2});
    Buffer x = randomTensor(DType::F32, shape, 120);
    std::vector<Buffer> pieces;
    std::vector<TensorRef> refs;
    for (int64_t size : sizes) {
      std::vector<int64_t> pieceShape = shape;
      pieceShape[d] = size;
      pieces.emplace_back(DType::F32, pieceShape);
      refs.push_back(pieces.back().ref);
    }
    AttrMap attrs = makeAttrs({{"axis", axis}, {"sizes", sizes}});
    runKernel("nn.split", attrs, {x.ref}, refs);
    // Each piece against the source.
    int64_t offset = 0;
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::vector<int64_t> pieceShape = pieces[k].ref.shape;
      std::vector<double> expected;
      for (int64_t i = 0; i < pieces[k].numel(); ++i) {
        std::vector<int64_t> index = unravel(i, pieceShape);
        index[d] += offset;
        int64_t linear = 0;
        for (size_t e = 0; e < 3; ++e)
          linear = linear * shape[e] + index[e];
        expected.push_back(x.get(linear));
      }
      expectClose(pieces[k].values(), expected, 0, 0, "split piece");
      offset += sizes[k];
    }
    // Concat puts them back.
    Buffer joined(DType::F32, shape);
    runKernel("nn.concat", makeAttrs({{"axis", axis}}), refs, {joined.ref});
    expectClose(joined.values(), x.values(), 0, 0, "concat");
  }
}

TEST(CpuKernelsForward, ReshapeCopiesOrKeeps) {
  Buffer x = randomTensor(DType::F32, {2, 6}, 130);
  Buffer y(DType::F32, {3, 4});
  runKernel("nn.reshape", {}, {x.ref}, {y.ref});
  expectClose(y.values(), x.values(), 0, 0);
  TensorRef view = x.ref;
  view.shape = {12};
  std::vector<double> before = x.values();
  runKernel("nn.reshape", {}, {x.ref}, {view});
  expectClose(x.values(), before, 0, 0);
}

TEST(CpuKernelsForward, ResultsOverlappingOperands) {
  // A kernel that does not go element by element must still be right when
  // its result lies in an operand's bytes.
  Buffer square = randomTensor(DType::F32, {33, 33}, 131);
  std::vector<double> before = square.values();
  runKernel("nn.transpose", makeAttrs({{"permutation", ints({1, 0})}}),
            {square.ref}, {square.ref});
  for (int64_t i = 0; i < 33; ++i)
    for (int64_t j = 0; j < 33; ++j)
      ASSERT_EQ(square.get(i * 33 + j), before[j * 33 + i]);

  Buffer a = randomTensor(DType::F32, {6, 6}, 132);
  Buffer b = randomTensor(DType::F32, {6, 6}, 133);
  std::vector<double> expected =
      referenceMatmul(a.values(), b.values(), 6, 6, 6, false, false);
  runKernel("nn.matmul", {}, {a.ref, b.ref}, {a.ref});
  expectClose(a.values(), expected, 1e-5, 1e-5, "matmul into lhs");

  // split: the first piece over the start of the input.
  Buffer x = randomTensor(DType::F32, {4, 3}, 134);
  before = x.values();
  TensorRef first = x.ref;
  first.shape = {4, 1};
  Buffer second(DType::F32, {4, 2});
  runKernel("nn.split",
            makeAttrs({{"axis", int64_t{1}}, {"sizes", ints({1, 2})}}), {x.ref},
            {first, second.ref});
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(static_cast<float *>(first.data)[r], before[r * 3]);
    EXPECT_EQ(second.get(r * 2), before[r * 3 + 1]);
    EXPECT_EQ(second.get(r * 2 + 1), before[r * 3 + 2]);
  }

  // softmax_grad into grad_output, layer_norm into its input.
  Buffer dy = randomTensor(DType::F32, {3, 8}, 135);
  Buffer y = makeTensor(
      DType::F32, {3, 8},
      referenceSoftmaxRows(randomTensor(DType::F32, {3, 8}, 136).values(), 3, 8,
                           false));
  Buffer dx(DType::F32, {3, 8});
  runKernel("nn.softmax_grad", {}, {dy.ref, y.ref}, {dx.ref});
  runKernel("nn.softmax_grad", {}, {dy.ref, y.ref}, {dy.ref});
  expectClose(dy.values(), dx.values(), 0, 0, "softmax_grad in place");
  Buffer gamma = randomTensor(DType::F32, {8}, 137);
  Buffer beta = randomTensor(DType::F32, {8}, 138);
  Buffer normalized(DType::F32, {3, 8});
  runKernel("nn.layer_norm", {}, {y.ref, gamma.ref, beta.ref},
            {normalized.ref});
  runKernel("nn.layer_norm", {}, {y.ref, gamma.ref, beta.ref}, {y.ref});
  expectClose(y.values(), normalized.values(), 0, 0, "layer_norm in place");
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Sums `x` of `shape` over `axes` (sorted), keepdim off.
std::vector<double> referenceReduce(const std::vector<double> &x,
                                    const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &axes) {
  std::vector<int64_t> kept;
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) ==
        axes.end())
      kept.push_back(shape[d]);
  std::vector<double> out(static_cast<size_t>(productOf(kept)), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> index = unravel(static_cast<int64_t>(i), shape);
    int64_t linear = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) ==
          axes.end())
        linear = linear * shape[d] + index[d];
    out[linear] += x[i];
  }
  return out;
}

TEST(CpuKernelsForward, ReduceSumAndMean) {
  std::vector<int64_t> shape = {3, 4, 5, 2};
  Buffer x = randomTensor(DType::F32, shape, 140);
  std::vector<std::vector<int64_t>> axesCases = {
      {}, {0}, {3}, {1, 2}, {0, 2}, {0, 1, 2, 3}, {0, 1, 2}, {1, 3}};
  for (const std::vector<int64_t> &axes : axesCases) {
    std::vector<double> sums = referenceReduce(x.values(), shape, axes);
    int64_t reducedCount = 1;
    for (int64_t axis : axes)
      reducedCount *= shape[axis];
    for (bool keepdim : {false, true}) {
      std::vector<int64_t> outShape;
      for (size_t d = 0; d < shape.size(); ++d) {
        bool reduced = std::find(axes.begin(), axes.end(),
                                 static_cast<int64_t>(d)) != axes.end();
        if (!reduced)
          outShape.push_back(shape[d]);
        else if (keepdim)
          outShape.push_back(1);
      }
      AttrMap attrs = makeAttrs({{"axes", axes}});
      if (keepdim)
        attrs.set("keepdim", true);
      Buffer sum(DType::F32, outShape), mean(DType::F32, outShape),
          meanCount(DType::F32, outShape);
      runKernel("nn.reduce_sum", attrs, {x.ref}, {sum.ref});
      runKernel("nn.reduce_mean", attrs, {x.ref}, {mean.ref});
      attrs.set("count", int64_t{1000});
      runKernel("nn.reduce_mean", attrs, {x.ref}, {meanCount.ref});
      std::vector<double> means(sums.size()), meansCount(sums.size());
      for (size_t i = 0; i < sums.size(); ++i) {
        means[i] = sums[i] / reducedCount;
        meansCount[i] = sums[i] / 1000;
      }
      expectClose(sum.values(), sums, 1e-6, 1e-6, "sum");
      expectClose(mean.values(), means, 1e-7, 1e-6, "mean");
      expectClose(meanCount.values(), meansCount, 1e-9, 1e-6, "mean count");
    }
  }
  // Negative axes count from the back.
  Buffer sum(DType::F32, {3, 4, 5});
  runKernel("nn.reduce_sum", makeAttrs({{"axes", ints({-1})}}), {x.ref},
            {sum.ref});
  expectClose(sum.values(), referenceReduce(x.values(), shape, {3}), 1e-6, 1e-6,
              "axis -1");
}

TEST(CpuKernelsForward, ReduceBf16) {
  Buffer x = randomTensor(DType::BF16, {4, 300}, 141);
  Buffer sum(DType::BF16, {300});
  runKernel("nn.reduce_sum", makeAttrs({{"axes", ints({0})}}), {x.ref},
            {sum.ref});
  std::vector<double> expected = referenceReduce(x.values(), {4, 300}, {0});
  Buffer rounded(DType::BF16, {300});
  for (int64_t i = 0; i < 300; ++i)
    rounded.set(i, expected[i]);
  expectClose(sum.values(), rounded.values(), 0, 0);
}

//===----------------------------------------------------------------------===//
// Cast and fill
//===----------------------------------------------------------------------===//

TEST(CpuKernelsForward, CastRoundsToNearestEven) {
  struct Case {
    uint32_t f32;
    uint16_t bf16;
    uint16_t f16;
  };
  Case cases[] = {
      {0x3f800000u, 0x3f80, 0x3c00}, // 1
      {0x3f808000u, 0x3f80, 0x3c04}, // 1 + 2^-8: bf16 tie, to even (down)
      {0x3f818000u, 0x3f82, 0x3c0c}, // 1 + 3 * 2^-8: bf16 tie, to even (up)
      {0x3f808001u, 0x3f81, 0x3c04}, // just above the bf16 tie: up
      {0x3f801000u, 0x3f80, 0x3c00}, // 1 + 2^-11: f16 tie, to even (down)
      {0x3f803000u, 0x3f80, 0x3c02}, // 1 + 3 * 2^-11: f16 tie, to even (up)
      {0x477ff000u, 0x4780, 0x7c00}, // 65520: f16 overflows to infinity
      {0x477fe000u, 0x4780, 0x7bff}, // 65504: f16 max
      {0x33800000u, 0x3380, 0x0001}, // 2^-24: smallest f16 subnormal
      {0x33000000u, 0x3300, 0x0000}, // 2^-25: f16 tie with 0, to even
      {0x33c00000u, 0x33c0, 0x0002}, // 3 * 2^-25: f16 tie, to even (up)
      {0xbf800000u, 0xbf80, 0xbc00}, // -1
      {0x7f800000u, 0x7f80, 0x7c00}, // infinity
  };
  for (const Case &c : cases) {
    Buffer x = makeTensor(DType::F32, {1}, {floatFromBits(c.f32)});
    Buffer bf(DType::BF16, {1}), half(DType::F16, {1});
    runKernel("nn.cast", {}, {x.ref}, {bf.ref});
    runKernel("nn.cast", {}, {x.ref}, {half.ref});
    EXPECT_EQ(bf.ref.as<uint16_t>()[0], c.bf16) << std::hex << c.f32;
    EXPECT_EQ(half.ref.as<uint16_t>()[0], c.f16) << std::hex << c.f32;
  }
  // NaN stays NaN.
  Buffer nan = makeTensor(DType::F32, {1}, {NAN});
  Buffer bf(DType::BF16, {1}), half(DType::F16, {1});
  runKernel("nn.cast", {}, {nan.ref}, {bf.ref});
  runKernel("nn.cast", {}, {nan.ref}, {half.ref});
  EXPECT_TRUE(std::isnan(bf.get(0)));
  EXPECT_TRUE(std::isnan(half.get(0)));
}

TEST(CpuKernelsForward, CastWidensExactlyAndBetweenHalves) {
  Buffer half = randomTensor(DType::F16, {2000}, 150, -100.0, 100.0);
  Buffer wide(DType::F32, {2000}), bf(DType::BF16, {2000}),
      back(DType::F16, {2000});
  runKernel("nn.cast", {}, {half.ref}, {wide.ref});
  expectClose(wide.values(), half.values(), 0, 0, "f16 -> f32");
  runKernel("nn.cast", {}, {half.ref}, {bf.ref});
  Buffer expected(DType::BF16, {2000});
  for (int64_t i = 0; i < 2000; ++i)
    expected.set(i, half.get(i));
  expectClose(bf.values(), expected.values(), 0, 0, "f16 -> bf16");
  runKernel("nn.cast", {}, {wide.ref}, {back.ref});
  expectClose(back.values(), half.values(), 0, 0, "f32 -> f16 round trip");
  EXPECT_EQ(floatBits(static_cast<float>(wide.get(0))),
            floatBits(static_cast<float>(half.get(0))));
}

TEST(CpuKernelsForward, FillEveryType) {
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::F64,
                     DType::I64, DType::I32, DType::I1}) {
    Buffer x(type, {3, 5});
    runKernel("nn.fill", makeAttrs({{"value", 3.0}, {"loss_seed", true}}), {},
              {x.ref});
    expectClose(x.values(), std::vector<double>(15, type == DType::I1 ? 1 : 3),
                0, 0, dtypeName(type));
  }
  Buffer x(DType::F32, {4});
  runKernel("nn.fill", makeAttrs({{"value", int64_t{-2}}}), {}, {x.ref});
  expectClose(x.values(), std::vector<double>(4, -2), 0, 0);
}

//===----------------------------------------------------------------------===//
// Loss scaling and clipping
//===----------------------------------------------------------------------===//

TEST(CpuKernelsForward, NonfiniteCount) {
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    Buffer x = makeTensor(type, {6}, {1, INFINITY, -INFINITY, NAN, 0, -3});
    Buffer count(DType::F32, {});
    runKernel("nn.nonfinite_count", {}, {x.ref}, {count.ref});
    EXPECT_EQ(count.get(0), 3) << dtypeName(type);
  }
}

TEST(CpuKernelsForward, Select) {
  Buffer a = randomTensor(DType::F32, {5}, 160);
  Buffer b = randomTensor(DType::F32, {5}, 161);
  Buffer out(DType::F32, {5});
  Buffer yes = makeTensor(DType::F32, {}, {2});
  Buffer no = makeTensor(DType::F32, {}, {0});
  runKernel("nn.select", {}, {yes.ref, a.ref, b.ref}, {out.ref});
  expectClose(out.values(), a.values(), 0, 0);
  runKernel("nn.select", {}, {no.ref, a.ref, b.ref}, {out.ref});
  expectClose(out.values(), b.values(), 0, 0);
  // The result in the bytes of the value not chosen.
  std::vector<double> before = a.values();
  runKernel("nn.select", {}, {yes.ref, a.ref, b.ref}, {b.ref});
  expectClose(b.values(), before, 0, 0);
}

TEST(CpuKernelsForward, LossScaleUpdateFollowsDeepSpeed) {
  // window 2, hysteresis 2, min scale 1; the state updated in place.
  Buffer scale = makeTensor(DType::F32, {}, {16});
  Buffer good = makeTensor(DType::F32, {}, {0});
  Buffer hysteresis = makeTensor(DType::F32, {}, {2});
  AttrMap attrs = makeAttrs(
      {{"window", int64_t{2}}, {"min_scale", 1.0}, {"hysteresis", int64_t{2}}});
  struct Step {
    double overflow, scale, good, hysteresis;
  };
  Step steps[] = {
      {0, 16, 1, 2}, // clean
      {0, 32, 2, 2}, // clean: window reached, doubles
      {1, 32, 0, 1}, // overflow: hysteresis 2 -> 1
      {3, 16, 0, 1}, // overflow with hysteresis spent: halves
      {0, 16, 1, 1}, // clean
      {0, 32, 2, 2}, // window: doubles, hysteresis restored
      {1, 32, 0, 1}, {1, 16, 0, 1}, {1, 8, 0, 1}, {1, 4, 0, 1},
      {1, 2, 0, 1},  {1, 1, 0, 1},  {1, 1, 0, 1}, // not below min_scale
  };
  for (const Step &step : steps) {
    Buffer overflow = makeTensor(DType::F32, {}, {step.overflow});
    runKernel("nn.loss_scale_update", attrs,
              {scale.ref, good.ref, hysteresis.ref, overflow.ref},
              {scale.ref, good.ref, hysteresis.ref});
    EXPECT_EQ(scale.get(0), step.scale);
    EXPECT_EQ(good.get(0), step.good);
    EXPECT_EQ(hysteresis.get(0), step.hysteresis);
  }
}

TEST(CpuKernelsForward, ClipCoefficient) {
  Buffer sumSquares = makeTensor(DType::F32, {}, {16});
  Buffer out(DType::F32, {});
  // norm 4 > 1: 1 / (4 + 1e-6).
  runKernel("nn.clip_coefficient", makeAttrs({{"max_norm", 1.0}}),
            {sumSquares.ref}, {out.ref});
  EXPECT_FLOAT_EQ(out.get(0), 1.0f / (4.0f + 1e-6f));
  // norm 4 < 10: 1.
  runKernel("nn.clip_coefficient", makeAttrs({{"max_norm", 10.0}}),
            {sumSquares.ref}, {out.ref});
  EXPECT_EQ(out.get(0), 1.0);
  // grad_scale 8 undoes a loss scale: norm 0.5.
  runKernel("nn.clip_coefficient",
            makeAttrs({{"max_norm", 0.25}, {"grad_scale", 8.0}}),
            {sumSquares.ref}, {out.ref});
  EXPECT_FLOAT_EQ(out.get(0), 0.25f / (0.5f + 1e-6f));
  // A NaN sum of squares (here a negative NaN with a payload) gives the IEEE
  // quiet NaN, the bits the CUDA kernel writes too.
  uint32_t oddNan = 0xffc00123u;
  std::memcpy(sumSquares.ref.data, &oddNan, sizeof(oddNan));
  runKernel("nn.clip_coefficient", makeAttrs({{"max_norm", 1.0}}),
            {sumSquares.ref}, {out.ref});
  uint32_t bits = 0;
  std::memcpy(&bits, out.ref.data, sizeof(bits));
  EXPECT_EQ(bits, 0x7fc00000u);
}

} // namespace
} // namespace zerosbp::runtime::test
