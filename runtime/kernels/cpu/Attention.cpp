//===- Attention.cpp - fused (flash) attention and its gradient -----------===//
//
// result = softmax(scale q k^T) v per batch slice, tiled over 64 x 64
// blocks of queries and keys with an online softmax (FlashAttention), so
// that no Sq x Sk matrix is ever stored; lse = log sum_j exp(scale q_i k_j)
// per query, from which the backward (FlashAttention-2's) recomputes the
// probabilities one tile at a time. Causal tiles above the diagonal are
// skipped, and on the diagonal the products skip the hidden half.
//
// The tile products are register-blocked loops of fused multiply-adds, not
// sgemm calls: on 64 x 64 tiles OpenBLAS's packing and call overhead cost
// about as much as the product, and the softmax runs between the products.
// Each element of a product is one multiply-add chain in a fixed order and
// each batch slice is computed alone, on the calling thread, so results do
// not depend on the thread count or on which slices a rank holds.
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
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
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

//===----------------------------------------------------------------------===//
// Tile products
//===----------------------------------------------------------------------===//

/// Which entries of a causal tile a product may skip, for the query block
/// `shift` rows below the key block (query i0 + i sees key j0 + j when
/// j <= i + shift, shift = i0 - j0).
enum class Mask {
  None,
  /// C is queries x keys (the scores): C(i, j) for j > i + shift is not
  /// needed, so a block of columns starts at the first row that sees them.
  Columns,
  /// A is queries x keys (p or ds): A(i, p) = 0 for p > i + shift.
  InnerAfterRow,
  /// A is keys x queries (p^T or ds^T): A(j, p) = 0 for p < j - shift.
  InnerBeforeRow,
};

/// The operands of C (m x n) (+)= A (m x t) B (t x n): A(i, p) at
/// a[i * aRow + p * aCol] (so A or a transposed A), B and C row-major with
/// n a multiple of kLanes. A skipped entry of C is left as it was.
struct Product {
  int64_t m, n, t;
  const float *a;
  int64_t aRow, aCol;
  const float *b;
  int64_t ldb;
  float *c;
  int64_t ldc;
  bool accumulate;
  Mask mask = Mask::None;
  int64_t shift = 0;
};

/// Rows [row, row + Rows) and vectors [col, col + Vecs) of C, in registers.
/// The terms a mask skips are products with A's zeros, which add nothing to
/// a finite sum.
template <int Rows, int Vecs>
ZEROSBP_INLINE void productBlock(const Product &g, int64_t row, int64_t col) {
  int64_t begin = 0, end = g.t;
  if (g.mask == Mask::InnerAfterRow)
    end = std::min(end, row + Rows + g.shift);
  else if (g.mask == Mask::InnerBeforeRow)
    begin = std::min(end, std::max<int64_t>(0, row - g.shift));
  Vec acc[Rows][Vecs];
  float *c = g.c + row * g.ldc + col;
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vecs; ++v)
      acc[r][v] = g.accumulate ? load(c + r * g.ldc + v * kLanes) : Vec{};
  const float *a = g.a + row * g.aRow;
  const float *b = g.b + col;
  for (int64_t p = begin; p < end; ++p) {
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

/// The rows of vectors [col, col + Vecs) that are needed: blocks of Rows,
/// then the rest in halving blocks.
template <int Rows, int Vecs>
ZEROSBP_INLINE void productColumns(const Product &g, int64_t col) {
  int64_t row = 0;
  if (g.mask == Mask::Columns)
    row = std::min(g.m, std::max<int64_t>(0, col - g.shift));
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
/// 16 (24 accumulators at most); single vectors on the diagonal of a causal
/// tile, so that each starts at its own row. With 16: 1 vector by 6 rows.
ZEROSBP_FMA_CLONES
void product(const Product &g) {
  int64_t col = 0;
  if (!hasWideVectors()) {
    for (; col < g.n; col += kLanes)
      productColumns<6, 1>(g, col);
    return;
  }
  if (g.mask == Mask::Columns && g.shift < g.n) {
    for (; col < g.n; col += kLanes)
      productColumns<16, 1>(g, col);
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

/// A row-major matrix the products read as B: rows of `ld` floats, of which
/// a multiple of kLanes are readable.
struct Rows {
  const float *data;
  int64_t ld;
};

/// src (rows x cols) as B: itself when its rows are whole vectors, else
/// copied into `buffer` with each row zero-padded.
Rows asRows(const float *src, int64_t rows, int64_t cols, float *buffer) {
  if (cols % kLanes == 0)
    return {src, cols};
  int64_t ld = padded(cols);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(buffer + r * ld, src + r * cols,
                static_cast<size_t>(cols) * sizeof(float));
    std::fill(buffer + r * ld + cols, buffer + (r + 1) * ld, 0.0f);
  }
  return {buffer, ld};
}

typedef float Vec8 __attribute__((vector_size(8 * sizeof(float))));

/// dst[j * ldDst + i] = src[i * ldSrc + j] for an 8 x 8 block, by the
/// unpack / shuffle / lane-swap network (no gathers).
ZEROSBP_INLINE void transpose8x8(const float *src, int64_t ldSrc, float *dst,
                                 int64_t ldDst) {
  Vec8 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i)
    std::memcpy(&r[i], src + i * ldSrc, sizeof(Vec8));
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] =
        __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] =
        __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] =
        __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] =
        __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int i = 0; i < 4; ++i) {
    Vec8 low =
        __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    Vec8 high =
        __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    std::memcpy(dst + i * ldDst, &low, sizeof(Vec8));
    std::memcpy(dst + (i + 4) * ldDst, &high, sizeof(Vec8));
  }
}

