//===- Embedding.cu - embedding lookup, its gradient, index checks --------===//
//
// The CPU kernels' semantics and checks (Embedding.cpp,
// runtime/kernels/EmbeddingChecks.h), ids checked on the device
// (CudaContext's device checks). The gradient adds each row of grad_output
// into its id's row in the order of the ids, as the CPU does, so its sums
// are the CPU's bit for bit and never depend on timing: the table's rows are
// dealt out to partitions (row modulo the partition count), and one thread per
// (column, partition) walks all ids, adding those of its partition. No
// atomics, no sort. On a table split by vocabulary, which ids are local and
// at which row is the CPU's rule (checks::TableShape::localRow, host and
// device).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/EmbeddingChecks.h"

#include <algorithm>

namespace zerosbp::runtime::gpu {

namespace {
__global__ void findFirstOutOfRange(const void *indices, DType type, int64_t n,
                                    int64_t bound, DeviceCheckSlot *slot) {
  ZEROSBP_GRID_LOOP(i, n) {
    int64_t value = loadIndex(indices, type, i);
    if (value < 0 || value >= bound)
      atomicMin(&slot->position, static_cast<unsigned long long>(i));
  }
}

__global__ void recordFailedValue(const void *indices, DType type,
                                  DeviceCheckSlot *slot) {
  if (slot->position != DeviceCheckSlot::kNoFailure)
    slot->value =
        loadIndex(indices, type, static_cast<int64_t>(slot->position));
}

/// out[t, j] = table[row of ids[t], j]: raw bits when the types agree, else
/// through f32. An id of another rank's rows, or a bad one (reported by the
/// check), gives zeros.
__global__ void gatherRows(const void *table, DType tableType, const void *ids,
                           DType idType, checks::TableShape shape, void *out,
                           DType outType, int64_t numel) {
  int elementBytes = tableType == DType::F64   ? 8
                     : tableType == DType::F32 ? 4
                                               : 2;
  int64_t dim = shape.dim;
  ZEROSBP_GRID_LOOP(i, numel) {
    int64_t t = i / dim, j = i - t * dim;
    int64_t row = shape.localRow(loadIndex(ids, idType, t));
    if (row < 0)
      storeFloat(out, outType, i, 0.0f);
    else if (tableType == outType)
      copyElement(out, i, table, row * dim + j, elementBytes);
    else
      storeFloat(out, outType, i, loadFloat(table, tableType, row * dim + j));
  }
}

constexpr int kIdTile = 512;

/// table[row of ids[t], j] += dy[t, j] for the local rows of partition
/// blockIdx.y, t in order. `table` (rows x dim, f32) starts at zero.
__global__ void addRowsInOrder(const void *dy, DType dyType, const void *ids,
                               DType idType, int64_t tokens,
                               checks::TableShape shape, int64_t partitions,
                               float *table) {
  __shared__ int64_t tile[kIdTile];
  int64_t partition = blockIdx.y, dim = shape.dim;
  int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  for (int64_t begin = 0; begin < tokens; begin += kIdTile) {
    int64_t count = min(static_cast<int64_t>(kIdTile), tokens - begin);
    // -1 marks a row of another partition, an id of another rank's rows, or
    // a bad one.
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      int64_t row = shape.localRow(loadIndex(ids, idType, begin + k));
      tile[k] = row >= 0 && row % partitions == partition ? row : -1;
    }
    __syncthreads();
    if (j < dim) {
      for (int64_t k = 0; k < count; ++k) {
        int64_t row = tile[k];
        if (row >= 0)
          table[row * dim + j] += loadFloat(dy, dyType, (begin + k) * dim + j);
      }
    }
    __syncthreads();
  }
}

void checkIds(std::string_view op, CudaContext &ctx, const TensorRef &ids,
              int64_t vocab) {
  checks::ValueMessage message = checks::idMessage(vocab);
  checkIndexRange(op, ctx, ids, vocab, std::string(op) + ": " + message.prefix,
                  message.suffix);
}
} // namespace

