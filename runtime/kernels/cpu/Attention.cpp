//===- Attention.cpp - fused (flash) attention and its gradient -----------===//
//
// result = softmax(scale q k^T) v per batch slice, tiled over blocks of
// queries and keys with an online softmax (FlashAttention), so that no
// Sq x Sk matrix is ever stored; lse = log of each row's softmax sum, from
// which the backward (FlashAttention-2's) recomputes the probabilities one
// tile at a time.
//
// The tile products are register-blocked loops of fused multiply-adds, not
// sgemm calls: at these sizes OpenBLAS's per-call packing costs as much as
// the product, and the softmax runs between the products. Each element of a
// product is one multiply-add chain in a fixed order, and each batch slice
// is computed alone, so results do not depend on the blocking, the machine's
// vector width, the thread count or which slices a rank holds.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/AttentionChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

#include <cmath>
#include <limits>

/// The kernels' clones, as ZEROSBP_CPU_CLONES but with x86-64-v3 (AVX2 with
/// FMA) for plain AVX2: without FMA the products' multiply-adds become calls.
#if defined(__x86_64__) && defined(__clang__) && defined(__linux__)
#define ZEROSBP_FMA_CLONES                                                     \
  __attribute__((                                                              \
      target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ZEROSBP_FMA_CLONES
#endif

namespace zerosbp::runtime::cpu {

namespace {
using checks::AttentionLayout;

/// Floats per vector; the products' columns are padded to a multiple.
constexpr int64_t kLanes = 16;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

/// Queries and keys per tile, a multiple of kLanes.
constexpr int64_t kBlock = 64;

constexpr float kInfinity = std::numeric_limits<float>::infinity();

int64_t padded(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

/// Whether the machine has 32 vector registers of 16 floats (AVX-512): the
/// products then keep larger blocks in registers.
bool hasWideVectors() {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
  static const bool wide = __builtin_cpu_supports("avx512f");
  return wide;
#else
  return false;
#endif
}

ZEROSBP_INLINE Vec load(const float *p) {
  Vec v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

ZEROSBP_INLINE void store(float *p, Vec v) { std::memcpy(p, &v, sizeof(v)); }

ZEROSBP_INLINE Vec splat(float x) {
  Vec v;
  for (int64_t l = 0; l < kLanes; ++l)
    v[l] = x;
  return v;
}

/// a * b + c, rounded once.
ZEROSBP_INLINE Vec fusedMultiplyAdd(Vec a, Vec b, Vec c) {
#if defined(__clang__)
  return __builtin_elementwise_fma(a, b, c);
#else
  Vec r;
  for (int64_t l = 0; l < kLanes; ++l)
    r[l] = __builtin_fmaf(a[l], b[l], c[l]);
  return r;
#endif
}

/// The lanes of `v` added pairwise, in the same order everywhere.
ZEROSBP_INLINE float sumLanes(Vec v) {
  float lane[kLanes];
  std::memcpy(lane, &v, sizeof(lane));
  for (int64_t width = kLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      lane[l] += lane[l + width];
  return lane[0];
}

/// max(row[0, kLanes vectors)).
ZEROSBP_INLINE float maxOfVectors(const float *row, int64_t vectors) {
  Vec best = load(row);
  for (int64_t v = 1; v < vectors; ++v) {
    Vec x = load(row + v * kLanes);
    best = x > best ? x : best;
  }
  float max = best[0];
  for (int64_t l = 1; l < kLanes; ++l)
    max = best[l] > max ? best[l] : max;
  return max;
}

/// sum(row[0, kLanes vectors)): lane by lane, then pairwise.
ZEROSBP_INLINE float sumOfVectors(const float *row, int64_t vectors) {
  Vec sum = {};
  for (int64_t v = 0; v < vectors; ++v)
    sum += load(row + v * kLanes);
  return sumLanes(sum);
}

//===----------------------------------------------------------------------===//
// Tile products
//===----------------------------------------------------------------------===//

/// The operands of C (m x n) (+)= A (m x t) B (t x n): A(i, p) at
/// a[i * aRow + p * aCol] (so A or a transposed A), B and C row-major with
/// n a multiple of kLanes.
struct Product {
  int64_t m, n, t;
  const float *a;
  int64_t aRow, aCol;
  const float *b;
  int64_t ldb;
  float *c;
  int64_t ldc;
  bool accumulate;
};

/// Rows [row, row + Rows) and vectors [col, col + Vecs) of C, in registers.
template <int Rows, int Vecs>
ZEROSBP_INLINE void productBlock(const Product &g, int64_t row, int64_t col) {
  Vec acc[Rows][Vecs];
  float *c = g.c + row * g.ldc + col;
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vecs; ++v)
      acc[r][v] = g.accumulate ? load(c + r * g.ldc + v * kLanes) : Vec{};
  const float *a = g.a + row * g.aRow;
  const float *b = g.b + col;
  for (int64_t p = 0; p < g.t; ++p) {
    Vec bv[Vecs];
    for (int v = 0; v < Vecs; ++v)
      bv[v] = load(b + p * g.ldb + v * kLanes);
    for (int r = 0; r < Rows; ++r) {
      Vec av = splat(a[r * g.aRow + p * g.aCol]);
      for (int v = 0; v < Vecs; ++v)
        acc[r][v] = fusedMultiplyAdd(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vecs; ++v)
      store(c + r * g.ldc + v * kLanes, acc[r][v]);
}

/// Every row of vectors [col, col + Vecs): blocks of Rows, then the rest in
/// halving blocks.
template <int Rows, int Vecs>
ZEROSBP_INLINE void productColumns(const Product &g, int64_t col) {
  int64_t row = 0;
  for (; row + Rows <= g.m; row += Rows)
    productBlock<Rows, Vecs>(g, row, col);
  if constexpr (Rows > 8)
    if (row + 8 <= g.m) {
      productBlock<8, Vecs>(g, row, col);
      row += 8;
    }
  if constexpr (Rows > 4)
    if (row + 4 <= g.m) {
      productBlock<4, Vecs>(g, row, col);
      row += 4;
    }
  if constexpr (Rows > 2)
    if (row + 2 <= g.m) {
      productBlock<2, Vecs>(g, row, col);
      row += 2;
    }
  if constexpr (Rows > 1)
    if (row < g.m)
      productBlock<1, Vecs>(g, row, col);
}

/// With 32 registers: 4 vectors by 6 rows, the rest 3 by 8, 2 by 12 or 1 by
/// 16 (24 accumulators at most). With 16: 1 vector by 6 rows.
ZEROSBP_FMA_CLONES
void product(const Product &g) {
  int64_t col = 0;
  if (!hasWideVectors()) {
    for (; col < g.n; col += kLanes)
      productColumns<6, 1>(g, col);
    return;
  }
  for (; col + 4 * kLanes <= g.n; col += 4 * kLanes)
    productColumns<6, 4>(g, col);
  switch ((g.n - col) / kLanes) {
  case 3:
    productColumns<8, 3>(g, col);
    break;
  case 2:
    productColumns<12, 2>(g, col);
    break;
  case 1:
    productColumns<16, 1>(g, col);
    break;
  default:
    break;
  }
}

//===----------------------------------------------------------------------===//
// Slices
//===----------------------------------------------------------------------===//

/// The keys query `row` sees among the `count` keys from `first`.
int64_t visibleKeys(bool causal, int64_t row, int64_t first, int64_t count) {
  if (!causal)
    return count;
  return std::max<int64_t>(0, std::min(count, row - first + 1));
}

/// dst (rows x ld, ld >= cols) = src (rows x cols), zero-padded.
void packRows(const float *src, int64_t rows, int64_t cols, float *dst,
              int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * ld, src + r * cols,
                static_cast<size_t>(cols) * sizeof(float));
    std::fill(dst + r * ld + cols, dst + (r + 1) * ld, 0.0f);
  }
}

/// dst (cols x ld, ld >= rows) = src (rows x cols) transposed, zero-padded.
void packTransposed(const float *src, int64_t rows, int64_t cols, float *dst,
                    int64_t ld) {
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r)
      dst[c * ld + r] = src[r * cols + c];
    std::fill(dst + c * ld + rows, dst + (c + 1) * ld, 0.0f);
  }
}

/// One batch slice of a float tensor as f32: its own bytes when f32, else a
/// widened copy.
class SliceInput {
public:
  SliceInput(const TensorRef &tensor, int64_t sliceSize)
      : tensor(tensor), sliceSize(sliceSize) {
    if (tensor.dtype != DType::F32)
      storage.resize(static_cast<size_t>(sliceSize));
  }
  const float *load(int64_t slice) {
    if (tensor.dtype == DType::F32)
      return tensor.as<const float>() + slice * sliceSize;
    widen(tensor, slice * sliceSize, sliceSize, storage.data());
    return storage.data();
  }

private:
  const TensorRef &tensor;
  int64_t sliceSize;
  std::vector<float> storage;
};

/// Where one batch slice of a float result is written in f32: the result's
/// bytes when f32, else a buffer that store() narrows into it.
class SliceOutput {
public:
  SliceOutput(const TensorRef &tensor, int64_t sliceSize)
      : tensor(tensor), sliceSize(sliceSize) {
    if (tensor.dtype != DType::F32)
      storage.resize(static_cast<size_t>(sliceSize));
  }
  float *begin(int64_t slice) {
    if (tensor.dtype == DType::F32)
      return tensor.as<float>() + slice * sliceSize;
    return storage.data();
  }
  void store(int64_t slice) {
    if (tensor.dtype != DType::F32)
      narrow(storage.data(), sliceSize, tensor, slice * sliceSize);
  }

private:
  const TensorRef &tensor;
  int64_t sliceSize;
  std::vector<float> storage;
};

/// dst (rows x cols) = factor * src (rows x ld).
void unpackRows(const float *src, int64_t ld, int64_t rows, int64_t cols,
                float factor, float *dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * cols + c] = src[r * ld + c] * factor;
}

/// Scales the visible scores of a row, and sets the hidden ones to -inf up
/// to the end of the vectors that hold visible ones. Returns those vectors.
ZEROSBP_INLINE int64_t prepareScores(float *row, int64_t valid, float scale) {
  int64_t vectors = (valid + kLanes - 1) / kLanes;
  for (int64_t j = 0; j < vectors * kLanes; ++j)
    row[j] = j < valid ? row[j] * scale : -kInfinity;
  return vectors;
}

/// row[j] = exp(row[j] - offset) for the visible keys, 0 for the hidden
/// ones. The hidden ones never reach fastExp: its subnormal intermediates
/// for -inf would take a microcode assist per vector.
ZEROSBP_INLINE void expScores(float *row, int64_t valid, int64_t vectors,
                              float offset) {
  for (int64_t j = 0; j < vectors * kLanes; ++j) {
    float e = fastExp(j < valid ? row[j] - offset : 0.0f);
    row[j] = j < valid ? e : 0.0f;
  }
}

/// The forward's softmax step on a tile of scores (stride kBlock): each
/// row's running max and sum take in its visible keys, its accumulator is
/// rescaled to the new max and the scores become exp(score - max), 0 where
/// hidden.
ZEROSBP_FMA_CLONES
void onlineSoftmax(const AttentionLayout &layout, int64_t firstQuery,
                   int64_t rows, int64_t firstKey, int64_t cols, float *s,
                   float *runningMax, double *runningSum, float *acc,
                   int64_t accStride) {
  int64_t tileVectors = (cols + kLanes - 1) / kLanes;
  for (int64_t r = 0; r < rows; ++r) {
    float *row = s + r * kBlock;
    int64_t valid = visibleKeys(layout.causal, firstQuery + r, firstKey, cols);
    int64_t vectors = 0;
    if (valid > 0) {
      vectors = prepareScores(row, valid, layout.scale);
      float previous = runningMax[r];
      float max = std::max(previous, maxOfVectors(row, vectors));
      expScores(row, valid, vectors, max);
      float sum = sumOfVectors(row, vectors);
      // The first tile has nothing to rescale.
      if (max != previous && previous != -kInfinity) {
        float correction = fastExp(previous - max);
        runningSum[r] *= correction;
        for (int64_t d = 0; d < accStride; ++d)
          acc[r * accStride + d] *= correction;
      }
      runningMax[r] = max;
      runningSum[r] += sum;
    }
    for (int64_t j = vectors * kLanes; j < tileVectors * kLanes; ++j)
      row[j] = 0.0f;
  }
}

/// out = acc / sum and lse = max + log(sum) for each row of a query block.
void finishRows(int64_t rows, int64_t dv, const float *acc, int64_t accStride,
                const float *runningMax, const double *runningSum, float *out,
                float *lse) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = runningSum[r];
    auto inverse = static_cast<float>(1.0 / sum);
    for (int64_t d = 0; d < dv; ++d)
      out[r * dv + d] = acc[r * accStride + d] * inverse;
    lse[r] = static_cast<float>(runningMax[r] + std::log(sum));
  }
}

/// Per-slice copies in the layouts the products read, and the tiles.
struct Scratch {
  std::vector<float> q, k, kt, vt, v, dout, dq, dk, dv, acc, s, dp, delta;
  std::vector<float> runningMax;
  std::vector<double> runningSum;
};

/// One batch slice of the forward.
ZEROSBP_FMA_CLONES
void attentionSlice(const AttentionLayout &layout, const float *q,
                    const float *k, const float *v, float *out, float *lse,
                    Scratch &scratch) {
  int64_t sq = layout.queries, sk = layout.keys, d = layout.headDim,
          dv = layout.valueDim;
  int64_t skPadded = padded(sk), dvPadded = padded(dv);
  float *kt = scratch.kt.data(), *vp = scratch.v.data();
  float *acc = scratch.acc.data(), *s = scratch.s.data();
  float *runningMax = scratch.runningMax.data();
  double *runningSum = scratch.runningSum.data();
  packTransposed(k, sk, d, kt, skPadded);
  packRows(v, sk, dv, vp, dvPadded);
  for (int64_t i0 = 0; i0 < sq; i0 += kBlock) {
    int64_t rows = std::min(kBlock, sq - i0);
    std::fill(acc, acc + rows * dvPadded, 0.0f);
    std::fill(runningMax, runningMax + rows, -kInfinity);
    std::fill(runningSum, runningSum + rows, 0.0);
    // Key blocks wholly above the diagonal are hidden from every row.
    int64_t keyEnd = layout.causal ? std::min(sk, i0 + rows) : sk;
    for (int64_t j0 = 0; j0 < keyEnd; j0 += kBlock) {
      int64_t cols = std::min(kBlock, keyEnd - j0);
      product({rows, padded(cols), d, q + i0 * d, d, 1, kt + j0, skPadded, s,
               kBlock, false});
      onlineSoftmax(layout, i0, rows, j0, cols, s, runningMax, runningSum, acc,
                    dvPadded);
      product({rows, dvPadded, cols, s, kBlock, 1, vp + j0 * dvPadded,
               dvPadded, acc, dvPadded, true});
    }
    finishRows(rows, dv, acc, dvPadded, runningMax, runningSum, out + i0 * dv,
               lse + i0);
  }
}

/// The backward's p = exp(scale s - lse) on a tile of scores, 0 where
/// hidden.
ZEROSBP_FMA_CLONES
void probabilities(const AttentionLayout &layout, int64_t firstQuery,
                   int64_t rows, int64_t firstKey, int64_t cols,
                   const float *lse, float *s) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = s + r * kBlock;
    int64_t valid = visibleKeys(layout.causal, firstQuery + r, firstKey, cols);
    int64_t vectors = prepareScores(row, valid, layout.scale);
    expScores(row, valid, vectors, lse[r]);
    for (int64_t j = vectors * kLanes; j < cols; ++j)
      row[j] = 0.0f;
  }
}

