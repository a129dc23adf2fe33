//===- MultiTensor.cpp - one launch for many updates or casts -------------===//

#include "runtime/cuda/MultiTensor.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/ElementwiseChecks.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>

namespace zerosbp::runtime::gpu {

namespace {

/// `value` exactly, as C's %a writes it.
std::string exactText(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return text;
}

MultiTensorRef tableRef(const TensorRef &tensor) {
  return {tensor.data, tensor.dtype};
}

bool onDevice(const std::vector<TensorRef> &tensors) {
  for (const TensorRef &tensor : tensors)
    if (!tensor.data)
      return false;
  return true;
}

std::string sgdKey(const AttrMap &attrs, const Tensors &operands,
                   const Tensors &results) {
  constexpr std::string_view op = "nn.sgd";
  checks::checkSgd(op, operands, results);
  (void)attrs.getFloat("lr");
  (void)attrs.getFloat("grad_scale", 1.0);
  if (overlapsOtherThanReplaced(results[0], operands))
    return "";
  return std::string(op);
}

std::string adamKey(std::string_view op, const AttrMap &attrs,
                    const Tensors &operands, const Tensors &results) {
  checks::checkAdam(op, operands, results);
  checks::AdamConstants c = checks::adamConstants(attrs, op == "nn.adamw");
  const TensorRef &step = operands[4];
  // As the single kernel decides to go through scratch.
  Tensors read(operands.begin(), operands.begin() + 4);
  for (const TensorRef &result : results)
    if (overlaps(result, step) || overlapsOtherThanReplaced(result, read))
      return "";
  char where[32];
  std::snprintf(where, sizeof where, "%p", step.data);
  return std::string(op) + " lr=" + exactText(c.lr) +
         " beta1=" + exactText(c.beta1Double) +
         " beta2=" + exactText(c.beta2Double) + " step=" + where + " " +
         dtypeName(step.dtype);
}

std::string castKey(const Tensors &operands, const Tensors &results) {
  constexpr std::string_view op = "nn.cast";
  checks::checkUnaryFloat(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  // The same type is a copy of bytes (cudaMemcpyAsync), not a conversion.
  if (input.dtype == result.dtype || overlaps(result, input))
    return "";
  return std::string(op) + " " + dtypeName(input.dtype) + " to " +
         dtypeName(result.dtype);
}

/// Appends `value`'s bytes to `table`.
template <typename T>
void append(std::vector<unsigned char> &table, const T &value) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(&value);
  table.insert(table.end(), bytes, bytes + sizeof(T));
}

} // namespace

std::string multiTensorKey(std::string_view op, const AttrMap &attrs,
                           const std::vector<TensorRef> &operands,
                           const std::vector<TensorRef> &results) {
  bool sgd = op == "nn.sgd", adam = op == "nn.adam" || op == "nn.adamw",
       cast = op == "nn.cast";
  if (!sgd && !adam && !cast)
    return "";
  try {
    std::string key = sgd    ? sgdKey(attrs, operands, results)
                      : adam ? adamKey(op, attrs, operands, results)
                             : castKey(operands, results);
    if (key.empty() || operands[0].numel() == 0 || !onDevice(operands) ||
        !onDevice(results))
      return "";
    return key;
  } catch (const std::exception &) {
    // Its own kernel throws this when it runs.
    return "";
  }
}

bool checksDeviceData(std::string_view op) {
  return op == "nn.embedding" || op == "nn.embedding_grad" ||
         op == "nn.cross_entropy" || op == "nn.cross_entropy_grad" ||
         op == "nn.cross_entropy_sums" || op == "nn.cross_entropy_split_grad";
}

std::vector<ByteRange> byteRanges(const std::vector<TensorRef> &tensors) {
  std::vector<ByteRange> ranges;
  for (const TensorRef &tensor : tensors) {
    size_t bytes = tensor.bytes();
    if (!tensor.data || bytes == 0)
      continue;
    auto begin = reinterpret_cast<uintptr_t>(tensor.data);
    ranges.push_back({begin, begin + bytes});
  }
  return ranges;
}

std::vector<std::vector<size_t>>
scheduleSegment(const std::vector<SegmentNode> &nodes) {
  size_t n = nodes.size();
  // Every pair of overlapping ranges of two nodes, one a write: a sweep
  // over the ranges sorted by their start.
  struct Span {
    ByteRange range;
    size_t node;
    bool write;
  };
  std::vector<Span> spans;
  for (size_t k = 0; k < n; ++k) {
    for (const ByteRange &range : nodes[k].reads)
      spans.push_back({range, k, false});
    for (const ByteRange &range : nodes[k].writes)
      spans.push_back({range, k, true});
  }
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.range.begin < b.range.begin;
  });
  std::vector<std::vector<size_t>> earlier(n); // The nodes each depends on.
  std::vector<const Span *> open;
  for (const Span &span : spans) {
    open.erase(std::remove_if(open.begin(), open.end(),
                              [&](const Span *other) {
                                return other->range.end <= span.range.begin;
                              }),
               open.end());
    for (const Span *other : open) {
      if (other->node == span.node || (!other->write && !span.write))
        continue;
      size_t first = std::min(other->node, span.node);
      size_t second = std::max(other->node, span.node);
      earlier[second].push_back(first);
    }
    if (span.range.end > span.range.begin)
      open.push_back(&span);
  }

  // Kahn's algorithm over the dependencies, in plan order among the ready.
  std::vector<std::vector<size_t>> later(n);
  std::vector<size_t> waitingFor(n, 0);
  for (size_t k = 0; k < n; ++k) {
    std::sort(earlier[k].begin(), earlier[k].end());
    earlier[k].erase(std::unique(earlier[k].begin(), earlier[k].end()),
                     earlier[k].end());
    waitingFor[k] = earlier[k].size();
    for (size_t dependency : earlier[k])
      later[dependency].push_back(k);
  }
  std::set<size_t> ready;
  for (size_t k = 0; k < n; ++k)
    if (waitingFor[k] == 0)
      ready.insert(k);
  std::vector<std::vector<size_t>> launches;
  while (!ready.empty()) {
    // An instruction without a key goes first, alone: what it leads to
    // may join a group. With none ready, the first ready one's key takes
    // every ready one of that key.
    std::vector<size_t> launch;
    for (size_t k : ready)
      if (nodes[k].key.empty()) {
        launch.push_back(k);
        break;
      }
    if (launch.empty()) {
      const std::string &key = nodes[*ready.begin()].key;
      for (size_t k : ready)
        if (nodes[k].key == key)
          launch.push_back(k);
    }
    for (size_t k : launch)
      ready.erase(k);
    for (size_t k : launch)
      for (size_t next : later[k])
        if (--waitingFor[next] == 0)
          ready.insert(next);
    launches.push_back(std::move(launch));
  }
  return launches;
}

