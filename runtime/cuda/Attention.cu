//===- Attention.cu - fused attention and its gradient --------------------===//
//
// nn.attention and nn.attention_grad as FlashAttention-2 (Dao, 2023), with
// the CPU kernels' checks (runtime/kernels/AttentionChecks.h) and formulas:
// s_ij = scale q_i.k_j, lse_i = log sum_j exp(s_ij) over the visible keys,
// p_ij = exp(s_ij - lse_i) by the CPU's fastExp, f32 arithmetic whatever the
// storage type, stores rounded to nearest even. The scores never reach
// global memory.
//
// - Forward: one block per (batch slice, tile of 64 queries). K and V come
//   through shared memory 64 keys at a time; each row keeps its running max
//   and sum (in double, as on the CPU) in registers and rescales its output
//   row by exp(old max - new max) (online softmax). With `causal` the key
//   tiles past the diagonal are never loaded. Writes the result and lse.
// - Backward: a kernel for D_i = dO_i.O_i (in double); then one block per
//   (batch slice, tile of 64 keys) that recomputes p from lse and holds dk
//   and dv for its keys over every query tile; then one block per (batch
//   slice, tile of 64 queries) that recomputes p and ds and holds dq. No
//   atomics: every sum has one order, so two runs give the same bits.
//
// Two paths, chosen at launch:
// - scalar: f32 FMAs on tiles held in shared memory as f32; every storage
//   type, head dims up to 128. A thread holds a 4 x 4 block of the score
//   tile and 4 rows x 8 columns of the output.
// - tensor cores (nvcuda::wmma, 16 x 16 x 16, f32 accumulation): bf16 and
//   f16 with both head dims multiples of 16, up to 128, and 16-byte aligned
//   operands. q, k, v, dO stay in their storage type in shared memory; the
//   scores go through shared memory as f32 for the softmax, and p (forward)
//   or p and ds (backward) are rounded to the storage type to enter the
//   second product, as FlashAttention does. That rounding is the one
//   difference from the CPU beyond f32 summation order.
//
// Head dims above 128 are refused with one line (the CPU takes any). A
// result over an operand's bytes is written through scratch.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/AttentionChecks.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace zerosbp::runtime::gpu {

namespace {
using checks::AttentionLayout;
namespace wmma = nvcuda::wmma;

/// Queries and keys per tile; threads per block.
constexpr int kTile = 64;
constexpr int kThreads = 256;
/// The largest head dim (q and k) and value dim the kernels take.
constexpr int kMaxHeadDim = 128;
/// A thread holds rows 4 ty + i (i < 4) and columns tx + 16 j of a
/// 64 x 64 score tile, where ty = thread / 16 and tx = thread % 16, and
/// columns tx + 16 c (c < 8) of those rows of a 64 x 128 output tile.
constexpr int kGroups = 16;
constexpr int kRows = kTile / kGroups;
constexpr int kColumns = kMaxHeadDim / kGroups;

/// Whether the tensor-core path may be chosen (tests turn it off to compare
/// the two paths).
std::atomic<bool> tensorCoresEnabled{true};

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// The block's (batch slice, tile): the last tiles first, so that with
/// `causal` the longest blocks start first.
struct BlockTile {
  int64_t batch;
  int64_t tile;
};

__device__ __forceinline__ BlockTile blockTile(int64_t batch, int64_t tiles) {
  int64_t block = blockIdx.x;
  return {block % batch, tiles - 1 - block / batch};
}

/// Whether query `query` sees key `key`.
__device__ __forceinline__ bool visible(const AttentionLayout &layout,
                                        int64_t query, int64_t key) {
  return query < layout.queries && key < layout.keys &&
         (!layout.causal || key <= query);
}

/// The sum over the 16 threads of a row group (one half of a warp).
__device__ __forceinline__ double halfSum(double value) {
  for (int offset = kGroups / 2; offset > 0; offset >>= 1)
    value += __shfl_xor_sync(kFullWarp, value, offset);
  return value;
}

/// The max over the 16 threads of a row group (one half of a warp).
__device__ __forceinline__ float halfMax(float value) {
  for (int offset = kGroups / 2; offset > 0; offset >>= 1) {
    float other = __shfl_xor_sync(kFullWarp, value, offset);
    value = other > value ? other : value;
  }
  return value;
}

__host__ __device__ constexpr int64_t larger(int64_t a, int64_t b) {
  return a > b ? a : b;
}

__host__ __device__ constexpr int64_t smaller(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/// Tiles of `n` rows.
__host__ __device__ inline int64_t tilesOf(int64_t n) {
  return (n + kTile - 1) / kTile;
}

/// Blocks for `tiles` tiles of every batch slice.
inline unsigned blocksFor(const AttentionLayout &layout, int64_t tiles) {
  return static_cast<unsigned>(layout.batch * tiles);
}

//===----------------------------------------------------------------------===//
// Scalar path: f32 tiles in shared memory, f32 FMAs
//===----------------------------------------------------------------------===//

/// An odd row pitch in floats: a column read across rows hits 16 banks.
__host__ __device__ __forceinline__ int oddPitch(int64_t width) {
  return static_cast<int>(width | 1);
}

/// Pitch of a 64 x 64 tile of scores or probabilities.
constexpr int kScorePitch = kTile + 1;

/// Rows [first, first + valid) of a row-major (rows x width) tensor into a
/// 64-row f32 tile; the rows past `valid` are zero.
__device__ void loadTile(float *tile, int pitch, FloatRef src, int64_t first,
                         int64_t valid, int64_t width) {
  int64_t count = kTile * width;
  for (int64_t e = threadIdx.x; e < count; e += kThreads) {
    int64_t r = e / width, c = e - r * width;
    tile[r * pitch + c] = r < valid ? load(src, (first + r) * width + c) : 0.0f;
  }
}

/// acc[i][j] = sum_d a[(4 ty + i) * pitchA + d] * b[(tx + 16 j) * pitchB + d].
__device__ __forceinline__ void tileDots(float (&acc)[kRows][kRows],
                                         const float *a, int pitchA,
                                         const float *b, int pitchB,
                                         int64_t width) {
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int j = 0; j < kRows; ++j)
      acc[i][j] = 0.0f;
  for (int d = 0; d < width; ++d) {
    float left[kRows], right[kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i)
      left[i] = a[(ty * kRows + i) * pitchA + d];
#pragma unroll
    for (int j = 0; j < kRows; ++j)
      right[j] = b[(tx + kGroups * j) * pitchB + d];
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j)
        acc[i][j] = fmaf(left[i], right[j], acc[i][j]);
  }
}