/// dst (cols x ld, ld >= rows) = src (rows x cols) transposed, zero-padded.
ZEROSBP_INLINE void packTransposed(const float *src, int64_t rows, int64_t cols,
                                   float *dst, int64_t ld) {
  int64_t r0 = 0;
  for (; r0 + 8 <= rows; r0 += 8) {
    int64_t c0 = 0;
    for (; c0 + 8 <= cols; c0 += 8)
      transpose8x8(src + r0 * cols + c0, cols, dst + c0 * ld + r0, ld);
    for (; c0 < cols; ++c0)
      for (int64_t i = 0; i < 8; ++i)
        dst[c0 * ld + r0 + i] = src[(r0 + i) * cols + c0];
  }
  for (; r0 < rows; ++r0)
    for (int64_t c = 0; c < cols; ++c)
      dst[c * ld + r0] = src[r0 * cols + c];
  for (int64_t c = 0; c < cols; ++c)
    std::fill(dst + c * ld + rows, dst + (c + 1) * ld, 0.0f);
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

/// dst (rows x cols) = factor * src (rows x ld), or in place when src is
/// dst (and ld is cols); apart, so that both loops vectorize.
ZEROSBP_INLINE void unpackRows(const float *src, int64_t ld, int64_t rows,
                               int64_t cols, float factor, float *dst) {
  if (src == dst) {
    for (int64_t i = 0; i < rows * cols; ++i)
      dst[i] *= factor;
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict from = src + r * ld;
    float *__restrict to = dst + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      to[c] = from[c] * factor;
  }
}

/// max(scale row[j]) over the visible keys, -inf when there are none.
ZEROSBP_INLINE float maxOfScaled(const float *row, int64_t valid, float scale) {
  int64_t whole = valid / kLanes;
  Vec best = splat(-kInfinity);
  for (int64_t v = 0; v < whole; ++v) {
    Vec x = load(row + v * kLanes) * scale;
    best = x > best ? x : best;
  }
  float max = best[0];
  for (int64_t l = 1; l < kLanes; ++l)
    max = best[l] > max ? best[l] : max;
  for (int64_t j = whole * kLanes; j < valid; ++j)
    max = std::max(max, row[j] * scale);
  return max;
}

/// row[j] = exp(scale row[j] - offset) for the visible keys and 0 for the
/// rest of the first `end` entries; returns their sum, added lane by lane
/// and then pairwise. The hidden ones never reach fastExp: its subnormal
/// intermediates for far-negative inputs would take a microcode assist per
/// vector.
ZEROSBP_INLINE float expScores(float *row, int64_t valid, int64_t end,
                               float scale, float offset) {
  int64_t whole = valid / kLanes;
  Vec sum = {};
  for (int64_t v = 0; v < whole; ++v) {
    float *x = row + v * kLanes;
    for (int64_t l = 0; l < kLanes; ++l)
      x[l] = fastExp(x[l] * scale - offset);
    sum += load(x);
  }
  if (whole * kLanes < valid) {
    float *x = row + whole * kLanes;
    for (int64_t l = 0; l < kLanes; ++l) {
      bool shown = whole * kLanes + l < valid;
      float e = fastExp(shown ? x[l] * scale - offset : 0.0f);
      x[l] = shown ? e : 0.0f;
    }
    sum += load(x);
  }
  for (int64_t j = padded(valid); j < end; ++j)
    row[j] = 0.0f;
  return sumLanes(sum);
}

/// The forward's softmax step on a tile of raw scores q . k (stride
/// kBlock): each row's running max and sum take in its visible keys, its
/// accumulator is rescaled to the new max, and the scores become
/// exp(scale s - max), 0 where hidden. In passes over the rows, so that the
/// exps of consecutive rows (and the rescales of all rows) overlap instead
/// of waiting on each row's reductions.
ZEROSBP_FMA_CLONES
void onlineSoftmax(const AttentionLayout &layout, int64_t firstQuery,
                   int64_t rows, int64_t firstKey, int64_t cols, float *s,
                   float *runningMax, double *runningSum, float *acc,
                   int64_t accStride) {
  float previous[kBlock], correction[kBlock];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t valid = visibleKeys(layout.causal, firstQuery + r, firstKey, cols);
    previous[r] = runningMax[r];
    runningMax[r] =
        std::max(previous[r], maxOfScaled(s + r * kBlock, valid, layout.scale));
  }
  // Before its first tile a row has nothing to rescale.
  for (int64_t r = 0; r < rows; ++r) {
    bool first = previous[r] == -kInfinity;
    float e = fastExp(first ? 0.0f : previous[r] - runningMax[r]);
    correction[r] = first ? 0.0f : e;
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (correction[r] == 1.0f || previous[r] == -kInfinity)
      continue;
    runningSum[r] *= correction[r];
    for (int64_t d = 0; d < accStride; ++d)
      acc[r * accStride + d] *= correction[r];
  }
  for (int64_t r = 0; r < rows; ++r)
    runningSum[r] +=
        expScores(s + r * kBlock,
                  visibleKeys(layout.causal, firstQuery + r, firstKey, cols),
                  padded(cols), layout.scale, runningMax[r]);
}

