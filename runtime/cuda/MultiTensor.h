//===- MultiTensor.h - one launch for many updates or casts ------*- C++
//-*-===//
//
// A training step ends with one optimizer update per parameter (nn.adam,
// nn.adamw, nn.sgd) and, with mixed precision, one nn.cast per parameter
// that narrows its updated master. Each is a launch of a small kernel. The
// plan is static, so the CUDA executor finds these once and launches each
// group of them as one multi-tensor kernel (apex's and PyTorch's
// `fused=True`, DeepSpeed's FusedAdam), with a table in device memory of
// every tensor and of the chunks that split them among the blocks.
//
// A multi-tensor kernel computes every element with the single kernel's own
// device function (Optimizers.cu, Elementwise.cu), so its results are the
// single kernels' bit for bit; Adam's step check records the same failure.
//
// Host code only: the executor and the .cu files include it. Which
// instructions may be grouped and in which order they then run is decided
// here, on byte ranges, without touching the device.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_MULTITENSOR_H
#define ZEROSBP_RUNTIME_CUDA_MULTITENSOR_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Tensor.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/kernels/OptimizerChecks.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zerosbp::runtime::gpu {

//===----------------------------------------------------------------------===//
// The device table
//===----------------------------------------------------------------------===//

/// The most elements of one tensor that one block of a multi-tensor launch
/// takes: each tensor is cut into chunks of this size (its last chunk may be
/// shorter), and block b takes chunks b, b + grid, ... A multiple of the
/// vector width (kVector, 8), so that a chunk of a 16-byte aligned tensor
/// starts aligned.
constexpr int64_t kMultiTensorChunk = 32768;

/// A float tensor in the table (as FloatRef in DeviceMath.cuh).
struct MultiTensorRef {
  void *data;
  DType type;
};

/// Elements [begin, end) of the table's tensor `tensor`.
struct MultiTensorChunk {
  int64_t tensor;
  int64_t begin;
  int64_t end;
};

/// One nn.sgd: its attributes are per tensor.
struct SgdEntry {
  float lr;
  float gradScale;
  MultiTensorRef param, grad, newParam;
};

/// One nn.adam or nn.adamw. Its constants are per tensor (weight decay may
/// differ); the step scalars (lr, the betas, the step) are the launch's.
struct AdamEntry {
  checks::AdamConstants c;
  MultiTensorRef param, grad, expAvg, expAvgSq;
  MultiTensorRef newParam, newExpAvg, newExpAvgSq;
};

/// One nn.cast between two float types.
struct CastEntry {
  MultiTensorRef from, to;
};

// The launches, each of one block per chunk up to the grid limit, in the
// file of the op's single kernel. `entries` and `chunks` are in device
// memory. Errors name `op`.

/// Optimizers.cu.
void launchMultiSgd(std::string_view op, CudaContext &ctx,
                    const SgdEntry *entries, const MultiTensorChunk *chunks,
                    int64_t chunkCount);
/// Optimizers.cu. `stepConstants` gives lr and the betas the bias
/// corrections use (every entry's are these); `step` is the step operand
/// every entry shares. The check of the step (at least 1) is the single
/// kernel's, with its message: a bad step writes nothing.
void launchMultiAdam(std::string_view op, CudaContext &ctx,
                     const AdamEntry *entries, const MultiTensorChunk *chunks,
                     int64_t chunkCount,
                     const checks::AdamConstants &stepConstants,
                     const TensorRef &step);
/// Elementwise.cu.
void launchMultiCast(std::string_view op, CudaContext &ctx,
                     const CastEntry *entries, const MultiTensorChunk *chunks,
                     int64_t chunkCount);

//===----------------------------------------------------------------------===//
// Which instructions, in which order
//===----------------------------------------------------------------------===//

/// What a group of instructions shares: instructions with equal non-empty
/// keys may be one multi-tensor launch. The key is empty where the
/// instruction runs its own kernel:
/// - an op without a multi-tensor kernel: every op but nn.sgd, nn.adam,
///   nn.adamw, and nn.cast between two different float types;
/// - operands or attributes its kernel refuses (it throws its own error
///   when it runs);
/// - no elements, or an operand not in device memory;
/// - a result that overlaps an operand other than the one it replaces
///   (the single kernel goes through scratch there).
/// nn.adam's and nn.adamw's keys hold lr, beta1, beta2 and the step
/// operand, which the launch shares; nn.cast's its two types.
std::string multiTensorKey(std::string_view op, const AttrMap &attrs,
                           const std::vector<TensorRef> &operands,
                           const std::vector<TensorRef> &results);