/// acc[i][c] += sum_r weights[(4 ty + i) * kScorePitch + r] *
/// rows[r * pitch + tx + 16 c] over the first `count` rows, for the columns
/// below `width`.
__device__ __forceinline__ void accumulateRows(float (&acc)[kRows][kColumns],
                                               const float *weights,
                                               const float *rows, int pitch,
                                               int count, int64_t width) {
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  for (int r = 0; r < count; ++r) {
    float w[kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i)
      w[i] = weights[(ty * kRows + i) * kScorePitch + r];
#pragma unroll
    for (int c = 0; c < kColumns; ++c) {
      int column = tx + kGroups * c;
      if (column < width) {
        float x = rows[r * pitch + column];
#pragma unroll
        for (int i = 0; i < kRows; ++i)
          acc[i][c] = fmaf(w[i], x, acc[i][c]);
      }
    }
  }
}

/// Stores factor * acc for the thread's rows below `valid` of a tile whose
/// row 0 is row `first` of a (rows x width) tensor.
__device__ __forceinline__ void storeRows(const float (&acc)[kRows][kColumns],
                                          FloatRef dst, int64_t first,
                                          int64_t valid, int64_t width,
                                          float factor) {
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    int r = ty * kRows + i;
    if (r >= valid)
      continue;
#pragma unroll
    for (int c = 0; c < kColumns; ++c) {
      int column = tx + kGroups * c;
      if (column < width)
        store(dst, (first + r) * width + column, acc[i][c] * factor);
    }
  }
}

/// Shared floats of the scalar forward: q, then k (p reuses it), then v.
__host__ __device__ inline int64_t forwardSharedFloats(int64_t headDim,
                                                       int64_t valueDim) {
  int64_t keyFloats = kTile * larger(oddPitch(headDim), kScorePitch);
  return kTile * oddPitch(headDim) + keyFloats + kTile * oddPitch(valueDim);
}

/// Applies one tile of scores to the running max `max`, sum `sum` (in
/// double, as on the CPU) and output `acc` of the thread's rows (online
/// softmax), leaving exp(s - max) in `s`.
__device__ __forceinline__ void onlineSoftmax(float (&s)[kRows][kRows],
                                              float (&max)[kRows],
                                              double (&sum)[kRows],
                                              float (&acc)[kRows][kColumns]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    float tileMax = s[i][0];
#pragma unroll
    for (int j = 1; j < kRows; ++j)
      tileMax = s[i][j] > tileMax ? s[i][j] : tileMax;
    tileMax = halfMax(tileMax);
    float newMax = tileMax > max[i] ? tileMax : max[i];
    // A row that has seen no key yet keeps -inf and adds zeros.
    float shift = newMax == -INFINITY ? 0.0f : newMax;
    float alpha = fastExp(max[i] - shift);
    double rowSum = 0.0;
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      s[i][j] = fastExp(s[i][j] - shift);
      rowSum += s[i][j];
    }
    sum[i] = sum[i] * alpha + halfSum(rowSum);
    max[i] = newMax;
#pragma unroll
    for (int c = 0; c < kColumns; ++c)
      acc[i][c] *= alpha;
  }
}

/// Writes the thread's rows of the result (acc / sum) and of lse.
__device__ __forceinline__ void
storeForward(const float (&acc)[kRows][kColumns], const float (&max)[kRows],
             const double (&sum)[kRows], FloatRef out, float *lse,
             const AttentionLayout &layout, int64_t batch, int64_t q0) {
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  int64_t first = batch * layout.queries + q0;
  int64_t valid = layout.queries - q0;
  float inverse[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i)
    inverse[i] = sum[i] > 0.0 ? static_cast<float>(1.0 / sum[i]) : 0.0f;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    int r = ty * kRows + i;
    if (r >= valid)
      continue;
#pragma unroll
    for (int c = 0; c < kColumns; ++c) {
      int column = tx + kGroups * c;
      if (column < layout.valueDim)
        store(out, (first + r) * layout.valueDim + column,
              acc[i][c] * inverse[i]);
    }
    if (tx == 0)
      lse[first + r] =
          sum[i] > 0.0 ? static_cast<float>(max[i] + log(sum[i])) : -INFINITY;
  }
}

__global__ void __launch_bounds__(kThreads)
    attentionForward(FloatRef q, FloatRef k, FloatRef v, FloatRef out,
                     float *lse, AttentionLayout layout, int64_t queryTiles) {
  extern __shared__ float shared[];
  const int64_t headDim = layout.headDim, valueDim = layout.valueDim;
  const int qPitch = oddPitch(headDim), vPitch = oddPitch(valueDim);
  float *qs = shared;
  float *ks = qs + kTile * qPitch; // Then the probabilities.
  float *vs = ks + kTile * larger(qPitch, kScorePitch);
  float *ps = ks;
  BlockTile place = blockTile(layout.batch, queryTiles);
  int64_t q0 = place.tile * kTile;
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  loadTile(qs, qPitch, q, place.batch * layout.queries + q0,
           layout.queries - q0, headDim);

  float max[kRows], acc[kRows][kColumns];
  double sum[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    max[i] = -INFINITY;
    sum[i] = 0.0;
#pragma unroll
    for (int c = 0; c < kColumns; ++c)
      acc[i][c] = 0.0f;
  }
  int64_t keyTiles = layout.causal ? place.tile + 1 : tilesOf(layout.keys);
  for (int64_t kt = 0; kt < keyTiles; ++kt) {
    int64_t k0 = kt * kTile;
    int64_t keys = smaller(kTile, layout.keys - k0);
    __syncthreads(); // The last tile's reads are done.
    loadTile(ks, qPitch, k, place.batch * layout.keys + k0, keys, headDim);
    loadTile(vs, vPitch, v, place.batch * layout.keys + k0, keys, valueDim);
    __syncthreads();
    float s[kRows][kRows];
    tileDots(s, qs, qPitch, ks, qPitch, headDim);
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j)
        s[i][j] = visible(layout, q0 + ty * kRows + i, k0 + tx + kGroups * j)
                      ? s[i][j] * layout.scale
                      : -INFINITY;
    onlineSoftmax(s, max, sum, acc);
    __syncthreads(); // Every read of the k tile is done: p replaces it.
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j)
        ps[(ty * kRows + i) * kScorePitch + tx + kGroups * j] = s[i][j];
    __syncthreads();
    accumulateRows(acc, ps, vs, vPitch, static_cast<int>(keys), valueDim);
  }
  storeForward(acc, max, sum, out, lse, layout, place.batch, q0);
}