/// dp := p (dp - delta), row by row: the gradient of the scores.
ZEROSBP_FMA_CLONES
void scoreGradient(int64_t rows, int64_t cols, const float *p,
                   const float *delta, float *dp) {
  for (int64_t r = 0; r < rows; ++r) {
    float offset = delta[r];
    const float *__restrict pRow = p + r * kBlock;
    float *__restrict dpRow = dp + r * kBlock;
    for (int64_t j = 0; j < cols; ++j)
      dpRow[j] = pRow[j] * (dpRow[j] - offset);
  }
}

/// One batch slice of the backward: per key block, dk and dv accumulate
/// over the query blocks that see it, and dq over the key blocks in order.
ZEROSBP_FMA_CLONES
void attentionGradSlice(const AttentionLayout &layout, const float *dout,
                        const float *q, const float *k, const float *v,
                        const float *out, const float *lse, float *dq,
                        float *dk, float *dv, Scratch &scratch) {
  int64_t sq = layout.queries, sk = layout.keys, d = layout.headDim,
          dvDim = layout.valueDim;
  int64_t skPadded = padded(sk), dPadded = padded(d),
          dvPadded = padded(dvDim);
  float *qp = scratch.q.data(), *kp = scratch.k.data(),
        *kt = scratch.kt.data(), *vt = scratch.vt.data(),
        *doutp = scratch.dout.data(), *dqAcc = scratch.dq.data(),
        *dkAcc = scratch.dk.data(), *dvAcc = scratch.dv.data(),
        *p = scratch.s.data(), *dp = scratch.dp.data(),
        *delta = scratch.delta.data();
  packRows(q, sq, d, qp, dPadded);
  packRows(k, sk, d, kp, dPadded);
  packTransposed(k, sk, d, kt, skPadded);
  packTransposed(v, sk, dvDim, vt, skPadded);
  packRows(dout, sq, dvDim, doutp, dvPadded);
  for (int64_t i = 0; i < sq; ++i)
    delta[i] = static_cast<float>(
        dotOf(dout + i * dvDim, out + i * dvDim, dvDim));
  std::fill(dqAcc, dqAcc + sq * dPadded, 0.0f);
  for (int64_t j0 = 0; j0 < sk; j0 += kBlock) {
    int64_t cols = std::min(kBlock, sk - j0);
    std::fill(dkAcc, dkAcc + cols * dPadded, 0.0f);
    std::fill(dvAcc, dvAcc + cols * dvPadded, 0.0f);
    // Query blocks wholly above the diagonal see none of these keys.
    for (int64_t i0 = layout.causal ? j0 : 0; i0 < sq; i0 += kBlock) {
      int64_t rows = std::min(kBlock, sq - i0);
      product({rows, padded(cols), d, qp + i0 * dPadded, dPadded, 1, kt + j0,
               skPadded, p, kBlock, false});
      probabilities(layout, i0, rows, j0, cols, lse + i0, p);
      // dv += p^T dout
      product({cols, dvPadded, rows, p, 1, kBlock, doutp + i0 * dvPadded,
               dvPadded, dvAcc, dvPadded, true});
      // dp = dout v^T, then ds
      product({rows, padded(cols), dvDim, doutp + i0 * dvPadded, dvPadded, 1,
               vt + j0, skPadded, dp, kBlock, false});
      scoreGradient(rows, cols, p, delta + i0, dp);
      // dq += ds k, dk += ds^T q (scaled once at the end)
      product({rows, dPadded, cols, dp, kBlock, 1, kp + j0 * dPadded, dPadded,
               dqAcc + i0 * dPadded, dPadded, true});
      product({cols, dPadded, rows, dp, 1, kBlock, qp + i0 * dPadded, dPadded,
               dkAcc, dPadded, true});
    }
    unpackRows(dkAcc, dPadded, cols, d, layout.scale, dk + j0 * d);
    unpackRows(dvAcc, dvPadded, cols, dvDim, 1.0f, dv + j0 * dvDim);
  }
  unpackRows(dqAcc, dPadded, sq, d, layout.scale, dq);
}

