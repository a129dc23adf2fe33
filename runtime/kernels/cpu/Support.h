//===- Support.h - checks and conversions the CPU kernels share -*- C++ -*-===//
//
// Precondition checks that throw a one-line RuntimeError naming the op, the
// f16/bf16 <-> f32 widening and narrowing every float kernel goes through,
// and the chunked loop of the elementwise kernels. Kernels compute in f32
// whatever the storage type; a tensor stored in f32 is read and written in
// place, others through f32 copies.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_CPU_SUPPORT_H
#define ZEROSBP_RUNTIME_KERNELS_CPU_SUPPORT_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Error.h"
#include "runtime/core/Tensor.h"
#include "runtime/kernels/KernelChecks.h"
#include "runtime/kernels/StridedDims.h"
#include "runtime/kernels/cpu/HostThreads.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace zerosbp::runtime::cpu {

using Tensors = std::vector<TensorRef>;

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

// Shared with the CUDA kernels (runtime/kernels/KernelChecks.h); the checks
// of whole ops are called as checks::checkSoftmax and so on.
using checks::contiguousStrides;
using checks::expectArity;
using checks::expectIndex;
using checks::expectShape;
using checks::fail;
using checks::overlaps;
using checks::overlapsAny;
using checks::overlapsOtherThanReplaced;

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

/// Elements [begin, begin + count) of a float tensor, as f32.
void widen(const TensorRef &tensor, int64_t begin, int64_t count, float *out);
/// Stores `count` f32 values at element `begin` of a float tensor, rounding
/// to nearest even.
void narrow(const float *values, int64_t count, const TensorRef &tensor,
            int64_t begin);

/// Element 0 of a float tensor (a 0-D scalar), as f32.
float readScalar(const TensorRef &tensor);
/// Element 0 of an integer or float tensor, as int64.
int64_t readInteger(const TensorRef &tensor);
/// Stores `value` as element 0 of a float tensor.
void writeScalar(const TensorRef &tensor, float value);

/// The elements of an i32/i64 tensor, as int64.
std::vector<int64_t> readIndices(const TensorRef &tensor);

/// A whole float tensor as f32: the tensor's own bytes when it is f32, else
/// a widened copy.
class FloatInput {
public:
  explicit FloatInput(const TensorRef &tensor);
  const float *data() const { return pointer; }

private:
  std::vector<float> storage;
  const float *pointer;
};

/// Where a kernel writes a whole float result in f32: the result's own bytes
/// when it is f32 and `separate` is false, else a private buffer that
/// finish() narrows (or copies) into the result. Kernels whose reads and
/// writes do not go element by element pass `separate` when the result
/// overlaps an operand.
class FloatOutput {
public:
  FloatOutput(const TensorRef &tensor, bool separate);
  float *data() { return pointer; }
  void finish();

private:
  TensorRef tensor;
  std::vector<float> storage;
  float *pointer;
};

/// The same for results of any element type, as raw bytes.
class ByteOutput {
public:
  ByteOutput(const TensorRef &tensor, bool separate);
  char *data() { return pointer; }
  void finish();

private:
  TensorRef tensor;
  std::vector<char> storage;
  char *pointer;
};

//===----------------------------------------------------------------------===//
// Elementwise loops
//===----------------------------------------------------------------------===//

/// Elements per chunk of an elementwise loop: small enough that a chunk of
/// every operand and result stays in L1.
constexpr int64_t kChunk = 1024;