/// D_i = sum_e dO_ie O_ie, one warp per row, summed in double.
__global__ void attentionDelta(FloatRef gradOutput, FloatRef output,
                               float *delta, int64_t rows, int64_t width) {
  int lane = threadIdx.x & 31;
  int64_t warp =
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t row = warp; row < rows; row += warps) {
    double local = 0.0;
    for (int64_t e = lane; e < width; e += 32)
      local += static_cast<double>(load(gradOutput, row * width + e)) *
               static_cast<double>(load(output, row * width + e));
    double total = warpSum(local);
    if (lane == 0)
      delta[row] = static_cast<float>(total);
  }
}

/// Shared floats of the scalar key pass: k, v, q, dO, p^T, ds^T, lse, D.
__host__ __device__ inline int64_t gradKeysSharedFloats(int64_t headDim,
                                                        int64_t valueDim) {
  return 2 * kTile * oddPitch(headDim) + 2 * kTile * oddPitch(valueDim) +
         2 * kTile * kScorePitch + 2 * kTile;
}

/// dk and dv for one tile of keys: the thread holds keys 4 ty + i.
__global__ void __launch_bounds__(kThreads)
    attentionGradKeys(FloatRef gradOutput, FloatRef q, FloatRef k, FloatRef v,
                      const float *lse, const float *delta, FloatRef gradK,
                      FloatRef gradV, AttentionLayout layout,
                      int64_t keyTiles) {
  extern __shared__ float shared[];
  const int64_t headDim = layout.headDim, valueDim = layout.valueDim;
  const int qPitch = oddPitch(headDim), vPitch = oddPitch(valueDim);
  float *ks = shared;
  float *vs = ks + kTile * qPitch;
  float *qs = vs + kTile * vPitch;
  float *dos = qs + kTile * qPitch;
  float *pt = dos + kTile * vPitch;
  float *dst = pt + kTile * kScorePitch;
  float *lses = dst + kTile * kScorePitch;
  float *deltas = lses + kTile;
  BlockTile place = blockTile(layout.batch, keyTiles);
  int64_t k0 = place.tile * kTile;
  int64_t keys = smaller(kTile, layout.keys - k0);
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  int64_t keyRow = place.batch * layout.keys + k0;
  loadTile(ks, qPitch, k, keyRow, keys, headDim);
  loadTile(vs, vPitch, v, keyRow, keys, valueDim);

  float dk[kRows][kColumns], dv[kRows][kColumns];
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int c = 0; c < kColumns; ++c)
      dk[i][c] = dv[i][c] = 0.0f;
  // With `causal` the queries before k0 see none of these keys.
  int64_t queryTiles = tilesOf(layout.queries);
  for (int64_t qt = layout.causal ? place.tile : 0; qt < queryTiles; ++qt) {
    int64_t q0 = qt * kTile;
    int64_t queries = smaller(kTile, layout.queries - q0);
    int64_t queryRow = place.batch * layout.queries + q0;
    __syncthreads(); // The last tile's reads are done.
    loadTile(qs, qPitch, q, queryRow, queries, headDim);
    loadTile(dos, vPitch, gradOutput, queryRow, queries, valueDim);
    if (threadIdx.x < kTile) {
      bool inside = threadIdx.x < queries;
      lses[threadIdx.x] = inside ? lse[queryRow + threadIdx.x] : 0.0f;
      deltas[threadIdx.x] = inside ? delta[queryRow + threadIdx.x] : 0.0f;
    }
    __syncthreads();
    float s[kRows][kRows], dp[kRows][kRows];
    tileDots(s, ks, qPitch, qs, qPitch, headDim);
    tileDots(dp, vs, vPitch, dos, vPitch, valueDim);
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        int query = tx + kGroups * j;
        float p = visible(layout, q0 + query, k0 + ty * kRows + i)
                      ? fastExp(s[i][j] * layout.scale - lses[query])
                      : 0.0f;
        pt[(ty * kRows + i) * kScorePitch + query] = p;
        dst[(ty * kRows + i) * kScorePitch + query] =
            p * (dp[i][j] - deltas[query]);
      }
    __syncthreads();
    int count = static_cast<int>(queries);
    accumulateRows(dv, pt, dos, vPitch, count, valueDim);
    accumulateRows(dk, dst, qs, qPitch, count, headDim);
  }
  storeRows(dv, gradV, keyRow, keys, valueDim, 1.0f);
  storeRows(dk, gradK, keyRow, keys, headDim, layout.scale);
}

/// Shared floats of the scalar query pass: q, dO, k, v, ds.
__host__ __device__ inline int64_t gradQueriesSharedFloats(int64_t headDim,
                                                           int64_t valueDim) {
  return 2 * kTile * oddPitch(headDim) + 2 * kTile * oddPitch(valueDim) +
         kTile * kScorePitch;
}