MultiTensorLaunch::MultiTensorLaunch(std::string op,
                                     const std::vector<KernelCall> &calls)
    : op_(std::move(op)), size_(calls.size()) {
  if (calls.size() < 2)
    throw RuntimeError(op_ +
                       ": a multi-tensor launch needs two or more "
                       "instructions, got " +
                       std::to_string(calls.size()));
  std::string key;
  for (const KernelCall &call : calls) {
    std::string own =
        multiTensorKey(op_, *call.attrs, *call.operands, *call.results);
    if (own.empty() || (!key.empty() && own != key))
      throw RuntimeError(op_ + ": instructions of different keys ('" + key +
                         "', '" + own + "') in one multi-tensor launch");
    key = own;
  }
  kind_ = op_ == "nn.sgd"    ? Kind::Sgd
          : op_ == "nn.cast" ? Kind::Cast
                             : Kind::Adam;
  std::vector<MultiTensorChunk> chunks;
  for (size_t k = 0; k < calls.size(); ++k) {
    const AttrMap &attrs = *calls[k].attrs;
    const Tensors &operands = *calls[k].operands;
    const Tensors &results = *calls[k].results;
    switch (kind_) {
    case Kind::Sgd:
      append(table_,
             SgdEntry{static_cast<float>(attrs.getFloat("lr")),
                      static_cast<float>(attrs.getFloat("grad_scale", 1.0)),
                      tableRef(operands[0]), tableRef(operands[1]),
                      tableRef(results[0])});
      break;
    case Kind::Adam: {
      AdamEntry entry{checks::adamConstants(attrs, op_ == "nn.adamw"),
                      tableRef(operands[0]),
                      tableRef(operands[1]),
                      tableRef(operands[2]),
                      tableRef(operands[3]),
                      tableRef(results[0]),
                      tableRef(results[1]),
                      tableRef(results[2])};
      if (k == 0) {
        stepConstants_ = entry.c;
        step_ = operands[4];
      }
      append(table_, entry);
      break;
    }
    case Kind::Cast:
      append(table_, CastEntry{tableRef(operands[0]), tableRef(results[0])});
      break;
    }
    int64_t n = operands[0].numel();
    elements_ += n;
    for (int64_t begin = 0; begin < n; begin += kMultiTensorChunk)
      chunks.push_back({static_cast<int64_t>(k), begin,
                        std::min(n, begin + kMultiTensorChunk)});
  }
  chunkOffset_ = (table_.size() + 15) / 16 * 16;
  table_.resize(chunkOffset_);
  for (const MultiTensorChunk &chunk : chunks)
    append(table_, chunk);
  chunkCount_ = static_cast<int64_t>(chunks.size());
}

std::string MultiTensorLaunch::name() const {
  return op_ + " x" + std::to_string(size_);
}

void MultiTensorLaunch::enqueue(CudaContext &ctx,
                                const void *deviceTable) const {
  const auto *base = static_cast<const unsigned char *>(deviceTable);
  const auto *chunks =
      reinterpret_cast<const MultiTensorChunk *>(base + chunkOffset_);
  switch (kind_) {
  case Kind::Sgd:
    launchMultiSgd(op_, ctx, reinterpret_cast<const SgdEntry *>(base), chunks,
                   chunkCount_);
    return;
  case Kind::Adam:
    launchMultiAdam(op_, ctx, reinterpret_cast<const AdamEntry *>(base), chunks,
                    chunkCount_, stepConstants_, step_);
    return;
  case Kind::Cast:
    launchMultiCast(op_, ctx, reinterpret_cast<const CastEntry *>(base), chunks,
                    chunkCount_);
    return;
  }
}

} // namespace zerosbp::runtime::gpu
