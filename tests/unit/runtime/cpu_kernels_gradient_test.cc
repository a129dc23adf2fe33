//===- cpu_kernels_gradient_test.cc - gradients against finite differences ===//
//
// Every gradient kernel, and every forward op's backward formula as autodiff
// builds it from other kernels (NNGradients.cpp), against central
// differences of a float64 forward written here with plain loops: for a
// random upstream gradient dy, d/dx sum(forward(x) * dy).
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include <algorithm>
#include <cmath>

namespace zerosbp::runtime::test {
namespace {

using Forward = std::function<std::vector<double>(const std::vector<double> &)>;

/// Compares `analytic` with d/dx sum(forward(x) * dy) by central differences.
void checkGradient(const Forward &forward, const std::vector<double> &x,
                   const std::vector<double> &dy,
                   const std::vector<double> &analytic, const std::string &what,
                   double atol = 2e-5, double rtol = 2e-4) {
  auto loss = [&](const std::vector<double> &point) {
    std::vector<double> y = forward(point);
    EXPECT_EQ(y.size(), dy.size()) << what;
    double total = 0;
    for (size_t i = 0; i < y.size() && i < dy.size(); ++i)
      total += y[i] * dy[i];
    return total;
  };
  expectClose(analytic, numericGradient(loss, x), atol, rtol, what);
}

//===----------------------------------------------------------------------===//
// Float64 forwards
//===----------------------------------------------------------------------===//

std::vector<double> matmulForward(const std::vector<double> &a,
                                  const std::vector<double> &b, int64_t batch,
                                  int64_t m, int64_t k, int64_t n, bool ta,
                                  bool tb) {
  std::vector<double> c(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t s = 0; s < batch; ++s) {
    const double *as = a.data() + s * m * k, *bs = b.data() + s * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += (ta ? as[p * m + i] : as[i * k + p]) *
                 (tb ? bs[j * k + p] : bs[p * n + j]);
        c[s * m * n + i * n + j] = sum;
      }
  }
  return c;
}

double geluForward(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

std::vector<double> layerNormForward(const std::vector<double> &x,
                                     const std::vector<double> &gamma,
                                     const std::vector<double> &beta, int64_t n,
                                     double epsilon) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      mean += x[r * n + j] / n;
    for (int64_t j = 0; j < n; ++j)
      var += (x[r * n + j] - mean) * (x[r * n + j] - mean) / n;
    for (int64_t j = 0; j < n; ++j)
      y[r * n + j] =
          (x[r * n + j] - mean) / std::sqrt(var + epsilon) * gamma[j] + beta[j];
  }
  return y;
}

/// Softmax over rows of n; with `causal` row r sees keys j <= r % n.
std::vector<double> softmaxForward(const std::vector<double> &x, int64_t n,
                                   bool causal) {
  std::vector<double> y(x.size(), 0.0);
  for (size_t r = 0; r < x.size() / n; ++r) {
    int64_t valid = causal ? static_cast<int64_t>(r) % n + 1 : n;
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < valid; ++j)
      max = std::max(max, x[r * n + j]);
    for (int64_t j = 0; j < valid; ++j)
      sum += std::exp(x[r * n + j] - max);
    for (int64_t j = 0; j < valid; ++j)
      y[r * n + j] = std::exp(x[r * n + j] - max) / sum;
  }
  return y;
}

/// Sum over samples of -log softmax(logits)[label].

std::vector<double> elementwise(const std::vector<double> &x,
                                double (*fn)(double)) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = fn(x[i]);
  return y;
}

//===----------------------------------------------------------------------===//
// Activation gradients
//===----------------------------------------------------------------------===//

TEST(CpuKernelsGradient, ReluGrad) {
  // Away from the kink at 0.
  Buffer x = randomTensor(DType::F32, {4, 25}, 1, 0.05, 2.0);
  for (int64_t i = 0; i < x.numel(); i += 2)
    x.set(i, -x.get(i));
  Buffer dy = randomTensor(DType::F32, {4, 25}, 2);
  Buffer dx(DType::F32, {4, 25});
  runKernel("nn.relu_grad", {}, {dy.ref, x.ref}, {dx.ref});
  checkGradient(
      [](const std::vector<double> &v) {
        return elementwise(v, [](double a) { return a > 0 ? a : 0.0; });
      },
      x.values(), dy.values(), dx.values(), "relu_grad");
}