template <typename T> T *resized(std::vector<T> &buffer, int64_t size) {
  buffer.resize(static_cast<size_t>(size));
  return buffer.data();
}
} // namespace

void attentionKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
  constexpr std::string_view op = "nn.attention";
  AttentionLayout layout =
      checks::checkAttention(op, attrs, operands, results);
  int64_t sq = layout.queries, sk = layout.keys;
  int64_t d = layout.headDim, dv = layout.valueDim;
  if (layout.batch == 0 || sq == 0)
    return;
  float *lse = results[1].as<float>();
  if (sk == 0) {
    // No key to attend to: an empty sum.
    std::fill(lse, lse + layout.batch * sq, -kInfinity);
    std::vector<float> zeros(static_cast<size_t>(sq * dv), 0.0f);
    for (int64_t b = 0; b < layout.batch; ++b)
      narrow(zeros.data(), sq * dv, results[0], b * sq * dv);
    return;
  }
  SliceInput qIn(operands[0], sq * d), kIn(operands[1], sk * d),
      vIn(operands[2], sk * dv);
  SliceOutput out(results[0], sq * dv);
  Scratch scratch;
  resized(scratch.kt, d * padded(sk));
  resized(scratch.v, sk * padded(dv));
  resized(scratch.acc, kBlock * padded(dv));
  resized(scratch.s, kBlock * kBlock);
  resized(scratch.runningMax, kBlock);
  resized(scratch.runningSum, kBlock);
  for (int64_t b = 0; b < layout.batch; ++b) {
    attentionSlice(layout, qIn.load(b), kIn.load(b), vIn.load(b), out.begin(b),
                   lse + b * sq, scratch);
    out.store(b);
  }
}

