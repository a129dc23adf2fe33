//===- Communicator.cpp - the reduction every backend shares --------------===//
//
// reduceInRankOrder is the only place a collective combines values, so the
// in-process and MPI backends agree bit for bit: floating point types
// accumulate in f32 (f32, f16, bf16) or f64 (f64) starting from rank 0 and
// round once to the element type; integers add with two's complement
// wrap-around; i1 reduces with logical or. Max propagates NaN.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace zerosbp::runtime {

const char *collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::SendRecv:
    return "send_recv";
  }
  return "?";
}

PartRange balancedPart(int64_t count, int parts, int index) {
  int64_t base = count / parts;
  int64_t extra = count % parts;
  int64_t size = base + (index < extra ? 1 : 0);
  int64_t offset = base * index + std::min<int64_t>(index, extra);
  return {offset, size};
}

int memberIndex(const std::vector<int> &ranks, int myRank, int worldSize,
                const std::string &where) {
  if (ranks.empty())
    throw RuntimeError(where + ": a group needs at least one rank");
  std::set<int> seen;
  int index = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= worldSize)
      throw RuntimeError(where + ": rank " + std::to_string(ranks[i]) +
                         " is not in a world of " + std::to_string(worldSize));
    if (!seen.insert(ranks[i]).second)
      throw RuntimeError(where + ": rank " + std::to_string(ranks[i]) +
                         " appears twice");
    if (ranks[i] == myRank)
      index = static_cast<int>(i);
  }
  if (index < 0)
    throw RuntimeError(where + ": the calling rank is not a member");
  return index;
}

std::string formatRanks(const std::vector<int> &ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

std::string formatDuration(std::chrono::milliseconds value) {
  if (value.count() % 1000 == 0)
    return std::to_string(value.count() / 1000) + " s";
  return std::to_string(value.count()) + " ms";
}

std::string describeCollective(CollectiveKind kind, DType type, int64_t count) {
  return std::string(collectiveKindName(kind)) + " of " +
         std::to_string(count) + " " + dtypeName(type) + " elements";
}

namespace {

// Elements are reduced in blocks: the accumulators of one block stay in
// cache while every source is added in rank order. Each output element is
// written only after all sources of its block were read, so `out` may alias
// any source at the same position.
constexpr int64_t kBlock = 512;

struct F32Codec {
  using Storage = float;
  using Acc = float;
  static Acc load(Storage value) { return value; }
  static Storage store(Acc value) { return value; }
};

struct F64Codec {
  using Storage = double;
  using Acc = double;
  static Acc load(Storage value) { return value; }
  static Storage store(Acc value) { return value; }
};

struct F16Codec {
  using Storage = uint16_t;
  using Acc = float;
  static Acc load(Storage value) { return halfToFloat(value); }
  static Storage store(Acc value) { return floatToHalf(value); }
};

struct BF16Codec {
  using Storage = uint16_t;
  using Acc = float;
  static Acc load(Storage value) { return bf16ToFloat(value); }
  static Storage store(Acc value) { return floatToBf16(value); }
};

template <typename Codec>
void reduceFloat(const std::vector<const void *> &sources, void *out,
                 int64_t count, ReduceOp op) {
  using Storage = typename Codec::Storage;
  using Acc = typename Codec::Acc;
  Acc acc[kBlock];
  auto *result = static_cast<Storage *>(out);
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    int64_t size = std::min(kBlock, count - begin);
    const auto *first = static_cast<const Storage *>(sources[0]) + begin;
    for (int64_t i = 0; i < size; ++i)
      acc[i] = Codec::load(first[i]);
    for (size_t rank = 1; rank < sources.size(); ++rank) {
      const auto *next = static_cast<const Storage *>(sources[rank]) + begin;
      if (op == ReduceOp::Sum) {
        for (int64_t i = 0; i < size; ++i)
          acc[i] += Codec::load(next[i]);
      } else {
        for (int64_t i = 0; i < size; ++i) {
          Acc value = Codec::load(next[i]);
          if (!(acc[i] >= value) && !std::isnan(acc[i]))
            acc[i] = value;
        }
      }
    }
    for (int64_t i = 0; i < size; ++i)
      result[begin + i] = Codec::store(acc[i]);
  }
}

template <typename Int>
void reduceInt(const std::vector<const void *> &sources, void *out,
               int64_t count, ReduceOp op) {
  using Unsigned = std::make_unsigned_t<Int>;
  Int acc[kBlock];
  auto *result = static_cast<Int *>(out);
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    int64_t size = std::min(kBlock, count - begin);
    std::memcpy(acc, static_cast<const Int *>(sources[0]) + begin,
                size * sizeof(Int));
    for (size_t rank = 1; rank < sources.size(); ++rank) {
      const auto *next = static_cast<const Int *>(sources[rank]) + begin;
      if (op == ReduceOp::Sum) {
        for (int64_t i = 0; i < size; ++i)
          acc[i] = static_cast<Int>(static_cast<Unsigned>(acc[i]) +
                                    static_cast<Unsigned>(next[i]));
      } else {
        for (int64_t i = 0; i < size; ++i)
          acc[i] = std::max(acc[i], next[i]);
      }
    }
    std::memcpy(result + begin, acc, size * sizeof(Int));
  }
}