TEST(CpuKernelsGradient, GeluGrad) {
  Buffer x = randomTensor(DType::F32, {2000}, 3, -6.0, 6.0);
  Buffer dy = randomTensor(DType::F32, {2000}, 4);
  Buffer dx(DType::F32, {2000});
  runKernel("nn.gelu_grad", {}, {dy.ref, x.ref}, {dx.ref});
  checkGradient(
      [](const std::vector<double> &v) { return elementwise(v, geluForward); },
      x.values(), dy.values(), dx.values(), "gelu_grad");
}

TEST(CpuKernelsGradient, TanhGradFromResult) {
  Buffer x = randomTensor(DType::F32, {2000}, 5, -4.0, 4.0);
  Buffer y(DType::F32, {2000});
  for (int64_t i = 0; i < x.numel(); ++i)
    y.set(i, std::tanh(x.get(i)));
  Buffer dy = randomTensor(DType::F32, {2000}, 6);
  Buffer dx(DType::F32, {2000});
  runKernel("nn.tanh_grad", {}, {dy.ref, y.ref}, {dx.ref});
  checkGradient(
      [](const std::vector<double> &v) {
        return elementwise(v, [](double a) { return std::tanh(a); });
      },
      x.values(), dy.values(), dx.values(), "tanh_grad");
}

