//===- Collectives.cpp - a plan's collective_start, executed --------------===//
//
// The communicator moves flat rank-major buffers. A segment whose split or
// gathered axis has only size-1 dims before it is already rank-major and is
// passed as is; otherwise its parts are packed into (and out of) a scratch
// buffer. An all-reduce bucket whose operands lie end to end and whose
// results are those same bytes is reduced in place with one call. Every
// copy goes through a CollectiveMemory, so the same code runs on host
// buffers and, enqueued on a stream, on device buffers.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Collectives.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace zerosbp::runtime {

namespace {

/// Host memory. Scratch comes from a block each communication thread keeps
/// and grows: a fresh allocation of a large bucket is fresh pages from the
/// kernel (zero-run allocates above 1 MiB with mmap), and faulting them in
/// cost more than the collective itself (docs/scale.md#validation).
class HostCollectiveMemory : public CollectiveMemory {
public:
  void copy(void *dst, const void *src, size_t bytes) override {
    if (dst != src)
      std::memcpy(dst, src, bytes);
  }
  void copyRows(void *dst, size_t dstPitch, const void *src, size_t srcPitch,
                size_t rowBytes, size_t rows) override {
    for (size_t row = 0; row < rows; ++row)
      std::memmove(static_cast<unsigned char *>(dst) + row * dstPitch,
                   static_cast<const unsigned char *>(src) + row * srcPitch,
                   rowBytes);
  }
  void zero(void *dst, size_t bytes) override { std::memset(dst, 0, bytes); }
  void *allocate(size_t bytes) override {
    Cache &cache = threadCache();
    if (!cache.inUse && cache.bytes >= bytes && cache.block) {
      cache.inUse = true;
      return cache.block;
    }
    if (!cache.inUse) {
      std::free(cache.block);
      cache.block = std::malloc(bytes ? bytes : 1);
      cache.bytes = cache.block ? bytes : 0;
      if (!cache.block)
        throw RuntimeError("cannot allocate " + std::to_string(bytes) +
                           " bytes of collective scratch");
      cache.inUse = true;
      return cache.block;
    }
    void *scratch = std::malloc(bytes ? bytes : 1);
    if (!scratch)
      throw RuntimeError("cannot allocate " + std::to_string(bytes) +
                         " bytes of collective scratch");
    return scratch;
  }
  void release(void *scratch) override {
    Cache &cache = threadCache();
    if (scratch == cache.block) {
      cache.inUse = false;
      return;
    }
    std::free(scratch);
  }

private:
  struct Cache {
    void *block = nullptr;
    size_t bytes = 0;
    bool inUse = false;
    ~Cache() { std::free(block); }
  };
  static Cache &threadCache() {
    thread_local Cache cache;
    return cache;
  }
};

/// Scratch of one collective, released when it goes out of scope.
class Scratch {
public:
  Scratch(CollectiveMemory &memory, size_t bytes)
      : memory(memory),
        bytes(static_cast<unsigned char *>(memory.allocate(bytes))) {}
  ~Scratch() { memory.release(bytes); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  unsigned char *data() const { return bytes; }

private:
  CollectiveMemory &memory;
  unsigned char *bytes;
};

/// A tensor seen as [outer, dim, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
  AxisView(const std::vector<int64_t> &shape, int axis) {
    for (int i = 0; i < axis; ++i)
      outer *= shape[i];
    dim = shape[axis];
    for (size_t i = axis + 1; i < shape.size(); ++i)
      inner *= shape[i];
  }
};

/// Copies the n parts of `axis` of `tensor` (shape `shape`) into `flat`
/// one after another (part-major), or back when `unpack`: one strided copy
/// per part.
void packParts(CollectiveMemory &memory, const std::vector<int64_t> &shape,
               int axis, int64_t n, size_t elementBytes, unsigned char *tensor,
               unsigned char *flat, bool unpack) {
  AxisView view(shape, axis);
  int64_t partDim = view.dim / n;
  size_t rowBytes = partDim * view.inner * elementBytes;
  size_t tensorPitch = view.dim * view.inner * elementBytes;
  size_t partBytes = view.outer * rowBytes;
  for (int64_t part = 0; part < n; ++part) {
    unsigned char *inTensor = tensor + part * rowBytes;
    unsigned char *inFlat = flat + part * partBytes;
    if (unpack)
      memory.copyRows(inTensor, tensorPitch, inFlat, rowBytes, rowBytes,
                      view.outer);
    else
      memory.copyRows(inFlat, rowBytes, inTensor, tensorPitch, rowBytes,
                      view.outer);
  }
}

bool isRankMajor(const std::vector<int64_t> &shape, int axis) {
  return AxisView(shape, axis).outer == 1;
}

unsigned char *bytesOf(const TensorRef &tensor) {
  return static_cast<unsigned char *>(tensor.data);
}

void allReduceBucket(const Instruction &instruction,
                     const std::vector<TensorRef> &operands,
                     const std::vector<TensorRef> &results, void *staging,
                     CommGroup &group, Communicator &comm,
                     CollectiveMemory &memory) {
  DType type = operands[0].dtype;
  size_t elementBytes = dtypeBytes(type);
  const std::vector<Segment> &segments = instruction.segments;
  int64_t total = segments.back().offset + segments.back().numel;
  bool inPlace = true;
  for (size_t i = 0; i < operands.size(); ++i)
    inPlace &= results[i].data == operands[i].data &&
               bytesOf(operands[i]) ==
                   bytesOf(operands[0]) + segments[i].offset * elementBytes;
  if (inPlace) {
    comm.allReduce(group, type, operands[0].data, total, instruction.reduce);
    return;
  }
  if (operands.size() == 1) {
    memory.copy(results[0].data, operands[0].data, operands[0].bytes());
    comm.allReduce(group, type, results[0].data, operands[0].numel(),
                   instruction.reduce);
    return;
  }
  std::unique_ptr<Scratch> scratch;
  unsigned char *flat = static_cast<unsigned char *>(staging);
  if (!flat) {
    scratch = std::make_unique<Scratch>(memory, total * elementBytes);
    flat = scratch->data();
  }
  for (size_t i = 0; i < operands.size(); ++i)
    memory.copy(flat + segments[i].offset * elementBytes, operands[i].data,
                operands[i].bytes());
  comm.allReduce(group, type, flat, total, instruction.reduce);
  for (size_t i = 0; i < results.size(); ++i)
    memory.copy(results[i].data, flat + segments[i].offset * elementBytes,
                results[i].bytes());
}

/// A bucket of several reduce-scatter or all-gather segments, each split
/// or gathered along a leading axis: one collective over a rank-major flat
/// buffer (part j of every segment, then part j + 1, ...), so the group
/// synchronizes once per bucket rather than once per tensor.
bool runFusedBucket(const Instruction &instruction,
                    const std::vector<TensorRef> &operands,
                    const std::vector<TensorRef> &results, void *staging,
                    CommGroup &group, Communicator &comm,
                    CollectiveMemory &memory) {
  if (operands.size() < 2)
    return false;
  bool scatter = instruction.collective == CollectiveKind::ReduceScatter;
  if (!scatter && instruction.collective != CollectiveKind::AllGather)
    return false;
  int64_t n = group.size();
  DType type = operands[0].dtype;
  size_t elementBytes = dtypeBytes(type);
  int64_t partElements = 0; // One rank's part of the whole bucket.
  for (size_t i = 0; i < operands.size(); ++i) {
    const TensorRef &full = scatter ? operands[i] : results[i];
    int axis = scatter ? *instruction.scatterAxis : *instruction.gatherAxis;
    if (full.dtype != type || !isRankMajor(full.shape, axis) ||
        full.shape[axis] % n != 0)
      return false;
    partElements += full.numel() / n;
  }
  size_t partBytes = partElements * elementBytes;
  // The full-size bucket (the planned staging buffer where there is one)
  // and this rank's part.
  Scratch scratch(memory, (scatter && staging ? 0 : n * partBytes) + partBytes);
  unsigned char *whole = scatter && staging
                             ? static_cast<unsigned char *>(staging)
                             : scratch.data();
  unsigned char *own =
      scatter && staging ? scratch.data() : scratch.data() + n * partBytes;
  size_t at = 0;
  if (scatter) {
    // Part j of every segment, end to end, is rank j's block.
    for (const TensorRef &operand : operands) {
      size_t segmentPart = operand.bytes() / n;
      memory.copyRows(whole + at, partBytes, bytesOf(operand), segmentPart,
                      segmentPart, n);
      at += segmentPart;
    }
    comm.reduceScatter(group, type, whole, own, partElements,
                       instruction.reduce);
    at = 0;
    for (const TensorRef &result : results) {
      memory.copy(result.data, own + at, result.bytes());
      at += result.bytes();
    }
    return true;
  }
  for (const TensorRef &operand : operands) {
    memory.copy(own + at, operand.data, operand.bytes());
    at += operand.bytes();
  }
  comm.allGather(group, type, own, whole, partElements);
  at = 0;
  for (const TensorRef &result : results) {
    size_t segmentPart = result.bytes() / n;
    memory.copyRows(bytesOf(result), segmentPart, whole + at, partBytes,
                    segmentPart, n);
    at += segmentPart;
  }
  return true;
}

/// send_recv: the source stage's member sends, the target's receives; each
/// touches only its own side, whose buffer is its stage's.
void runSendRecv(const Instruction &instruction,
                 const std::vector<TensorRef> &operands,
                 const std::vector<TensorRef> &results, CommGroup &group,
                 Communicator &comm) {
  int me = group.index();
  if (me == instruction.sourceStage)
    comm.send(group, operands[0].dtype, operands[0].data, operands[0].numel(),
              instruction.targetStage);
  else if (me == instruction.targetStage)
    comm.recv(group, results[0].dtype, results[0].data, results[0].numel(),
              instruction.sourceStage);
  else
    throw RuntimeError("send_recv of bucket " +
                       std::to_string(instruction.bucket) +
                       " runs on a rank of stage " + std::to_string(me) +
                       ", neither its source nor its target");
}

} // namespace