void reduceBool(const std::vector<const void *> &sources, void *out,
                int64_t count) {
  uint8_t acc[kBlock];
  auto *result = static_cast<uint8_t *>(out);
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    int64_t size = std::min(kBlock, count - begin);
    const auto *first = static_cast<const uint8_t *>(sources[0]) + begin;
    for (int64_t i = 0; i < size; ++i)
      acc[i] = first[i] != 0;
    for (size_t rank = 1; rank < sources.size(); ++rank) {
      const auto *next = static_cast<const uint8_t *>(sources[rank]) + begin;
      for (int64_t i = 0; i < size; ++i)
        acc[i] |= next[i] != 0;
    }
    std::memcpy(result + begin, acc, size);
  }
}

} // namespace

void reduceInRankOrder(DType type, const std::vector<const void *> &sources,
                       void *out, int64_t count, ReduceOp op) {
  if (count < 0)
    throw RuntimeError("reduction of a negative element count " +
                       std::to_string(count));
  if (sources.empty())
    throw RuntimeError("reduction without sources");
  if (count == 0)
    return;
  switch (type) {
  case DType::F32:
    return reduceFloat<F32Codec>(sources, out, count, op);
  case DType::F16:
    return reduceFloat<F16Codec>(sources, out, count, op);
  case DType::BF16:
    return reduceFloat<BF16Codec>(sources, out, count, op);
  case DType::F64:
    return reduceFloat<F64Codec>(sources, out, count, op);
  case DType::I64:
    return reduceInt<int64_t>(sources, out, count, op);
  case DType::I32:
    return reduceInt<int32_t>(sources, out, count, op);
  case DType::I1:
    return reduceBool(sources, out, count);
  case DType::I8:
    return reduceInt<int8_t>(sources, out, count, op);
  }
  throw RuntimeError("reduction of an unknown element type");
}

int64_t directBytesSent(CollectiveKind kind, DType type, int64_t count,
                        int groupSize, int groupIndex, int sourceIndex) {
  int64_t elementBytes = static_cast<int64_t>(dtypeBytes(type));
  if (kind == CollectiveKind::SendRecv)
    return groupIndex == sourceIndex ? count * elementBytes : 0;
  int64_t others = groupSize - 1;
  if (kind != CollectiveKind::AllReduce)
    return others * count * elementBytes;
  // A reduce-scatter of every chunk but this rank's, then an all-gather of
  // this rank's chunk to every other rank.
  PartRange mine = balancedPart(count, groupSize, groupIndex);
  return ((count - mine.size) + others * mine.size) * elementBytes;
}

void Communicator::countCollective(CollectiveKind kind, DType type,
                                   int64_t count, const CommGroup &group,
                                   int sourceIndex) {
  int64_t bytes = directBytesSent(kind, type, count, group.size(),
                                  group.index(), sourceIndex);
  counters.called(kind) += 1;
  counters.sent(kind) += bytes;
  if (group.axis() >= 0 && group.axis() < kMaxHierarchyAxes)
    counters.bytesSentOnAxis[group.axis()] += bytes;
}

} // namespace zerosbp::runtime