TEST(CpuKernelsGradient, ActivationGradsInPlaceAndBf16) {
  // The result in grad_output's bytes, bf16 storage: computed in f32 from
  // the same values, rounded once.
  Buffer x = randomTensor(DType::BF16, {1500}, 7, -3.0, 3.0);
  Buffer dy = randomTensor(DType::BF16, {1500}, 8);
  Buffer expected(DType::BF16, {1500});
  Buffer dx(DType::BF16, {1500});
  runKernel("nn.gelu_grad", {}, {dy.ref, x.ref}, {dx.ref});
  runKernel("nn.gelu_grad", {}, {dy.ref, x.ref}, {dy.ref});
  expectClose(dy.values(), dx.values(), 0, 0, "in place");
  std::vector<double> xs = x.values();
  Buffer dyAgain = randomTensor(DType::BF16, {1500}, 8);
  for (int64_t i = 0; i < 1500; ++i) {
    double h = 1e-4;
    double slope = (geluForward(xs[i] + h) - geluForward(xs[i] - h)) / (2 * h);
    expected.set(i, dyAgain.get(i) * slope);
  }
  expectClose(dx.values(), expected.values(), 1e-2, 1e-2, "bf16");
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, loss, embedding
//===----------------------------------------------------------------------===//

TEST(CpuKernelsGradient, LayerNormGradInputGammaBeta) {
  const int64_t rows = 3, n = 8;
  const double epsilon = 1e-3;
  Buffer x = randomTensor(DType::F32, {rows, n}, 10, -2.0, 3.0);
  Buffer gamma = randomTensor(DType::F32, {n}, 11, 0.5, 1.5);
  Buffer beta = randomTensor(DType::F32, {n}, 12);
  Buffer dy = randomTensor(DType::F32, {rows, n}, 13);
  Buffer dx(DType::F32, {rows, n}), dgamma(DType::F32, {n}),
      dbeta(DType::F32, {n});
  runKernel("nn.layer_norm_grad", makeAttrs({{"epsilon", epsilon}}),
            {dy.ref, x.ref, gamma.ref}, {dx.ref, dgamma.ref, dbeta.ref});
  std::vector<double> xv = x.values(), gv = gamma.values(), bv = beta.values();
  checkGradient(
      [&](const std::vector<double> &v) {
        return layerNormForward(v, gv, bv, n, epsilon);
      },
      xv, dy.values(), dx.values(), "grad_input");
  checkGradient(
      [&](const std::vector<double> &v) {
        return layerNormForward(xv, v, bv, n, epsilon);
      },
      gv, dy.values(), dgamma.values(), "grad_gamma");
  checkGradient(
      [&](const std::vector<double> &v) {
        return layerNormForward(xv, gv, v, n, epsilon);
      },
      bv, dy.values(), dbeta.values(), "grad_beta");
}

TEST(CpuKernelsGradient, LayerNormGradDefaultEpsilon) {
  const int64_t n = 300;
  Buffer x = randomTensor(DType::F32, {2, n}, 14, -2.0, 2.0);
  Buffer gamma = randomTensor(DType::F32, {n}, 15);
  Buffer dy = randomTensor(DType::F32, {2, n}, 16);
  Buffer dx(DType::F32, {2, n}), dgamma(DType::F32, {n}),
      dbeta(DType::F32, {n});
  runKernel("nn.layer_norm_grad", {}, {dy.ref, x.ref, gamma.ref},
            {dx.ref, dgamma.ref, dbeta.ref});
  std::vector<double> gv = gamma.values(), zero(n, 0.0);
  checkGradient(
      [&](const std::vector<double> &v) {
        return layerNormForward(v, gv, zero, n, 1e-5);
      },
      x.values(), dy.values(), dx.values(), "grad_input");
}

TEST(CpuKernelsGradient, SoftmaxGradPlainAndCausal) {
  const int64_t t = 6;
  for (bool causal : {false, true}) {
    Buffer x = randomTensor(DType::F32, {2, t, t}, 20, -3.0, 3.0);
    std::vector<double> yv = softmaxForward(x.values(), t, causal);
    Buffer y = makeTensor(DType::F32, {2, t, t}, yv);
    Buffer dy = randomTensor(DType::F32, {2, t, t}, 21);
    Buffer dx(DType::F32, {2, t, t});
    AttrMap attrs;
    if (causal)
      attrs.set("causal", true);
    runKernel("nn.softmax_grad", attrs, {dy.ref, y.ref}, {dx.ref});
    checkGradient(
        [&](const std::vector<double> &v) {
          return softmaxForward(v, t, causal);
        },
        x.values(), dy.values(), dx.values(),
        causal ? "causal softmax_grad" : "softmax_grad");
  }
}

TEST(CpuKernelsGradient, SoftmaxGradInnerAxis) {
  // Along axis 0 of (4, 3): columns.
  Buffer x = randomTensor(DType::F32, {4, 3}, 22, -3.0, 3.0);
  auto forward = [](const std::vector<double> &v) {
    std::vector<double> y(12);
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0;
      for (int64_t r = 0; r < 4; ++r)
        sum += std::exp(v[r * 3 + c]);
      for (int64_t r = 0; r < 4; ++r)
        y[r * 3 + c] = std::exp(v[r * 3 + c]) / sum;
    }
    return y;
  };
  Buffer y = makeTensor(DType::F32, {4, 3}, forward(x.values()));
  Buffer dy = randomTensor(DType::F32, {4, 3}, 23);
  Buffer dx(DType::F32, {4, 3});
  runKernel("nn.softmax_grad", makeAttrs({{"axis", int64_t{0}}}),
            {dy.ref, y.ref}, {dx.ref});
  checkGradient(forward, x.values(), dy.values(), dx.values(), "axis 0");
}

TEST(CpuKernelsGradient, CrossEntropyGradWithAndWithoutCount) {
  const int64_t classes = 7;
  Buffer logits = randomTensor(DType::F32, {2, 3, classes}, 30, -3.0, 3.0);
  Buffer labels = randomIndices(DType::I32, {2, 3}, 31, classes);
  Buffer gradLoss = makeTensor(DType::F32, {}, {0.7});
  std::vector<double> lv = labels.values();
  for (int64_t count : {int64_t{0}, int64_t{20}}) {
    AttrMap attrs;
    double divisor = 6;
    if (count) {
      attrs.set("count", count);
      divisor = static_cast<double>(count);
    }
    Buffer dx(DType::F32, {2, 3, classes});
    runKernel("nn.cross_entropy_grad", attrs,
              {gradLoss.ref, logits.ref, labels.ref}, {dx.ref});
    checkGradient(
        [&](const std::vector<double> &v) {
          return std::vector<double>{crossEntropySum(v, lv, classes) / divisor};
        },
        logits.values(), {0.7}, dx.values(), "count " + std::to_string(count));
  }
}