CollectiveMemory &hostCollectiveMemory() {
  static HostCollectiveMemory memory;
  return memory;
}

void runCollective(const Instruction &instruction,
                   const std::vector<TensorRef> &operands,
                   const std::vector<TensorRef> &results, void *staging,
                   CommGroup &group, Communicator &comm,
                   CollectiveMemory &memory) {
  int64_t n = group.size();
  if (instruction.collective == CollectiveKind::SendRecv) {
    runSendRecv(instruction, operands, results, group, comm);
    return;
  }
  if (instruction.collective == CollectiveKind::AllReduce) {
    allReduceBucket(instruction, operands, results, staging, group, comm,
                    memory);
    return;
  }
  if (runFusedBucket(instruction, operands, results, staging, group, comm,
                     memory))
    return;
  for (size_t i = 0; i < operands.size(); ++i) {
    const TensorRef &operand = operands[i];
    const TensorRef &result = results[i];
    DType type = operand.dtype;
    size_t elementBytes = dtypeBytes(type);
    switch (instruction.collective) {
    case CollectiveKind::ReduceScatter: {
      int axis = *instruction.scatterAxis;
      if (operand.shape[axis] % n != 0)
        throw RuntimeError("reduce_scatter of bucket " +
                           std::to_string(instruction.bucket) +
                           ": dim does not divide by the group size");
      if (isRankMajor(operand.shape, axis)) {
        comm.reduceScatter(group, type, operand.data, result.data,
                           result.numel(), instruction.reduce);
        break;
      }
      Scratch scratch(memory, operand.bytes());
      packParts(memory, operand.shape, axis, n, elementBytes, bytesOf(operand),
                scratch.data(), /*unpack=*/false);
      comm.reduceScatter(group, type, scratch.data(), result.data,
                         result.numel(), instruction.reduce);
      break;
    }
    case CollectiveKind::AllGather: {
      int axis = *instruction.gatherAxis;
      if (isRankMajor(result.shape, axis)) {
        comm.allGather(group, type, operand.data, result.data, operand.numel());
        break;
      }
      Scratch scratch(memory, result.bytes());
      comm.allGather(group, type, operand.data, scratch.data(),
                     operand.numel());
      packParts(memory, result.shape, axis, n, elementBytes, bytesOf(result),
                scratch.data(), /*unpack=*/true);
      break;
    }
    case CollectiveKind::AllToAll: {
      int scatterAxis = *instruction.scatterAxis;
      int gatherAxis = *instruction.gatherAxis;
      if (operand.shape[scatterAxis] % n != 0)
        throw RuntimeError("all_to_all of bucket " +
                           std::to_string(instruction.bucket) +
                           ": dim does not divide by the group size");
      Scratch scratch(memory, 2 * operand.bytes());
      unsigned char *send = scratch.data();
      unsigned char *recv = scratch.data() + operand.bytes();
      packParts(memory, operand.shape, scatterAxis, n, elementBytes,
                bytesOf(operand), send, /*unpack=*/false);
      comm.allToAll(group, type, send, recv, operand.numel() / n);
      packParts(memory, result.shape, gatherAxis, n, elementBytes,
                bytesOf(result), recv, /*unpack=*/true);
      break;
    }
    case CollectiveKind::AllReduce:
    case CollectiveKind::SendRecv:
      break;
    }
  }
}