/// dq for one tile of queries: the thread holds queries 4 ty + i.
__global__ void __launch_bounds__(kThreads)
    attentionGradQueries(FloatRef gradOutput, FloatRef q, FloatRef k,
                         FloatRef v, const float *lse, const float *delta,
                         FloatRef gradQ, AttentionLayout layout,
                         int64_t queryTiles) {
  extern __shared__ float shared[];
  const int64_t headDim = layout.headDim, valueDim = layout.valueDim;
  const int qPitch = oddPitch(headDim), vPitch = oddPitch(valueDim);
  float *qs = shared;
  float *dos = qs + kTile * qPitch;
  float *ks = dos + kTile * vPitch;
  float *vs = ks + kTile * qPitch;
  float *dss = vs + kTile * vPitch;
  BlockTile place = blockTile(layout.batch, queryTiles);
  int64_t q0 = place.tile * kTile;
  int64_t queries = smaller(kTile, layout.queries - q0);
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  int64_t queryRow = place.batch * layout.queries + q0;
  loadTile(qs, qPitch, q, queryRow, queries, headDim);
  loadTile(dos, vPitch, gradOutput, queryRow, queries, valueDim);
  float rowLse[kRows], rowDelta[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    int r = ty * kRows + i;
    rowLse[i] = r < queries ? lse[queryRow + r] : 0.0f;
    rowDelta[i] = r < queries ? delta[queryRow + r] : 0.0f;
  }

  float dq[kRows][kColumns];
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int c = 0; c < kColumns; ++c)
      dq[i][c] = 0.0f;
  int64_t keyTiles = layout.causal ? place.tile + 1 : tilesOf(layout.keys);
  for (int64_t kt = 0; kt < keyTiles; ++kt) {
    int64_t k0 = kt * kTile;
    int64_t keys = smaller(kTile, layout.keys - k0);
    __syncthreads(); // The last tile's reads are done.
    loadTile(ks, qPitch, k, place.batch * layout.keys + k0, keys, headDim);
    loadTile(vs, vPitch, v, place.batch * layout.keys + k0, keys, valueDim);
    __syncthreads();
    float s[kRows][kRows], dp[kRows][kRows];
    tileDots(s, qs, qPitch, ks, qPitch, headDim);
    tileDots(dp, dos, vPitch, vs, vPitch, valueDim);
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        int key = tx + kGroups * j;
        float p = visible(layout, q0 + ty * kRows + i, k0 + key)
                      ? fastExp(s[i][j] * layout.scale - rowLse[i])
                      : 0.0f;
        dss[(ty * kRows + i) * kScorePitch + key] =
            p * (dp[i][j] - rowDelta[i]);
      }
    __syncthreads();
    accumulateRows(dq, dss, ks, qPitch, static_cast<int>(keys), headDim);
  }
  storeRows(dq, gradQ, queryRow, queries, headDim, layout.scale);
}

//===----------------------------------------------------------------------===//
// Tensor-core path: bf16 and f16, head dims multiples of 16
//===----------------------------------------------------------------------===//

/// Padding, in elements, of the rows of 16-bit tiles (16 bytes: the rows of
/// a fragment load start in different banks) and of f32 tiles.
constexpr int kHalfPad = 8;
constexpr int kFloatPad = 4;
constexpr int kScoreFloatPitch = kTile + kFloatPad;
constexpr int kScoreHalfPitch = kTile + kHalfPad;

/// Byte offsets of the regions of a tensor-core kernel's shared memory, each
/// aligned to 128 bytes.
struct SharedPlan {
  int64_t bytes = 0;
  __host__ __device__ int64_t take(int64_t size) {
    int64_t at = bytes;
    bytes += (size + 127) / 128 * 128;
    return at;
  }
};

/// 64 rows of `width` 16-bit elements.
__host__ __device__ inline int64_t halfTileBytes(int64_t width) {
  return kTile * (width + kHalfPad) * 2;
}

/// The f32 region: two 64 x 64 score tiles, which a 64 x width output tile
/// replaces at the end.
__host__ __device__ inline int64_t floatRegionBytes(int64_t width) {
  return larger(2 * kTile * kScoreFloatPitch, kTile * (width + kFloatPad)) * 4;
}

struct MmaForwardShared {
  int64_t q, k, v, p, scores;
  int64_t bytes;
  __host__ __device__ MmaForwardShared(int64_t headDim, int64_t valueDim) {
    SharedPlan plan;
    q = plan.take(halfTileBytes(headDim));
    k = plan.take(halfTileBytes(headDim));
    v = plan.take(halfTileBytes(valueDim));
    p = plan.take(halfTileBytes(kTile));
    scores = plan.take(floatRegionBytes(valueDim));
    bytes = plan.bytes;
  }
};

struct MmaGradShared {
  int64_t k, v, q, gradOutput, scores, p, ds, lse, delta;
  int64_t bytes;
  __host__ __device__ MmaGradShared(int64_t headDim, int64_t valueDim) {
    SharedPlan plan;
    k = plan.take(halfTileBytes(headDim));
    v = plan.take(halfTileBytes(valueDim));
    q = plan.take(halfTileBytes(headDim));
    gradOutput = plan.take(halfTileBytes(valueDim));
    scores = plan.take(floatRegionBytes(larger(headDim, valueDim)));
    p = plan.take(halfTileBytes(kTile));
    ds = plan.take(halfTileBytes(kTile));
    lse = plan.take(kTile * 4);
    delta = plan.take(kTile * 4);
    bytes = plan.bytes;
  }
};

/// The storage type's bits of `value`, rounded to nearest even.
template <typename T> __device__ __forceinline__ uint16_t toBits(float value);
template <>
__device__ __forceinline__ uint16_t toBits<__nv_bfloat16>(float value) {
  return floatToBf16Bits(value);
}
template <> __device__ __forceinline__ uint16_t toBits<__half>(float value) {
  return floatToHalfBits(value);
}

/// Rows [first, first + valid) of a row-major (rows x width) 16-bit tensor,
/// 16-byte aligned, width a multiple of 16, into a 64-row tile of pitch
/// width + 8; the rows past `valid` are zero.
__device__ void loadHalfTile(uint16_t *tile, const uint16_t *src, int64_t first,
                             int64_t valid, int64_t width) {
  int64_t chunks = width / 8, pitch = width + kHalfPad;
  for (int64_t e = threadIdx.x; e < kTile * chunks; e += kThreads) {
    int64_t r = e / chunks, c = (e - r * chunks) * 8;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < valid)
      value = *reinterpret_cast<const uint4 *>(src + (first + r) * width + c);
    *reinterpret_cast<uint4 *>(tile + r * pitch + c) = value;
  }
}