TEST(CpuKernelsGradient, CrossEntropyGradOverItsLogits) {
  // The memory plan may give the gradient the logits' bytes: the same
  // values, bit for bit, as into a buffer of its own.
  const int64_t classes = 301;
  Buffer logits = randomTensor(DType::F32, {5, classes}, 32, -4.0, 4.0);
  Buffer labels = randomIndices(DType::I64, {5}, 33, classes);
  Buffer gradLoss = makeTensor(DType::F32, {}, {1.3});
  Buffer separate(DType::F32, {5, classes});
  runKernel("nn.cross_entropy_grad", {}, {gradLoss.ref, logits.ref, labels.ref},
            {separate.ref});
  runKernel("nn.cross_entropy_grad", {}, {gradLoss.ref, logits.ref, labels.ref},
            {logits.ref});
  expectClose(logits.values(), separate.values(), 0, 0, "in place");
}

TEST(CpuKernelsGradient, EmbeddingGradAccumulatesRepeatedIds) {
  const int64_t vocab = 5, dim = 3;
  for (DType idType : {DType::I32, DType::I64}) {
    Buffer table = randomTensor(DType::F32, {vocab, dim}, 40);
    Buffer ids = makeTensor(idType, {2, 4}, {1, 3, 1, 0, 4, 1, 3, 3});
    Buffer dy = randomTensor(DType::F32, {2, 4, dim}, 41);
    Buffer dtable(DType::F32, {vocab, dim});
    dtable.set(0, 123.0); // The result starts from zero, not from its bytes.
    runKernel("nn.embedding_grad", makeAttrs({{"vocab_size", vocab}}),
              {dy.ref, ids.ref}, {dtable.ref});
    std::vector<double> idv = ids.values();
    checkGradient(
        [&](const std::vector<double> &v) {
          std::vector<double> y;
          for (double id : idv)
            for (int64_t j = 0; j < dim; ++j)
              y.push_back(v[static_cast<int64_t>(id) * dim + j]);
          return y;
        },
        table.values(), dy.values(), dtable.values(), dtypeName(idType));
  }
}

//===----------------------------------------------------------------------===//
// Backward formulas built from forward kernels
//===----------------------------------------------------------------------===//

/// Runs `op` with one result of `shape` and returns it.
Buffer apply(std::string_view op, const AttrMap &attrs,
             const std::vector<TensorRef> &operands,
             std::vector<int64_t> shape) {
  Buffer result(DType::F32, std::move(shape));
  runKernel(op, attrs, operands, {result.ref});
  return result;
}

AttrMap matmulFlags(bool ta, bool tb) {
  AttrMap attrs;
  if (ta)
    attrs.set("transpose_lhs", true);
  if (tb)
    attrs.set("transpose_rhs", true);
  return attrs;
}