void attentionGradKernel(const AttrMap &attrs, const Tensors &operands,
                         const Tensors &results) {
  constexpr std::string_view op = "nn.attention_grad";
  AttentionLayout layout =
      checks::checkAttentionGrad(op, attrs, operands, results);
  int64_t sq = layout.queries, sk = layout.keys;
  int64_t d = layout.headDim, dv = layout.valueDim;
  if (layout.batch == 0)
    return;
  SliceInput doutIn(operands[0], sq * dv), qIn(operands[1], sq * d),
      kIn(operands[2], sk * d), vIn(operands[3], sk * dv),
      outIn(operands[4], sq * dv);
  const float *lse = operands[5].as<const float>();
  SliceOutput dq(results[0], sq * d), dk(results[1], sk * d),
      dvOut(results[2], sk * dv);
  Scratch scratch;
  resized(scratch.q, sq * padded(d));
  resized(scratch.k, sk * padded(d));
  resized(scratch.kt, d * padded(sk));
  resized(scratch.vt, dv * padded(sk));
  resized(scratch.dout, sq * padded(dv));
  resized(scratch.dq, sq * padded(d));
  resized(scratch.dk, kBlock * padded(d));
  resized(scratch.dv, kBlock * padded(dv));
  resized(scratch.s, kBlock * kBlock);
  resized(scratch.dp, kBlock * kBlock);
  resized(scratch.delta, sq);
  for (int64_t b = 0; b < layout.batch; ++b) {
    attentionGradSlice(layout, doutIn.load(b), qIn.load(b), kIn.load(b),
                       vIn.load(b), outIn.load(b), lse + b * sq, dq.begin(b),
                       dk.begin(b), dvOut.begin(b), scratch);
    dq.store(b);
    dk.store(b);
    dvOut.store(b);
  }
}

} // namespace zerosbp::runtime::cpu
