//===- Collectives.cpp - a plan's collective_start, executed --------------===//
//
// The communicator moves flat rank-major buffers. A segment whose split or
// gathered axis has only size-1 dims before it is already rank-major and is
// passed as is; otherwise its parts are packed into (and out of) a scratch
// buffer. An all-reduce bucket whose operands lie end to end and whose
// results are those same bytes is reduced in place with one call.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Collectives.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cstring>

namespace zerosbp::runtime {

namespace {

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

/// Copies the n parts of `axis` of `src` (shape `shape`) into `dst` one
/// after another (part-major), or back when `unpack`.
void packParts(const std::vector<int64_t> &shape, int axis, int64_t n,
               size_t elementBytes, unsigned char *tensor, unsigned char *flat,
               bool unpack) {
  AxisView view(shape, axis);
  int64_t partDim = view.dim / n;
  size_t rowBytes = partDim * view.inner * elementBytes;
  size_t partBytes = view.outer * rowBytes;
  for (int64_t part = 0; part < n; ++part)
    for (int64_t o = 0; o < view.outer; ++o) {
      unsigned char *inTensor =
          tensor +
          ((o * view.dim + part * partDim) * view.inner) * elementBytes;
      unsigned char *inFlat = flat + part * partBytes + o * rowBytes;
      if (unpack)
        std::memcpy(inTensor, inFlat, rowBytes);
      else
        std::memcpy(inFlat, inTensor, rowBytes);
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
                     CommGroup &group, Communicator &comm) {
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
    std::memmove(results[0].data, operands[0].data, operands[0].bytes());
    comm.allReduce(group, type, results[0].data, operands[0].numel(),
                   instruction.reduce);
    return;
  }
  std::vector<unsigned char> scratch;
  unsigned char *flat = static_cast<unsigned char *>(staging);
  if (!flat) {
    scratch.resize(total * elementBytes);
    flat = scratch.data();
  }
  for (size_t i = 0; i < operands.size(); ++i)
    std::memcpy(flat + segments[i].offset * elementBytes, operands[i].data,
                operands[i].bytes());
  comm.allReduce(group, type, flat, total, instruction.reduce);
  for (size_t i = 0; i < results.size(); ++i)
    std::memcpy(results[i].data, flat + segments[i].offset * elementBytes,
                results[i].bytes());
}

/// A bucket of several reduce-scatter or all-gather segments, each split
/// or gathered along a leading axis: one collective over a rank-major flat
/// buffer (part j of every segment, then part j + 1, ...), so the group
/// synchronizes once per bucket rather than once per tensor.
bool runFusedBucket(const Instruction &instruction,
                    const std::vector<TensorRef> &operands,
                    const std::vector<TensorRef> &results, void *staging,
                    CommGroup &group, Communicator &comm) {
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
  std::vector<unsigned char> scratch((scatter && staging ? 0 : n * partBytes) +
                                     partBytes);
  unsigned char *whole = scatter && staging
                             ? static_cast<unsigned char *>(staging)
                             : scratch.data();
  unsigned char *own = scratch.data() + scratch.size() - partBytes;
  size_t at = 0;
  if (scatter) {
    // Part j of every segment, end to end, is rank j's block.
    for (const TensorRef &operand : operands) {
      size_t segmentPart = operand.bytes() / n;
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(whole + j * partBytes + at,
                    bytesOf(operand) + j * segmentPart, segmentPart);
      at += segmentPart;
    }
    comm.reduceScatter(group, type, whole, own, partElements,
                       instruction.reduce);
    at = 0;
    for (const TensorRef &result : results) {
      std::memcpy(result.data, own + at, result.bytes());
      at += result.bytes();
    }
    return true;
  }
  for (const TensorRef &operand : operands) {
    std::memcpy(own + at, operand.data, operand.bytes());
    at += operand.bytes();
  }
  comm.allGather(group, type, own, whole, partElements);
  at = 0;
  for (const TensorRef &result : results) {
    size_t segmentPart = result.bytes() / n;
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(bytesOf(result) + j * segmentPart, whole + j * partBytes + at,
                  segmentPart);
    at += segmentPart;
  }
  return true;
}

} // namespace

void runCollective(const Instruction &instruction,
                   const std::vector<TensorRef> &operands,
                   const std::vector<TensorRef> &results, void *staging,
                   CommGroup &group, Communicator &comm) {
  int64_t n = group.size();
  if (instruction.collective == CollectiveKind::AllReduce) {
    allReduceBucket(instruction, operands, results, staging, group, comm);
    return;
  }
  if (runFusedBucket(instruction, operands, results, staging, group, comm))
    return;
  for (size_t i = 0; i < operands.size(); ++i) {
    const TensorRef &operand = operands[i];
    const TensorRef &result = results[i];
    DType type = operand.dtype;
    size_t elementBytes = dtypeBytes(type);
    std::vector<unsigned char> scratch;
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
      scratch.resize(operand.bytes());
      packParts(operand.shape, axis, n, elementBytes, bytesOf(operand),
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
      scratch.resize(result.bytes());
      comm.allGather(group, type, operand.data, scratch.data(),
                     operand.numel());
      packParts(result.shape, axis, n, elementBytes, bytesOf(result),
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
      scratch.resize(2 * operand.bytes());
      unsigned char *send = scratch.data();
      unsigned char *recv = scratch.data() + operand.bytes();
      packParts(operand.shape, scatterAxis, n, elementBytes, bytesOf(operand),
                send, /*unpack=*/false);
      comm.allToAll(group, type, send, recv, operand.numel() / n);
      packParts(result.shape, gatherAxis, n, elementBytes, bytesOf(result),
                recv, /*unpack=*/true);
      break;
    }
    case CollectiveKind::AllReduce:
      break;
    }
  }
}

void runAllSlice(const Instruction &instruction, const Plan &plan, int rank,
                 const TensorRef &operand, const TensorRef &result) {
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
  int64_t base = in.dim / parts, extra = in.dim % parts;
  int64_t size = base + (index < extra ? 1 : 0);
  int64_t begin = index * base + std::min(index, extra);
  if (result.shape[axis] != size ||
      result.numel() != in.outer * size * in.inner)
    throw RuntimeError("shard.all_slice: result shape does not match part " +
                       std::to_string(index) + " of " + std::to_string(parts));
  size_t elementBytes = dtypeBytes(operand.dtype);
  size_t rowBytes = size * in.inner * elementBytes;
  for (int64_t o = 0; o < in.outer; ++o)
    std::memmove(bytesOf(result) + o * rowBytes,
                 bytesOf(operand) +
                     ((o * in.dim + begin) * in.inner) * elementBytes,
                 rowBytes);
}

} // namespace zerosbp::runtime