/// da and db of y = op(a) op(b) as NNGradients.cpp builds them.
void checkMatmulGradients(std::string_view op, int64_t batch,
                          std::vector<int64_t> batchDims) {
  const int64_t m = 4, k = 5, n = 3;
  auto shapeOf = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> shape = batchDims;
    shape.push_back(rows);
    shape.push_back(cols);
    return shape;
  };
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      std::vector<int64_t> aShape = ta ? shapeOf(k, m) : shapeOf(m, k);
      std::vector<int64_t> bShape = tb ? shapeOf(n, k) : shapeOf(k, n);
      Buffer a = randomTensor(DType::F32, aShape, 50);
      Buffer b = randomTensor(DType::F32, bShape, 51);
      Buffer dy = randomTensor(DType::F32, shapeOf(m, n), 52);
      Buffer da =
          ta ? apply(op, matmulFlags(tb, true), {b.ref, dy.ref}, aShape)
             : apply(op, matmulFlags(false, !tb), {dy.ref, b.ref}, aShape);
      Buffer db =
          tb ? apply(op, matmulFlags(true, ta), {dy.ref, a.ref}, bShape)
             : apply(op, matmulFlags(!ta, false), {a.ref, dy.ref}, bShape);
      std::vector<double> av = a.values(), bv = b.values();
      std::string what = std::string(op) + " ta=" + std::to_string(ta) +
                         " tb=" + std::to_string(tb);
      checkGradient(
          [&](const std::vector<double> &v) {
            return matmulForward(v, bv, batch, m, k, n, ta, tb);
          },
          av, dy.values(), da.values(), what + " da");
      checkGradient(
          [&](const std::vector<double> &v) {
            return matmulForward(av, v, batch, m, k, n, ta, tb);
          },
          bv, dy.values(), db.values(), what + " db");
    }
  }
}

TEST(CpuKernelsGradient, MatmulBackwardIdentities) {
  checkMatmulGradients("nn.matmul", 1, {});
}

TEST(CpuKernelsGradient, BatchMatmulBackwardIdentities) {
  checkMatmulGradients("nn.batch_matmul", 6, {2, 3});
}

TEST(CpuKernelsGradient, MulAndDivBroadcastBackward) {
  // y = a (2, 3, 4) op b (3, 1): b's gradient sums over axes 0 and 2.
  Buffer a = randomTensor(DType::F32, {2, 3, 4}, 60, 0.5, 2.0);
  Buffer b = randomTensor(DType::F32, {3, 1}, 61, 0.5, 2.0);
  Buffer dy = randomTensor(DType::F32, {2, 3, 4}, 62);
  std::vector<double> av = a.values(), bv = b.values();
  auto forward = [](const std::vector<double> &x, const std::vector<double> &w,
                    bool divide) {
    std::vector<double> y(24);
    for (int64_t i = 0; i < 24; ++i) {
      double rhs = w[(i / 4) % 3];
      y[i] = divide ? x[i] / rhs : x[i] * rhs;
    }
    return y;
  };
  AttrMap sumAxes = makeAttrs({{"axes", ints({0, 2})}});

  // mul: da = dy * b, db = sum_to(dy * a).
  Buffer da = apply("nn.mul", {}, {dy.ref, b.ref}, {2, 3, 4});
  Buffer dyA = apply("nn.mul", {}, {dy.ref, a.ref}, {2, 3, 4});
  Buffer dbFlat = apply("nn.reduce_sum", sumAxes, {dyA.ref}, {3});
  Buffer db = apply("nn.reshape", {}, {dbFlat.ref}, {3, 1});
  checkGradient(
      [&](const std::vector<double> &v) { return forward(v, bv, false); }, av,
      dy.values(), da.values(), "mul da");
  checkGradient(
      [&](const std::vector<double> &v) { return forward(av, v, false); }, bv,
      dy.values(), db.values(), "mul db");

  // div: da = dy / b, db = -sum_to(dy * y / b).
  Buffer y = apply("nn.div", {}, {a.ref, b.ref}, {2, 3, 4});
  Buffer daDiv = apply("nn.div", {}, {dy.ref, b.ref}, {2, 3, 4});
  Buffer dyY = apply("nn.mul", {}, {dy.ref, y.ref}, {2, 3, 4});
  Buffer dyYOverB = apply("nn.div", {}, {dyY.ref, b.ref}, {2, 3, 4});
  Buffer summed = apply("nn.reduce_sum", sumAxes, {dyYOverB.ref}, {3});
  Buffer reshaped = apply("nn.reshape", {}, {summed.ref}, {3, 1});
  Buffer dbDiv =
      apply("nn.scale", makeAttrs({{"factor", -1.0}}), {reshaped.ref}, {3, 1});
  checkGradient(
      [&](const std::vector<double> &v) { return forward(v, bv, true); }, av,
      dy.values(), daDiv.values(), "div da");
  checkGradient(
      [&](const std::vector<double> &v) { return forward(av, v, true); }, bv,
      dy.values(), dbDiv.values(), "div db");
}