/// out = acc / sum and lse = max + log(sum) for each row of a query block;
/// acc may be out (with accStride dv).
ZEROSBP_INLINE void finishRows(int64_t rows, int64_t dv, const float *acc,
                               int64_t accStride, const float *runningMax,
                               const double *runningSum, float *out,
                               float *lse) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = runningSum[r];
    unpackRows(acc + r * accStride, accStride, 1, dv,
               static_cast<float>(1.0 / sum), out + r * dv);
    lse[r] = static_cast<float>(runningMax[r] + std::log(sum));
  }
}

/// The buffers of one slice, reused by the next: row-major copies (only of
/// matrices whose rows are not whole vectors) and transposed copies in the
/// layouts the products read, accumulators (only where the results' rows
/// are not whole vectors) and tiles.
struct Scratch {
  Scratch(const AttentionLayout &layout, bool backward);
  std::vector<float> q, k, v, dout, kT, vT, outAcc, dqAcc, dkAcc, dvAcc, tile,
      dpTile, delta, runningMax;
  std::vector<double> runningSum;
};

Scratch::Scratch(const AttentionLayout &layout, bool backward) {
  int64_t sq = layout.queries, sk = layout.keys, d = layout.headDim,
          dv = layout.valueDim;
  auto make = [](std::vector<float> &buffer, int64_t size) {
    buffer.resize(static_cast<size_t>(size));
  };
  auto rowsOf = [](int64_t cols, int64_t rows) {
    return cols % kLanes == 0 ? 0 : rows * padded(cols);
  };
  make(kT, d * padded(sk));
  make(tile, kBlock * kBlock);
  if (!backward) {
    make(v, rowsOf(dv, sk));
    make(outAcc, rowsOf(dv, kBlock));
    make(runningMax, kBlock);
    runningSum.resize(kBlock);
    return;
  }
  make(q, rowsOf(d, sq));
  make(k, rowsOf(d, sk));
  make(dout, rowsOf(dv, sq));
  make(vT, dv * padded(sk));
  make(dqAcc, rowsOf(d, sq));
  make(dkAcc, rowsOf(d, kBlock));
  make(dvAcc, rowsOf(dv, kBlock));
  make(dpTile, kBlock * kBlock);
  make(delta, sq);
}