/// Runs `body(in, out, count)` over consecutive chunks of elements [begin,
/// end). `in[k]` points at f32 values of the chunk of `inputs[k]` (the
/// tensor itself when f32, else a widened copy); `out[k]` is a local f32
/// buffer that is stored into `outputs[k]` after the body. So a result may
/// occupy the bytes of an operand, and the body's loops never alias what
/// they write.
template <size_t NumIn, size_t NumOut, typename Body>
void forEachChunkIn(int64_t begin, int64_t end,
                    const std::array<const TensorRef *, NumIn> &inputs,
                    const std::array<const TensorRef *, NumOut> &outputs,
                    Body &body) {
  alignas(64) float inBuffers[NumIn == 0 ? 1 : NumIn][kChunk];
  alignas(64) float outBuffers[NumOut][kChunk];
  for (int64_t first = begin; first < end; first += kChunk) {
    int64_t count = std::min(kChunk, end - first);
    const float *in[NumIn == 0 ? 1 : NumIn] = {};
    for (size_t k = 0; k < NumIn; ++k) {
      const TensorRef &tensor = *inputs[k];
      if (tensor.dtype == DType::F32) {
        in[k] = tensor.as<const float>() + first;
      } else {
        widen(tensor, first, count, inBuffers[k]);
        in[k] = inBuffers[k];
      }
    }
    float *out[NumOut];
    for (size_t k = 0; k < NumOut; ++k)
      out[k] = outBuffers[k];
    body(static_cast<const float *const *>(in),
         static_cast<float *const *>(out), count);
    for (size_t k = 0; k < NumOut; ++k) {
      const TensorRef &tensor = *outputs[k];
      if (tensor.dtype == DType::F32)
        std::memcpy(tensor.as<float>() + first, outBuffers[k],
                    static_cast<size_t>(count) * sizeof(float));
      else
        narrow(outBuffers[k], count, tensor, first);
    }
  }
}

/// forEachChunkIn over all `numel` elements, in order, on the calling
/// thread: for bodies that carry state from one chunk to the next.
template <size_t NumIn, size_t NumOut, typename Body>
void forEachChunk(int64_t numel,
                  const std::array<const TensorRef *, NumIn> &inputs,
                  const std::array<const TensorRef *, NumOut> &outputs,
                  Body &&body) {
  forEachChunkIn<NumIn, NumOut>(0, numel, inputs, outputs, body);
}

/// Elements per range of a parallel elementwise loop: large enough that
/// handing out a range costs little against streaming it.
constexpr int64_t kParallelGrain = 16 * kChunk;

/// forEachChunk for bodies whose chunks are independent, split over the
/// host threads (HostThreads.h). A result that overlaps an operand other
/// than by replacing it runs on one thread, since a later range would read
/// bytes an earlier one has written.
template <size_t NumIn, size_t NumOut, typename Body>
void forEachChunkInParallel(
    int64_t numel, const std::array<const TensorRef *, NumIn> &inputs,
    const std::array<const TensorRef *, NumOut> &outputs, Body &&body) {
  bool independent = true;
  for (const TensorRef *output : outputs)
    for (const TensorRef *input : inputs)
      if (overlaps(*output, *input) && !checks::replaces(*output, *input))
        independent = false;
  if (!independent) {
    forEachChunkIn<NumIn, NumOut>(0, numel, inputs, outputs, body);
    return;
  }
  parallelRanges(numel, kParallelGrain, [&](int64_t begin, int64_t end) {
    forEachChunkIn<NumIn, NumOut>(begin, end, inputs, outputs, body);
  });
}

//===----------------------------------------------------------------------===//
// Strided iteration
//===----------------------------------------------------------------------===//

// Shared with the CUDA kernels (runtime/kernels/StridedDims.h).
using checks::broadcastStrides;
using checks::simplifyDims;
using checks::StridedDim;

/// Calls `fn(offsetA, offsetB)` for every index of `dims`, row-major.
template <typename Fn>
void forEachOffset(const std::vector<StridedDim> &dims, Fn &&fn) {
  size_t rank = dims.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offsetA = 0, offsetB = 0;
  for (;;) {
    fn(offsetA, offsetB);
    size_t d = rank;
    for (;;) {
      if (d == 0)
        return;
      --d;
      offsetA += dims[d].strideA;
      offsetB += dims[d].strideB;
      if (++index[d] < dims[d].size)
        break;
      offsetA -= dims[d].strideA * dims[d].size;
      offsetB -= dims[d].strideB * dims[d].size;
      index[d] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Copies a box of `shape` elements of `elementBytes` bytes each from `src`
/// to `dst`; strides are in elements. Contiguous runs go by memcpy and a
/// transposition by cache-sized tiles. `src` and `dst` must not overlap.
void copyStrided(const std::vector<int64_t> &shape, char *dst,
                 const std::vector<int64_t> &dstStrides, const char *src,
                 const std::vector<int64_t> &srcStrides, size_t elementBytes);

} // namespace zerosbp::runtime::cpu

#endif // ZEROSBP_RUNTIME_KERNELS_CPU_SUPPORT_H