void checkIndexRange(std::string_view op, CudaContext &ctx,
                     const TensorRef &indices, int64_t bound,
                     std::string prefix, std::string suffix) {
  int64_t n = indices.numel();
  if (n == 0)
    return;
  DeviceCheckSlot *slot =
      ctx.beginCheck(op, std::move(prefix), std::move(suffix));
  constexpr int kThreads = 256;
  findFirstOutOfRange<<<gridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      indices.data, indices.dtype, n, bound, slot);
  checkLaunch(op);
  recordFailedValue<<<1, 1, 0, ctx.stream()>>>(indices.data, indices.dtype,
                                               slot);
  checkLaunch(op);
  ctx.endCheck();
}

void embeddingKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.embedding";
  checks::TableShape shape =
      checks::checkEmbeddingTable(op, attrs, operands, results);
  const TensorRef &table = operands[0], &ids = operands[1];
  const TensorRef &result = results[0];
  expectIndex(op, ids, "ids");
  // Unlike the CPU kernel, the result's shape is checked before the ids: no
  // device work until every host-side check has passed.
  expectShape(op, result, checks::rowsShape(ids, shape.dim), "result");
  checkIds(op, ctx, ids, shape.vocab);
  int64_t numel = result.numel();
  if (numel == 0)
    return;

  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  constexpr int kThreads = 256;
  gatherRows<<<gridFor(numel, kThreads), kThreads, 0, ctx.stream()>>>(
      table.data, table.dtype, ids.data, ids.dtype, shape, out.data(),
      result.dtype, numel);
  checkLaunch(op);
  out.finish();
}

void embeddingGradKernel(const AttrMap &attrs, const Tensors &operands,
                         const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.embedding_grad";
  checks::TableShape shape =
      checks::checkEmbeddingGradTable(op, attrs, operands, results);
  int64_t dim = shape.dim;
  const TensorRef &gradOutput = operands[0], &ids = operands[1];
  const TensorRef &result = results[0];
  expectIndex(op, ids, "ids");
  expectShape(op, gradOutput, checks::rowsShape(ids, dim), "grad_output");
  checkIds(op, ctx, ids, shape.vocab);
  if (result.numel() == 0)
    return;

  // Sums in f32 as on the CPU: in the result itself when it is f32 and
  // overlaps nothing, else in a buffer converted into it.
  bool direct = result.dtype == DType::F32 && !overlapsAny(result, operands);
  std::optional<DeviceScratch> buffer;
  TensorRef sums = result;
  sums.dtype = DType::F32;
  if (!direct) {
    buffer.emplace(op, ctx, sums.bytes());
    sums.data = buffer->data();
  }
  checkCuda(op, cudaMemsetAsync(sums.data, 0, sums.bytes(), ctx.stream()));
  int64_t tokens = ids.numel();
  if (tokens > 0) {
    int threads = dim >= 128 ? 128 : 32 * static_cast<int>((dim + 31) / 32);
    int64_t columnBlocks = (dim + threads - 1) / threads;
    // About 64K threads in all; every partition walks all ids.
    int64_t partitions =
        std::clamp<int64_t>((1 << 16) / (columnBlocks * threads), 1,
                            std::min<int64_t>(shape.rows, 65535));
    dim3 grid(static_cast<unsigned>(columnBlocks),
              static_cast<unsigned>(partitions));
    addRowsInOrder<<<grid, threads, 0, ctx.stream()>>>(
        gradOutput.data, gradOutput.dtype, ids.data, ids.dtype, tokens, shape,
        partitions, sums.as<float>());
    checkLaunch(op);
  }
  if (!direct) {
    if (result.dtype == DType::F32)
      copyDeviceBytes(op, ctx, result.data, sums.data, result.bytes());
    else
      launchConvert(op, ctx, sums, result);
  }
}

} // namespace zerosbp::runtime::gpu