template <typename T>
using FragmentA =
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T, typename Layout>
using FragmentB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, Layout>;
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// The warp's two 16 x 16 blocks of a 64 x 64 product A B^T, where A is a
/// (64 x width) tile and B a (64 x width) tile, both of pitch width + 8:
/// rows 16 (warp / 2) + [0, 16), columns 32 (warp % 2) + [0, 32). Stored as
/// f32 into `out` (pitch 68).
template <typename T>
__device__ __forceinline__ void
scoreBlocks(const uint16_t *a, const uint16_t *b, int64_t width, float *out) {
  int warp = threadIdx.x / 32;
  int rowBlock = warp / 2, columnBlock = (warp % 2) * 2;
  int pitch = static_cast<int>(width) + kHalfPad;
  Accumulator acc[2];
  wmma::fill_fragment(acc[0], 0.0f);
  wmma::fill_fragment(acc[1], 0.0f);
  for (int d = 0; d < width; d += 16) {
    FragmentA<T> left;
    wmma::load_matrix_sync(
        left, reinterpret_cast<const T *>(a + rowBlock * 16 * pitch + d),
        pitch);
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      FragmentB<T, wmma::col_major> right;
      wmma::load_matrix_sync(
          right,
          reinterpret_cast<const T *>(b + (columnBlock + t) * 16 * pitch + d),
          pitch);
      wmma::mma_sync(acc[t], left, right, acc[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < 2; ++t)
    wmma::store_matrix_sync(out + rowBlock * 16 * kScoreFloatPitch +
                                (columnBlock + t) * 16,
                            acc[t], kScoreFloatPitch, wmma::mem_row_major);
}

/// Output blocks of a warp in a 64 x width product: rows 16 (warp / 2) +
/// [0, 16), column blocks warp % 2 + 2 t for t < 4 below width / 16.
constexpr int kBlocksPerWarp = kMaxHeadDim / 16 / 2;

/// acc[t] += W B over 64 inner rows: W the 64 x 64 16-bit tile `weights`
/// (pitch 72), B the (64 x width) tile `rows` of pitch width + 8.
template <typename T>
__device__ __forceinline__ void
accumulateBlocks(Accumulator (&acc)[kBlocksPerWarp], const uint16_t *weights,
                 const uint16_t *rows, int64_t width) {
  int warp = threadIdx.x / 32;
  int rowBlock = warp / 2, first = warp % 2;
  int pitch = static_cast<int>(width) + kHalfPad;
  int blocks = static_cast<int>(width / 16);
#pragma unroll
  for (int c = 0; c < kTile; c += 16) {
    FragmentA<T> left;
    wmma::load_matrix_sync(left,
                           reinterpret_cast<const T *>(
                               weights + rowBlock * 16 * kScoreHalfPitch + c),
                           kScoreHalfPitch);
#pragma unroll
    for (int t = 0; t < kBlocksPerWarp; ++t) {
      int block = first + 2 * t;
      if (block < blocks) {
        FragmentB<T, wmma::row_major> right;
        wmma::load_matrix_sync(
            right, reinterpret_cast<const T *>(rows + c * pitch + block * 16),
            pitch);
        wmma::mma_sync(acc[t], left, right, acc[t]);
      }
    }
  }
}

/// Stores the warp's output blocks as f32 into `out` (pitch width + 4).
__device__ __forceinline__ void storeBlocks(Accumulator (&acc)[kBlocksPerWarp],
                                            float *out, int64_t width) {
  int warp = threadIdx.x / 32;
  int rowBlock = warp / 2, first = warp % 2;
  int pitch = static_cast<int>(width) + kFloatPad;
  int blocks = static_cast<int>(width / 16);
#pragma unroll
  for (int t = 0; t < kBlocksPerWarp; ++t) {
    int block = first + 2 * t;
    if (block < blocks)
      wmma::store_matrix_sync(out + rowBlock * 16 * pitch + block * 16, acc[t],
                              pitch, wmma::mem_row_major);
  }
}

__device__ __forceinline__ void
clearBlocks(Accumulator (&acc)[kBlocksPerWarp]) {
#pragma unroll
  for (int t = 0; t < kBlocksPerWarp; ++t)
    wmma::fill_fragment(acc[t], 0.0f);
}

/// Stores factor * tile (64 x width f32, pitch width + 4) for its first
/// `valid` rows as rows first + r of a (rows x width) tensor.
__device__ void storeFloatTile(const float *tile, FloatRef dst, int64_t first,
                               int64_t valid, int64_t width, float factor) {
  int64_t pitch = width + kFloatPad;
  for (int64_t e = threadIdx.x; e < valid * width; e += kThreads) {
    int64_t r = e / width, c = e - r * width;
    store(dst, (first + r) * width + c, tile[r * pitch + c] * factor);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attentionForwardMma(FloatRef q, FloatRef k, FloatRef v, FloatRef out,
                        float *lse, AttentionLayout layout,
                        int64_t queryTiles) {
  extern __shared__ __align__(128) unsigned char sharedBytes[];
  const int64_t headDim = layout.headDim, valueDim = layout.valueDim;
  MmaForwardShared plan(headDim, valueDim);
  auto *qh = reinterpret_cast<uint16_t *>(sharedBytes + plan.q);
  auto *kh = reinterpret_cast<uint16_t *>(sharedBytes + plan.k);
  auto *vh = reinterpret_cast<uint16_t *>(sharedBytes + plan.v);
  auto *ph = reinterpret_cast<uint16_t *>(sharedBytes + plan.p);
  auto *scores = reinterpret_cast<float *>(sharedBytes + plan.scores);
  float *products = scores; // p v replaces the scores.
  const int productPitch = static_cast<int>(valueDim) + kFloatPad;
  BlockTile place = blockTile(layout.batch, queryTiles);
  int64_t q0 = place.tile * kTile;
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  loadHalfTile(qh, static_cast<const uint16_t *>(q.data),
               place.batch * layout.queries + q0, layout.queries - q0, headDim);

  float max[kRows], acc[kRows][kColumns];
  double sum[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    max[i] = -INFINITY;
    sum[i] = 0.0;
#pragma unroll
    for (int c = 0; c < kColumns; ++c)
      acc[i][c] = 0.0f;
  }
  int64_t keyTiles = layout.causal ? place.tile + 1 : tilesOf(layout.keys);
  for (int64_t kt = 0; kt < keyTiles; ++kt) {
    int64_t k0 = kt * kTile;
    int64_t keys = smaller(kTile, layout.keys - k0);
    int64_t keyRow = place.batch * layout.keys + k0;
    __syncthreads(); // The last tile's reads are done.
    loadHalfTile(kh, static_cast<const uint16_t *>(k.data), keyRow, keys,
                 headDim);
    loadHalfTile(vh, static_cast<const uint16_t *>(v.data), keyRow, keys,
                 valueDim);
    __syncthreads();
    scoreBlocks<T>(qh, kh, headDim, scores);
    __syncthreads();
    float s[kRows][kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        int row = ty * kRows + i, key = tx + kGroups * j;
        s[i][j] = visible(layout, q0 + row, k0 + key)
                      ? scores[row * kScoreFloatPitch + key] * layout.scale
                      : -INFINITY;
      }
    // The running output is rescaled here and p v added below.
    onlineSoftmax(s, max, sum, acc);
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j)
        ph[(ty * kRows + i) * kScoreHalfPitch + tx + kGroups * j] =
            toBits<T>(s[i][j]);
    __syncthreads();
    Accumulator blocks[kBlocksPerWarp];
    clearBlocks(blocks);
    accumulateBlocks<T>(blocks, ph, vh, valueDim);
    storeBlocks(blocks, products, valueDim);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int c = 0; c < kColumns; ++c) {
        int column = tx + kGroups * c;
        if (column < valueDim)
          acc[i][c] += products[(ty * kRows + i) * productPitch + column];
      }
  }
  storeForward(acc, max, sum, out, lse, layout, place.batch, q0);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attentionGradKeysMma(FloatRef gradOutput, FloatRef q, FloatRef k,
                         FloatRef v, const float *lse, const float *delta,
                         FloatRef gradK, FloatRef gradV, AttentionLayout layout,
                         int64_t keyTiles) {
  extern __shared__ __align__(128) unsigned char sharedBytes[];
  const int64_t headDim = layout.headDim, valueDim = layout.valueDim;
  MmaGradShared plan(headDim, valueDim);
  auto *kh = reinterpret_cast<uint16_t *>(sharedBytes + plan.k);
  auto *vh = reinterpret_cast<uint16_t *>(sharedBytes + plan.v);
  auto *qh = reinterpret_cast<uint16_t *>(sharedBytes + plan.q);
  auto *doh = reinterpret_cast<uint16_t *>(sharedBytes + plan.gradOutput);
  auto *scores = reinterpret_cast<float *>(sharedBytes + plan.scores);
  float *products = scores + kTile * kScoreFloatPitch;
  auto *pt = reinterpret_cast<uint16_t *>(sharedBytes + plan.p);
  auto *dst = reinterpret_cast<uint16_t *>(sharedBytes + plan.ds);
  auto *lses = reinterpret_cast<float *>(sharedBytes + plan.lse);
  auto *deltas = reinterpret_cast<float *>(sharedBytes + plan.delta);
  BlockTile place = blockTile(layout.batch, keyTiles);
  int64_t k0 = place.tile * kTile;
  int64_t keys = smaller(kTile, layout.keys - k0);
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  int64_t keyRow = place.batch * layout.keys + k0;
  loadHalfTile(kh, static_cast<const uint16_t *>(k.data), keyRow, keys,
               headDim);
  loadHalfTile(vh, static_cast<const uint16_t *>(v.data), keyRow, keys,
               valueDim);

  Accumulator dk[kBlocksPerWarp], dv[kBlocksPerWarp];
  clearBlocks(dk);
  clearBlocks(dv);
  int64_t queryTiles = tilesOf(layout.queries);
  for (int64_t qt = layout.causal ? place.tile : 0; qt < queryTiles; ++qt) {
    int64_t q0 = qt * kTile;
    int64_t queries = smaller(kTile, layout.queries - q0);
    int64_t queryRow = place.batch * layout.queries + q0;
    __syncthreads(); // The last tile's reads are done.
    loadHalfTile(qh, static_cast<const uint16_t *>(q.data), queryRow, queries,
                 headDim);
    loadHalfTile(doh, static_cast<const uint16_t *>(gradOutput.data), queryRow,
                 queries, valueDim);
    if (threadIdx.x < kTile) {
      bool inside = threadIdx.x < queries;
      lses[threadIdx.x] = inside ? lse[queryRow + threadIdx.x] : 0.0f;
      deltas[threadIdx.x] = inside ? delta[queryRow + threadIdx.x] : 0.0f;
    }
    __syncthreads();
    scoreBlocks<T>(kh, qh, headDim, scores);     // s^T
    scoreBlocks<T>(vh, doh, valueDim, products); // dp^T
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        int key = ty * kRows + i, query = tx + kGroups * j;
        int at = key * kScoreFloatPitch + query;
        float p = visible(layout, q0 + query, k0 + key)
                      ? fastExp(scores[at] * layout.scale - lses[query])
                      : 0.0f;
        float ds = p * (products[at] - deltas[query]);
        pt[key * kScoreHalfPitch + query] = toBits<T>(p);
        dst[key * kScoreHalfPitch + query] = toBits<T>(ds);
      }
    __syncthreads();
    accumulateBlocks<T>(dv, pt, doh, valueDim);
    accumulateBlocks<T>(dk, dst, qh, headDim);
  }
  __syncthreads(); // The score tiles' last reads are done.
  storeBlocks(dv, scores, valueDim);
  __syncthreads();
  storeFloatTile(scores, gradV, keyRow, keys, valueDim, 1.0f);
  __syncthreads();
  storeBlocks(dk, scores, headDim);
  __syncthreads();
  storeFloatTile(scores, gradK, keyRow, keys, headDim, layout.scale);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    attentionGradQueriesMma(FloatRef gradOutput, FloatRef q, FloatRef k,
                            FloatRef v, const float *lse, const float *delta,
                            FloatRef gradQ, AttentionLayout layout,
                            int64_t queryTiles) {
  extern __shared__ __align__(128) unsigned char sharedBytes[];
  const int64_t headDim = layout.headDim, valueDim = layout.valueDim;
  // The key pass's plan: k, v, q, dO, the f32 region, ds (the p tile is
  // unused here).
  MmaGradShared plan(headDim, valueDim);
  auto *kh = reinterpret_cast<uint16_t *>(sharedBytes + plan.k);
  auto *vh = reinterpret_cast<uint16_t *>(sharedBytes + plan.v);
  auto *qh = reinterpret_cast<uint16_t *>(sharedBytes + plan.q);
  auto *doh = reinterpret_cast<uint16_t *>(sharedBytes + plan.gradOutput);
  auto *scores = reinterpret_cast<float *>(sharedBytes + plan.scores);
  float *products = scores + kTile * kScoreFloatPitch;
  auto *dsh = reinterpret_cast<uint16_t *>(sharedBytes + plan.ds);
  BlockTile place = blockTile(layout.batch, queryTiles);
  int64_t q0 = place.tile * kTile;
  int64_t queries = smaller(kTile, layout.queries - q0);
  int ty = threadIdx.x / kGroups, tx = threadIdx.x % kGroups;
  int64_t queryRow = place.batch * layout.queries + q0;
  loadHalfTile(qh, static_cast<const uint16_t *>(q.data), queryRow, queries,
               headDim);
  loadHalfTile(doh, static_cast<const uint16_t *>(gradOutput.data), queryRow,
               queries, valueDim);
  float rowLse[kRows], rowDelta[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    int r = ty * kRows + i;
    rowLse[i] = r < queries ? lse[queryRow + r] : 0.0f;
    rowDelta[i] = r < queries ? delta[queryRow + r] : 0.0f;
  }

  Accumulator dq[kBlocksPerWarp];
  clearBlocks(dq);
  int64_t keyTiles = layout.causal ? place.tile + 1 : tilesOf(layout.keys);
  for (int64_t kt = 0; kt < keyTiles; ++kt) {
    int64_t k0 = kt * kTile;
    int64_t keys = smaller(kTile, layout.keys - k0);
    int64_t keyRow = place.batch * layout.keys + k0;
    __syncthreads(); // The last tile's reads are done.
    loadHalfTile(kh, static_cast<const uint16_t *>(k.data), keyRow, keys,
                 headDim);
    loadHalfTile(vh, static_cast<const uint16_t *>(v.data), keyRow, keys,
                 valueDim);
    __syncthreads();
    scoreBlocks<T>(qh, kh, headDim, scores);
    scoreBlocks<T>(doh, vh, valueDim, products);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        int row = ty * kRows + i, key = tx + kGroups * j;
        int at = row * kScoreFloatPitch + key;
        float p = visible(layout, q0 + row, k0 + key)
                      ? fastExp(scores[at] * layout.scale - rowLse[i])
                      : 0.0f;
        dsh[row * kScoreHalfPitch + key] =
            toBits<T>(p * (products[at] - rowDelta[i]));
      }
    __syncthreads();
    accumulateBlocks<T>(dq, dsh, kh, headDim);
  }
  __syncthreads(); // The score tiles' last reads are done.
  storeBlocks(dq, scores, headDim);
  __syncthreads();
  storeFloatTile(scores, gradQ, queryRow, queries, headDim, layout.scale);
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// Dynamic shared bytes of each kernel.
int64_t forwardBytes(int64_t headDim, int64_t valueDim) {
  return forwardSharedFloats(headDim, valueDim) * 4;
}
int64_t gradKeysBytes(int64_t headDim, int64_t valueDim) {
  return gradKeysSharedFloats(headDim, valueDim) * 4;
}
int64_t gradQueriesBytes(int64_t headDim, int64_t valueDim) {
  return gradQueriesSharedFloats(headDim, valueDim) * 4;
}
int64_t mmaForwardBytes(int64_t headDim, int64_t valueDim) {
  return MmaForwardShared(headDim, valueDim).bytes;
}
int64_t mmaGradBytes(int64_t headDim, int64_t valueDim) {
  return MmaGradShared(headDim, valueDim).bytes;
}

/// Allows `kernel` `bytes` of dynamic shared memory (above the default
/// 48 KiB) on the current device. Set once per kernel and device, with the
/// bytes of the largest head dims, so that the first call of an op, which
/// an executor runs before it captures a CUDA graph, is the only one.
void allowSharedBytes(std::string_view op, const void *kernel, size_t bytes) {
  static std::mutex mutex;
  static std::set<std::pair<const void *, int>> done;
  int device = 0;
  checkCuda(op, cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  if (done.count({kernel, device}))
    return;
  checkCuda(op, cudaFuncSetAttribute(
                    kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                    static_cast<int>(bytes)));
  done.insert({kernel, device});
}

/// allowSharedBytes with the bytes `sharedBytes(D, Dv)` takes at D = Dv =
/// 128, the most any call needs.
template <typename Kernel, typename SharedBytes>
void allowLargestShared(std::string_view op, Kernel *kernel,
                        SharedBytes sharedBytes) {
  allowSharedBytes(op, reinterpret_cast<const void *>(kernel),
                   static_cast<size_t>(sharedBytes(kMaxHeadDim, kMaxHeadDim)));
}

void expectHeadDims(std::string_view op, const AttentionLayout &layout) {
  if (layout.headDim > kMaxHeadDim || layout.valueDim > kMaxHeadDim)
    fail(op, "the CUDA kernel takes head dims up to " +
                 std::to_string(kMaxHeadDim) + ", got " +
                 std::to_string(layout.headDim) + " (q, k) and " +
                 std::to_string(layout.valueDim) + " (v)");
}

/// Whether the tensor-core kernels take these operands: all bf16 or all
/// f16, head dims multiples of 16, 16-byte aligned data (tiles are loaded
/// 16 bytes at a time; results are stored element by element).
bool tensorCorePath(const AttentionLayout &layout,
                    std::initializer_list<TensorRef> tensors) {
  if (!tensorCoresEnabled.load(std::memory_order_relaxed) ||
      layout.headDim % 16 != 0 || layout.valueDim % 16 != 0 ||
      layout.headDim == 0 || layout.valueDim == 0)
    return false;
  DType type = tensors.begin()->dtype;
  if (type != DType::BF16 && type != DType::F16)
    return false;
  for (const TensorRef &tensor : tensors)
    if (tensor.dtype != type ||
        reinterpret_cast<uintptr_t>(tensor.data) % 16 != 0)
      return false;
  return true;
}

template <typename T>
void launchForwardMma(std::string_view op, CudaContext &ctx,
                      const AttentionLayout &layout, const TensorRef &q,
                      const TensorRef &k, const TensorRef &v,
                      const TensorRef &out, float *lse) {
  int64_t queryTiles = tilesOf(layout.queries);
  auto bytes =
      static_cast<size_t>(mmaForwardBytes(layout.headDim, layout.valueDim));
  allowLargestShared(op, attentionForwardMma<T>, mmaForwardBytes);
  attentionForwardMma<T>
      <<<blocksFor(layout, queryTiles), kThreads, bytes, ctx.stream()>>>(
          ref(q), ref(k), ref(v), ref(out), lse, layout, queryTiles);
  checkLaunch(op);
}

template <typename T>
void launchGradMma(std::string_view op, CudaContext &ctx,
                   const AttentionLayout &layout, const Tensors &operands,
                   const float *lse, const float *delta, const TensorRef &gradQ,
                   const TensorRef &gradK, const TensorRef &gradV) {
  const TensorRef &gradOutput = operands[0], &q = operands[1], &k = operands[2],
                  &v = operands[3];
  auto bytes =
      static_cast<size_t>(mmaGradBytes(layout.headDim, layout.valueDim));
  if (layout.keys > 0) {
    int64_t keyTiles = tilesOf(layout.keys);
    allowLargestShared(op, attentionGradKeysMma<T>, mmaGradBytes);
    attentionGradKeysMma<T>
        <<<blocksFor(layout, keyTiles), kThreads, bytes, ctx.stream()>>>(
            ref(gradOutput), ref(q), ref(k), ref(v), lse, delta, ref(gradK),
            ref(gradV), layout, keyTiles);
    checkLaunch(op);
  }
  if (layout.queries > 0) {
    int64_t queryTiles = tilesOf(layout.queries);
    allowLargestShared(op, attentionGradQueriesMma<T>, mmaGradBytes);
    attentionGradQueriesMma<T>
        <<<blocksFor(layout, queryTiles), kThreads, bytes, ctx.stream()>>>(
            ref(gradOutput), ref(q), ref(k), ref(v), lse, delta, ref(gradQ),
            layout, queryTiles);
    checkLaunch(op);
  }
}

} // namespace

void setAttentionTensorCores(bool enabled) {
  tensorCoresEnabled.store(enabled, std::memory_order_relaxed);
}

void attentionKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.attention";
  AttentionLayout layout = checks::checkAttention(op, attrs, operands, results);
  expectHeadDims(op, layout);
  const TensorRef &q = operands[0], &k = operands[1], &v = operands[2];
  if (layout.batch == 0 || layout.queries == 0)
    return;
  // Every block reads all of k and v: a result over an operand goes through
  // scratch.
  ResultTarget out(op, ctx, results[0], overlapsAny(results[0], operands));
  ResultTarget lse(op, ctx, results[1], overlapsAny(results[1], operands));
  auto *lseData = static_cast<float *>(lse.data());
  int64_t queryTiles = tilesOf(layout.queries);
  if (tensorCorePath(layout, {q, k, v})) {
    if (q.dtype == DType::BF16)
      launchForwardMma<__nv_bfloat16>(op, ctx, layout, q, k, v, out.tensor(),
                                      lseData);
    else
      launchForwardMma<__half>(op, ctx, layout, q, k, v, out.tensor(), lseData);
  } else {
    auto bytes =
        static_cast<size_t>(forwardBytes(layout.headDim, layout.valueDim));
    allowLargestShared(op, attentionForward, forwardBytes);
    attentionForward<<<blocksFor(layout, queryTiles), kThreads, bytes,
                       ctx.stream()>>>(
        ref(q), ref(k), ref(v), ref(out.tensor()), lseData, layout, queryTiles);
    checkLaunch(op);
  }
  out.finish();
  lse.finish();
}

void attentionGradKernel(const AttrMap &attrs, const Tensors &operands,
                         const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.attention_grad";
  AttentionLayout layout =
      checks::checkAttentionGrad(op, attrs, operands, results);
  expectHeadDims(op, layout);
  const TensorRef &gradOutput = operands[0], &q = operands[1], &k = operands[2],
                  &v = operands[3], &output = operands[4], &lse = operands[5];
  if (layout.batch == 0)
    return;
  // The passes read every operand until the last one ends.
  ResultTarget gradQ(op, ctx, results[0], overlapsAny(results[0], operands));
  ResultTarget gradK(op, ctx, results[1], overlapsAny(results[1], operands));
  ResultTarget gradV(op, ctx, results[2], overlapsAny(results[2], operands));
  int64_t rows = layout.batch * layout.queries;
  DeviceScratch delta(op, ctx, static_cast<size_t>(rows) * sizeof(float));
  if (rows > 0) {
    constexpr int kDeltaThreads = 256;
    attentionDelta<<<gridFor(rows * 32, kDeltaThreads), kDeltaThreads, 0,
                     ctx.stream()>>>(ref(gradOutput), ref(output),
                                     delta.as<float>(), rows, layout.valueDim);
    checkLaunch(op);
  }
  const auto *lseData = static_cast<const float *>(lse.data);
  const float *deltaData = delta.as<float>();
  if (tensorCorePath(layout, {gradOutput, q, k, v})) {
    if (q.dtype == DType::BF16)
      launchGradMma<__nv_bfloat16>(op, ctx, layout, operands, lseData,
                                   deltaData, gradQ.tensor(), gradK.tensor(),
                                   gradV.tensor());
    else
      launchGradMma<__half>(op, ctx, layout, operands, lseData, deltaData,
                            gradQ.tensor(), gradK.tensor(), gradV.tensor());
  } else {
    if (layout.keys > 0) {
      int64_t keyTiles = tilesOf(layout.keys);
      auto bytes =
          static_cast<size_t>(gradKeysBytes(layout.headDim, layout.valueDim));
      allowLargestShared(op, attentionGradKeys, gradKeysBytes);
      attentionGradKeys<<<blocksFor(layout, keyTiles), kThreads, bytes,
                          ctx.stream()>>>(
          ref(gradOutput), ref(q), ref(k), ref(v), lseData, deltaData,
          ref(gradK.tensor()), ref(gradV.tensor()), layout, keyTiles);
      checkLaunch(op);
    }
    if (rows > 0) {
      int64_t queryTiles = tilesOf(layout.queries);
      auto bytes = static_cast<size_t>(
          gradQueriesBytes(layout.headDim, layout.valueDim));
      allowLargestShared(op, attentionGradQueries, gradQueriesBytes);
      attentionGradQueries<<<blocksFor(layout, queryTiles), kThreads, bytes,
                             ctx.stream()>>>(
          ref(gradOutput), ref(q), ref(k), ref(v), lseData, deltaData,
          ref(gradQ.tensor()), layout, queryTiles);
      checkLaunch(op);
    }
  }
  gradQ.finish();
  gradK.finish();
  gradV.finish();
}

} // namespace zerosbp::runtime::gpu