void runAllSlice(const Instruction &instruction, const Plan &plan, int rank,
                 const TensorRef &operand, const TensorRef &result,
                 CollectiveMemory &memory) {
  int axis = static_cast<int>(instruction.attrs.getInt("slice_axis"));
  const std::vector<int64_t> &gridAxes = instruction.attrs.getInts("grid_axes");
  if (axis < 0 || axis >= operand.rank())
    throw RuntimeError("shard.all_slice: slice_axis out of range");
  std::vector<int64_t> coords = plan.coordinates(rank);
  int64_t parts = 1, index = 0;
  for (int64_t gridAxis : gridAxes) {
    if (gridAxis < 0 || gridAxis >= static_cast<int64_t>(coords.size()))
      throw RuntimeError("shard.all_slice: grid axis out of range");
    parts *= plan.hierarchy[gridAxis];
    index = index * plan.hierarchy[gridAxis] + coords[gridAxis];
  }
  AxisView in(operand.shape, axis);
  auto [begin, size] =
      balancedPart(in.dim, static_cast<int>(parts), static_cast<int>(index));
  if (result.shape[axis] != size ||
      result.numel() != in.outer * size * in.inner)
    throw RuntimeError("shard.all_slice: result shape does not match part " +
                       std::to_string(index) + " of " + std::to_string(parts));
  size_t elementBytes = dtypeBytes(operand.dtype);
  size_t rowBytes = size * in.inner * elementBytes;
  memory.copyRows(bytesOf(result), rowBytes,
                  bytesOf(operand) + begin * in.inner * elementBytes,
                  in.dim * in.inner * elementBytes, rowBytes, in.outer);
}