TEST(CpuKernelsGradient, BiasAddAndSubBackward) {
  Buffer x = randomTensor(DType::F32, {3, 4}, 63);
  Buffer bias = randomTensor(DType::F32, {4}, 64);
  Buffer dy = randomTensor(DType::F32, {3, 4}, 65);
  // bias_add: dbias = dy summed over every axis but the last.
  Buffer dbias =
      apply("nn.reduce_sum", makeAttrs({{"axes", ints({0})}}), {dy.ref}, {4});
  std::vector<double> xv = x.values();
  checkGradient(
      [&](const std::vector<double> &v) {
        std::vector<double> y(12);
        for (int64_t i = 0; i < 12; ++i)
          y[i] = xv[i] + v[i % 4];
        return y;
      },
      bias.values(), dy.values(), dbias.values(), "bias_add dbias");
  // sub: db = -sum_to(dy).
  Buffer dbSub =
      apply("nn.scale", makeAttrs({{"factor", -1.0}}), {dbias.ref}, {4});
  checkGradient(
      [&](const std::vector<double> &v) {
        std::vector<double> y(12);
        for (int64_t i = 0; i < 12; ++i)
          y[i] = xv[i] - v[i % 4];
        return y;
      },
      bias.values(), dy.values(), dbSub.values(), "sub db");
}

TEST(CpuKernelsGradient, TransposeBackward) {
  std::vector<int64_t> shape = {2, 3, 4}, permutation = {2, 0, 1};
  std::vector<int64_t> inverse = {1, 2, 0};
  Buffer x = randomTensor(DType::F32, shape, 70);
  Buffer dy = randomTensor(DType::F32, {4, 2, 3}, 71);
  Buffer dx = apply("nn.transpose", makeAttrs({{"permutation", inverse}}),
                    {dy.ref}, shape);
  checkGradient(
      [&](const std::vector<double> &v) {
        std::vector<double> y(24);
        for (int64_t i = 0; i < 24; ++i) {
          std::vector<int64_t> index = unravel(i, {4, 2, 3});
          // y[c, a, b] = x[a, b, c]
          y[i] = v[index[1] * 12 + index[2] * 4 + index[0]];
        }
        return y;
      },
      x.values(), dy.values(), dx.values(), "transpose");
}

TEST(CpuKernelsGradient, PadAndSliceBackward) {
  // y = pad(x, low, high): dx = slice(dy, low, x's shape).
  Buffer x = randomTensor(DType::F32, {2, 3}, 80);
  Buffer dy = randomTensor(DType::F32, {5, 4}, 81);
  Buffer dx =
      apply("nn.slice",
            makeAttrs({{"offsets", ints({1, 0})}, {"sizes", ints({2, 3})}}),
            {dy.ref}, {2, 3});
  checkGradient(
      [](const std::vector<double> &v) {
        std::vector<double> y(20, 0.0);
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 3; ++j)
            y[(i + 1) * 4 + j] = v[i * 3 + j];
        return y;
      },
      x.values(), dy.values(), dx.values(), "pad");
  // y = slice(x, offsets, sizes): dx = pad(dy, offsets, dim - offset - size).
  Buffer big = randomTensor(DType::F32, {5, 4}, 82);
  Buffer dyWindow = randomTensor(DType::F32, {2, 3}, 83);
  Buffer dbig = apply(
      "nn.pad", makeAttrs({{"low", ints({2, 1})}, {"high", ints({1, 0})}}),
      {dyWindow.ref}, {5, 4});
  checkGradient(
      [](const std::vector<double> &v) {
        std::vector<double> y(6);
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 3; ++j)
            y[i * 3 + j] = v[(i + 2) * 4 + 1 + j];
        return y;
      },
      big.values(), dyWindow.values(), dbig.values(), "slice");
}