/// Whether an op checks values in device memory (ids, labels: embedding and
/// cross-entropy): such a kernel keeps its place among the other kernels,
/// so that the first failure raised is the one op by op would raise.
/// Adam's step check is the same in every update, so updates may move.
bool checksDeviceData(std::string_view op);

/// Bytes [begin, end) of memory.
struct ByteRange {
  uintptr_t begin;
  uintptr_t end;
};

/// The byte ranges of `tensors`, leaving out empty ones.
std::vector<ByteRange> byteRanges(const std::vector<TensorRef> &tensors);

/// One instruction of a segment: the bytes it reads and writes, and its key
/// (empty: launched alone).
struct SegmentNode {
  std::vector<ByteRange> reads;
  std::vector<ByteRange> writes;
  std::string key;
};

/// The launches of a segment of consecutive instructions (in plan order,
/// none of which the executor separates by anything else it does), as
/// lists of indices into `nodes`, in the order they are to run.
///
/// Instruction j depends on an earlier i when j reads or writes bytes that
/// i writes, or writes bytes that i reads. Among the instructions not yet
/// launched whose dependencies all are (the ready ones), repeatedly: the
/// first without a key, in plan order, is launched alone, so that what it
/// leads to may join a group; with none, the first ready one is launched
/// with every other ready one of its key. No launch holds two instructions
/// of which one depends on the other, and every dependency is launched
/// before; without keys the order is the plan's. For each parameter's update
/// followed by its cast, all updates are one launch and all casts the next;
/// with fp16 loss scaling (select, cast and unscale before each update),
/// the unscaled gradients' casts, the updates and the casts to f16 are one
/// launch each.
std::vector<std::vector<size_t>>
scheduleSegment(const std::vector<SegmentNode> &nodes);

//===----------------------------------------------------------------------===//
// One launch
//===----------------------------------------------------------------------===//

/// One instruction as its kernel takes it.
struct KernelCall {
  const AttrMap *attrs;
  const std::vector<TensorRef> *operands;
  const std::vector<TensorRef> *results;
};

/// A multi-tensor launch of instructions of one op that share a key
/// (multiTensorKey) and of which none depends on another
/// (scheduleSegment): its table of entries and chunks, built on the host.
/// The executor copies table() to the device once, outside any CUDA graph
/// capture, and enqueue() launches the kernel on it, which a capture takes
/// like any other launch.
class MultiTensorLaunch {
public:
  /// Throws RuntimeError when `calls` do not make one launch (fewer than
  /// two, or keys that differ).
  MultiTensorLaunch(std::string op, const std::vector<KernelCall> &calls);

  /// The op, e.g. "nn.adam".
  const std::string &op() const { return op_; }
  /// The op and the instructions merged, e.g. "nn.adam x148": the trace's
  /// name for the launch.
  std::string name() const;
  size_t size() const { return size_; }
  int64_t chunkCount() const { return chunkCount_; }
  int64_t elements() const { return elements_; }

  /// The table as the device reads it: the entries, then the chunks at a
  /// 16-byte aligned offset. Copy it to memory aligned to 16 bytes.
  const std::vector<unsigned char> &table() const { return table_; }

  /// Enqueues the kernel on the context's stream; `deviceTable` holds a
  /// copy of table().
  void enqueue(CudaContext &ctx, const void *deviceTable) const;

private:
  enum class Kind { Sgd, Adam, Cast };
  std::string op_;
  Kind kind_;
  size_t size_ = 0;
  int64_t chunkCount_ = 0;
  int64_t elements_ = 0;
  size_t chunkOffset_ = 0;
  checks::AdamConstants stepConstants_{};
  TensorRef step_;
  std::vector<unsigned char> table_;
};

} // namespace zerosbp::runtime::gpu

#endif // ZEROSBP_RUNTIME_CUDA_MULTITENSOR_H