/// One batch slice of the forward.
ZEROSBP_FMA_CLONES
void attentionSlice(const AttentionLayout &layout, const float *q,
                    const float *k, const float *v, float *out, float *lse,
                    Scratch &scratch) {
  int64_t sq = layout.queries, sk = layout.keys, d = layout.headDim,
          dv = layout.valueDim;
  int64_t skPadded = padded(sk), dvPadded = padded(dv);
  float *kt = scratch.kT.data(), *s = scratch.tile.data(),
        *runningMax = scratch.runningMax.data();
  double *runningSum = scratch.runningSum.data();
  packTransposed(k, sk, d, kt, skPadded);
  Rows vRows = asRows(v, sk, dv, scratch.v.data());
  // Whole vectors per row: the block accumulates in the result itself.
  bool direct = dv == dvPadded;
  for (int64_t i0 = 0; i0 < sq; i0 += kBlock) {
    int64_t rows = std::min(kBlock, sq - i0);
    float *blockAcc = direct ? out + i0 * dv : scratch.outAcc.data();
    std::fill(runningMax, runningMax + rows, -kInfinity);
    std::fill(runningSum, runningSum + rows, 0.0);
    // Key blocks wholly above the diagonal are hidden from every row.
    int64_t keyEnd = layout.causal ? std::min(sk, i0 + rows) : sk;
    for (int64_t j0 = 0; j0 < keyEnd; j0 += kBlock) {
      int64_t cols = std::min(kBlock, keyEnd - j0);
      Mask scores = layout.causal ? Mask::Columns : Mask::None;
      Mask probs = layout.causal ? Mask::InnerAfterRow : Mask::None;
      product({rows, padded(cols), d, q + i0 * d, d, 1, kt + j0, skPadded, s,
               kBlock, false, scores, i0 - j0});
      onlineSoftmax(layout, i0, rows, j0, cols, s, runningMax, runningSum,
                    blockAcc, dvPadded);
      product({rows, dvPadded, cols, s, kBlock, 1, vRows.data + j0 * vRows.ld,
               vRows.ld, blockAcc, dvPadded, /*accumulate=*/j0 > 0, probs,
               i0 - j0});
    }
    finishRows(rows, dv, blockAcc, dvPadded, runningMax, runningSum,
               out + i0 * dv, lse + i0);
  }
}

/// The backward's p = exp(scale s - lse) on a tile of scores, 0 where
/// hidden.
ZEROSBP_FMA_CLONES
void probabilities(const AttentionLayout &layout, int64_t firstQuery,
                   int64_t rows, int64_t firstKey, int64_t cols,
                   const float *lse, float *s) {
  for (int64_t r = 0; r < rows; ++r)
    expScores(s + r * kBlock,
              visibleKeys(layout.causal, firstQuery + r, firstKey, cols), cols,
              layout.scale, lse[r]);
}