TEST(CpuKernelsGradient, ConcatAndSplitBackward) {
  // y = concat(x0 (2, 1), x1 (2, 3)) along 1: dx_i = slices of dy.
  Buffer x0 = randomTensor(DType::F32, {2, 1}, 90);
  Buffer x1 = randomTensor(DType::F32, {2, 3}, 91);
  Buffer dy = randomTensor(DType::F32, {2, 4}, 92);
  Buffer dx1 =
      apply("nn.slice",
            makeAttrs({{"offsets", ints({0, 1})}, {"sizes", ints({2, 3})}}),
            {dy.ref}, {2, 3});
  std::vector<double> x0v = x0.values();
  checkGradient(
      [&](const std::vector<double> &v) {
        std::vector<double> y(8);
        for (int64_t r = 0; r < 2; ++r) {
          y[r * 4] = x0v[r];
          for (int64_t j = 0; j < 3; ++j)
            y[r * 4 + 1 + j] = v[r * 3 + j];
        }
        return y;
      },
      x1.values(), dy.values(), dx1.values(), "concat");
  // y0, y1 = split(x (2, 4), [1, 3]) along 1: dx = concat(dy0, dy1); the
  // loss is sum(y0 dy0) + sum(y1 dy1).
  Buffer x = randomTensor(DType::F32, {2, 4}, 93);
  Buffer dy0 = randomTensor(DType::F32, {2, 1}, 94);
  Buffer dy1 = randomTensor(DType::F32, {2, 3}, 95);
  Buffer dx = apply("nn.concat", makeAttrs({{"axis", int64_t{1}}}),
                    {dy0.ref, dy1.ref}, {2, 4});
  std::vector<double> upstream = dy0.values();
  for (double v : dy1.values())
    upstream.push_back(v);
  checkGradient(
      [](const std::vector<double> &v) {
        std::vector<double> y;
        for (int64_t r = 0; r < 2; ++r)
          y.push_back(v[r * 4]);
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t j = 1; j < 4; ++j)
            y.push_back(v[r * 4 + j]);
        return y;
      },
      x.values(), upstream, dx.values(), "split");
}

TEST(CpuKernelsGradient, ReduceMeanBackward) {
  // y = mean of x (2, 3, 4) over axes [0, 2]: dx = dy / 8 broadcast back,
  // as reshape + add onto a zero fill.
  Buffer x = randomTensor(DType::F32, {2, 3, 4}, 100);
  Buffer dy = randomTensor(DType::F32, {3}, 101);
  Buffer scaled =
      apply("nn.scale", makeAttrs({{"factor", 1.0 / 8}}), {dy.ref}, {3});
  Buffer kept = apply("nn.reshape", {}, {scaled.ref}, {1, 3, 1});
  Buffer zeros = apply("nn.fill", makeAttrs({{"value", 0.0}}), {}, {2, 3, 4});
  Buffer dx = apply("nn.add", {}, {kept.ref, zeros.ref}, {2, 3, 4});
  checkGradient(
      [](const std::vector<double> &v) {
        std::vector<double> y(3, 0.0);
        for (int64_t i = 0; i < 24; ++i)
          y[(i / 4) % 3] += v[i] / 8;
        return y;
      },
      x.values(), dy.values(), dx.values(), "reduce_mean");
}

TEST(CpuKernelsGradient, ScaleAndCastBackward) {
  Buffer x = randomTensor(DType::F32, {10}, 110);
  Buffer dy = randomTensor(DType::F32, {10}, 111);
  Buffer dx = apply("nn.scale", makeAttrs({{"factor", 2.5}}), {dy.ref}, {10});
  checkGradient(
      [](const std::vector<double> &v) {
        return elementwise(v, [](double a) { return 2.5 * a; });
      },
      x.values(), dy.values(), dx.values(), "scale");
  // y = cast(x) to bf16: dx = cast(dy) back to f32; d cast / dx is 1.
  Buffer dyHalf = randomTensor(DType::BF16, {10}, 112);
  Buffer dxWide = apply("nn.cast", {}, {dyHalf.ref}, {10});
  checkGradient([](const std::vector<double> &v) { return v; }, x.values(),
                dyHalf.values(), dxWide.values(), "cast");
}

} // namespace
} // namespace zerosbp::runtime::test