void runToPartial(const Instruction &instruction, const Plan &plan, int rank,
                  const TensorRef &operand, const TensorRef &result,
                  CollectiveMemory &memory) {
  int64_t gridAxis = instruction.attrs.getInt("grid_axis");
  std::vector<int64_t> coords = plan.coordinates(rank);
  if (gridAxis < 0 || gridAxis >= static_cast<int64_t>(coords.size()))
    throw RuntimeError("sbp.to_partial: grid axis out of range");
  int64_t index = coords[gridAxis], parts = plan.hierarchy[gridAxis];
  size_t elementBytes = dtypeBytes(operand.dtype);
  if (!instruction.attrs.has("split_axis")) {
    if (result.numel() != operand.numel())
      throw RuntimeError("sbp.to_partial: the result must be the operand's "
                         "size");
    if (index == 0)
      memory.copy(bytesOf(result), bytesOf(operand),
                  operand.numel() * elementBytes);
    else
      memory.zero(bytesOf(result), result.numel() * elementBytes);
    return;
  }
  int axis = static_cast<int>(instruction.attrs.getInt("split_axis"));
  if (axis < 0 || axis >= result.rank())
    throw RuntimeError("sbp.to_partial: split_axis out of range");
  AxisView out(result.shape, axis);
  auto [begin, size] =
      balancedPart(out.dim, static_cast<int>(parts), static_cast<int>(index));
  if (operand.shape[axis] != size ||
      operand.numel() != out.outer * size * out.inner)
    throw RuntimeError("sbp.to_partial: operand shape does not match part " +
                       std::to_string(index) + " of " + std::to_string(parts));
  memory.zero(bytesOf(result), result.numel() * elementBytes);
  size_t rowBytes = size * out.inner * elementBytes;
  memory.copyRows(bytesOf(result) + begin * out.inner * elementBytes,
                  out.dim * out.inner * elementBytes, bytesOf(operand),
                  rowBytes, rowBytes, out.outer);
}

} // namespace zerosbp::runtime