/// dp := p (dp - delta) over the visible keys and 0 for the hidden ones
/// (whose dp a masked product may not have written): the scores' gradient.
ZEROSBP_FMA_CLONES
void scoreGradient(const AttentionLayout &layout, int64_t firstQuery,
                   int64_t rows, int64_t firstKey, int64_t cols, const float *p,
                   const float *delta, float *dp) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t valid = visibleKeys(layout.causal, firstQuery + r, firstKey, cols);
    float offset = delta[r];
    const float *__restrict pRow = p + r * kBlock;
    float *__restrict dpRow = dp + r * kBlock;
    for (int64_t j = 0; j < valid; ++j)
      dpRow[j] = pRow[j] * (dpRow[j] - offset);
    for (int64_t j = valid; j < cols; ++j)
      dpRow[j] = 0.0f;
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
  int64_t skPadded = padded(sk), dPadded = padded(d), dvPadded = padded(dvDim);
  float *kt = scratch.kT.data(), *vt = scratch.vT.data(),
        *p = scratch.tile.data(), *dp = scratch.dpTile.data(),
        *delta = scratch.delta.data();
  Rows qRows = asRows(q, sq, d, scratch.q.data());
  Rows kRows = asRows(k, sk, d, scratch.k.data());
  Rows doutRows = asRows(dout, sq, dvDim, scratch.dout.data());
  packTransposed(k, sk, d, kt, skPadded);
  packTransposed(v, sk, dvDim, vt, skPadded);
  for (int64_t i = 0; i < sq; ++i)
    delta[i] =
        static_cast<float>(dotOf(dout + i * dvDim, out + i * dvDim, dvDim));
  // Whole vectors per row: the gradients accumulate in the results.
  bool directK = d == dPadded, directV = dvDim == dvPadded;
  float *dqC = directK ? dq : scratch.dqAcc.data();
  // The first product into each accumulator overwrites it; these are the
  // accumulators no product writes.
  if (sk == 0)
    std::fill(dqC, dqC + sq * dPadded, 0.0f);
  if (sq == 0) {
    std::fill(dk, dk + sk * d, 0.0f);
    std::fill(dv, dv + sk * dvDim, 0.0f);
    return;
  }
  Mask scores = layout.causal ? Mask::Columns : Mask::None;
  Mask probs = layout.causal ? Mask::InnerAfterRow : Mask::None;
  Mask transposed = layout.causal ? Mask::InnerBeforeRow : Mask::None;
  for (int64_t j0 = 0; j0 < sk; j0 += kBlock) {
    int64_t cols = std::min(kBlock, sk - j0);
    // Query blocks wholly above the diagonal see none of these keys.
    int64_t firstQuery = layout.causal ? j0 : 0;
    float *dkC = directK ? dk + j0 * d : scratch.dkAcc.data();
    float *dvC = directV ? dv + j0 * dvDim : scratch.dvAcc.data();
    for (int64_t i0 = firstQuery; i0 < sq; i0 += kBlock) {
      int64_t rows = std::min(kBlock, sq - i0);
      bool again = i0 > firstQuery;
      const float *qBlock = qRows.data + i0 * qRows.ld;
      const float *doutBlock = doutRows.data + i0 * doutRows.ld;
      int64_t shift = i0 - j0;
      product({rows, padded(cols), d, qBlock, qRows.ld, 1, kt + j0, skPadded, p,
               kBlock, false, scores, shift});
      probabilities(layout, i0, rows, j0, cols, lse + i0, p);
      // dv += p^T dout
      product({cols, dvPadded, rows, p, 1, kBlock, doutBlock, doutRows.ld, dvC,
               dvPadded, again, transposed, shift});
      // dp = dout v^T, then ds
      product({rows, padded(cols), dvDim, doutBlock, doutRows.ld, 1, vt + j0,
               skPadded, dp, kBlock, false, scores, shift});
      scoreGradient(layout, i0, rows, j0, cols, p, delta + i0, dp);
      // dq += ds k, dk += ds^T q (scaled once at the end)
      product({rows, dPadded, cols, dp, kBlock, 1, kRows.data + j0 * kRows.ld,
               kRows.ld, dqC + i0 * dPadded, dPadded, j0 > 0, probs, shift});
      product({cols, dPadded, rows, dp, 1, kBlock, qBlock, qRows.ld, dkC,
               dPadded, again, transposed, shift});
    }
    unpackRows(dkC, dPadded, cols, d, layout.scale, dk + j0 * d);
    if (!directV)
      unpackRows(dvC, dvPadded, cols, dvDim, 1.0f, dv + j0 * dvDim);
  }
  unpackRows(dqC, dPadded, sq, d, layout.scale, dq);
}

} // namespace

void attentionKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
  constexpr std::string_view op = "nn.attention";
  AttentionLayout layout = checks::checkAttention(op, attrs, operands, results);
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
  Scratch scratch(layout, /*backward=*/false);
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
  Scratch scratch(layout, /*backward=*/true);
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
