//===- collective_cases.cc - collectives and their expected results -------===//

#include "tests/unit/runtime/comm/collective_cases.h"

#include "runtime/core/DType.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace zerosbp::runtime::testing {

namespace {

uint64_t splitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Element `i` of index `index`'s input as a double, before rounding to
/// the element type.
double sampleValue(DType type, uint64_t seed, int index, int64_t i) {
  uint64_t bits = splitMix(seed * 1000003ull + splitMix(index * 7919ull + i));
  if (isFloat(type)) {
    double unit = static_cast<double>(bits >> 11) * 0x1.0p-53; // [0, 1)
    int exponent = static_cast<int>((bits >> 3) % 9) - 4;      // 2^-4..2^4
    return (unit - 0.5) * std::ldexp(1.0, exponent);
  }
  if (type == DType::I1)
    return static_cast<double>(bits & 1);
  if (type == DType::I8)
    return static_cast<double>(static_cast<int64_t>(bits % 255) - 127);
  return static_cast<double>(static_cast<int64_t>(bits % 2001) - 1000);
}

void storeElement(DType type, double value, uint8_t *out) {
  switch (type) {
  case DType::F32: {
    float v = static_cast<float>(value);
    std::memcpy(out, &v, 4);
    return;
  }
  case DType::F64:
    std::memcpy(out, &value, 8);
    return;
  case DType::F16: {
    uint16_t v = floatToHalf(static_cast<float>(value));
    std::memcpy(out, &v, 2);
    return;
  }
  case DType::BF16: {
    uint16_t v = floatToBf16(static_cast<float>(value));
    std::memcpy(out, &v, 2);
    return;
  }
  case DType::I64: {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(out, &v, 8);
    return;
  }
  case DType::I32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(out, &v, 4);
    return;
  }
  case DType::I1:
    *out = value != 0;
    return;
  case DType::I8: {
    auto v = static_cast<int8_t>(value);
    std::memcpy(out, &v, 1);
    return;
  }
  }
}

/// Reduces element `i` of every source, rank 0 first, and writes it at
/// `out`.
void reduceElement(DType type, ReduceOp op,
                   const std::vector<const uint8_t *> &sources, int64_t i,
                   uint8_t *out) {
  size_t width = dtypeBytes(type);
  auto at = [&](size_t rank) { return sources[rank] + i * width; };
  if (type == DType::F64) {
    double acc;
    std::memcpy(&acc, at(0), 8);
    for (size_t r = 1; r < sources.size(); ++r) {
      double v;
      std::memcpy(&v, at(r), 8);
      if (op == ReduceOp::Sum)
        acc = acc + v;
      else if (!std::isnan(acc) && (std::isnan(v) || v > acc))
        acc = v;
    }
    std::memcpy(out, &acc, 8);
    return;
  }
  if (type == DType::F32 || type == DType::F16 || type == DType::BF16) {
    auto load = [&](size_t rank) {
      uint16_t half;
      float v;
      if (type == DType::F32) {
        std::memcpy(&v, at(rank), 4);
        return v;
      }
      std::memcpy(&half, at(rank), 2);
      return type == DType::F16 ? halfToFloat(half) : bf16ToFloat(half);
    };
    float acc = load(0);
    for (size_t r = 1; r < sources.size(); ++r) {
      float v = load(r);
      if (op == ReduceOp::Sum)
        acc = acc + v;
      else if (!std::isnan(acc) && (std::isnan(v) || v > acc))
        acc = v;
    }
    if (type == DType::F32) {
      std::memcpy(out, &acc, 4);
    } else {
      uint16_t half = type == DType::F16 ? floatToHalf(acc) : floatToBf16(acc);
      std::memcpy(out, &half, 2);
    }
    return;
  }
  if (type == DType::I1) {
    uint8_t acc = 0;
    for (size_t r = 0; r < sources.size(); ++r)
      acc |= *at(r) != 0;
    *out = acc;
    return;
  }
  int64_t acc = 0;
  for (size_t r = 0; r < sources.size(); ++r) {
    int64_t v;
    if (type == DType::I64) {
      std::memcpy(&v, at(r), 8);
    } else if (type == DType::I8) {
      v = static_cast<int8_t>(*at(r));
    } else {
      int32_t narrow;
      std::memcpy(&narrow, at(r), 4);
      v = narrow;
    }
    if (r == 0)
      acc = v;
    else if (op == ReduceOp::Sum)
      acc += v;
    else
      acc = std::max(acc, v);
  }
  if (type == DType::I64) {
    std::memcpy(out, &acc, 8);
  } else if (type == DType::I8) {
    // Sums wrap modulo 256, as NCCL's int8 sums do.
    *out = static_cast<uint8_t>(static_cast<uint64_t>(acc));
  } else {
    int32_t narrow = static_cast<int32_t>(acc);
    std::memcpy(out, &narrow, 4);
  }
}

std::string formatElement(DType type, const uint8_t *p) {
  std::ostringstream out;
  switch (type) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    out << v;
    break;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    out << v;
    break;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    out << (type == DType::F16 ? halfToFloat(v) : bf16ToFloat(v)) << " (0x"
        << std::hex << v << ")";
    break;
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    out << v;
    break;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    out << v;
    break;
  }
  case DType::I1:
    out << int(*p);
    break;
  case DType::I8:
    out << int(static_cast<int8_t>(*p));
    break;
  }
  return out.str();
}

} // namespace

std::string CollectiveCase::name() const {
  std::string text = std::string(collectiveKindName(kind)) + "_" +
                     dtypeName(type) + "_" + std::to_string(count);
  if (reduces())
    text += op == ReduceOp::Sum ? "_sum" : "_max";
  return text;
}

std::vector<CollectiveCase> makeCases(const std::vector<DType> &types,
                                      const std::vector<int64_t> &counts) {
  std::vector<CollectiveCase> cases;
  for (DType type : types)
    for (int64_t count : counts) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        cases.push_back({CollectiveKind::AllReduce, type, count, op});
        cases.push_back({CollectiveKind::ReduceScatter, type, count, op});
      }
      cases.push_back({CollectiveKind::AllGather, type, count, ReduceOp::Sum});
      cases.push_back({CollectiveKind::AllToAll, type, count, ReduceOp::Sum});
    }
  return cases;
}

int64_t inputElements(const CollectiveCase &c, int groupSize) {
  switch (c.kind) {
  case CollectiveKind::AllReduce:
  case CollectiveKind::AllGather:
    return c.count;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return c.count * groupSize;
  case CollectiveKind::SendRecv: // Point to point: never a case here.
    break;
  }
  return 0;
}

int64_t outputElements(const CollectiveCase &c, int groupSize) {
  switch (c.kind) {
  case CollectiveKind::AllReduce:
  case CollectiveKind::ReduceScatter:
    return c.count;
  case CollectiveKind::AllGather:
  case CollectiveKind::AllToAll:
    return c.count * groupSize;
  case CollectiveKind::SendRecv: // Point to point: never a case here.
    break;
  }
  return 0;
}

Bytes makeInput(const CollectiveCase &c, int groupSize, int index,
                uint64_t seed) {
  int64_t elements = inputElements(c, groupSize);
  size_t width = dtypeBytes(c.type);
  Bytes bytes(elements * width);
  for (int64_t i = 0; i < elements; ++i)
    storeElement(c.type, sampleValue(c.type, seed, index, i),
                 bytes.data() + i * width);
  return bytes;
}

Bytes expectedOutput(const CollectiveCase &c, int groupSize, int index,
                     uint64_t seed) {
  std::vector<Bytes> inputs;
  for (int r = 0; r < groupSize; ++r)
    inputs.push_back(makeInput(c, groupSize, r, seed));
  size_t width = dtypeBytes(c.type);
  int64_t partBytes = c.count * width;
  Bytes out(outputElements(c, groupSize) * width);
  std::vector<const uint8_t *> sources(groupSize);
  switch (c.kind) {
  case CollectiveKind::AllReduce:
    for (int r = 0; r < groupSize; ++r)
      sources[r] = inputs[r].data();
    for (int64_t i = 0; i < c.count; ++i)
      reduceElement(c.type, c.op, sources, i, out.data() + i * width);
    break;
  case CollectiveKind::ReduceScatter:
    for (int r = 0; r < groupSize; ++r)
      sources[r] = inputs[r].data() + index * partBytes;
    for (int64_t i = 0; i < c.count; ++i)
      reduceElement(c.type, c.op, sources, i, out.data() + i * width);
    break;
  case CollectiveKind::AllGather:
    for (int r = 0; r < groupSize; ++r)
      if (partBytes)
        std::memcpy(out.data() + r * partBytes, inputs[r].data(), partBytes);
    break;
  case CollectiveKind::AllToAll:
    for (int r = 0; r < groupSize; ++r)
      if (partBytes)
        std::memcpy(out.data() + r * partBytes,
                    inputs[r].data() + index * partBytes, partBytes);
    break;
  case CollectiveKind::SendRecv:
    break;
  }
  return out;
}

int64_t expectedBytesSent(const CollectiveCase &c, int groupSize, int index) {
  int64_t width = dtypeBytes(c.type);
  int64_t n = groupSize;
  if (c.kind != CollectiveKind::AllReduce)
    return (n - 1) * c.count * width;
  // Chunk sizes differ by at most one, larger first.
  int64_t own = c.count / n + (index < c.count % n ? 1 : 0);
  int64_t scatter = (c.count - own) * width; // every other chunk, once
  int64_t gather = (n - 1) * own * width;    // own chunk to every peer
  return scatter + gather;
}

Bytes runCase(Communicator &comm, CommGroup &group, const CollectiveCase &c,
              const Bytes &input) {
  size_t width = dtypeBytes(c.type);
  Bytes out(outputElements(c, group.size()) * width);
  switch (c.kind) {
  case CollectiveKind::AllReduce:
    out = input;
    comm.allReduce(group, c.type, out.data(), c.count, c.op);
    break;
  case CollectiveKind::ReduceScatter:
    comm.reduceScatter(group, c.type, input.data(), out.data(), c.count, c.op);
    break;
  case CollectiveKind::AllGather:
    comm.allGather(group, c.type, input.data(), out.data(), c.count);
    break;
  case CollectiveKind::AllToAll:
    comm.allToAll(group, c.type, input.data(), out.data(), c.count);
    break;
  case CollectiveKind::SendRecv:
    break;
  }
  return out;
}

std::string firstDifference(const CollectiveCase &c, const Bytes &actual,
                            const Bytes &expected) {
  if (actual.size() != expected.size())
    return "size " + std::to_string(actual.size()) +
           " != " + std::to_string(expected.size());
  size_t width = dtypeBytes(c.type);
  for (size_t i = 0; i < actual.size(); i += width)
    if (std::memcmp(actual.data() + i, expected.data() + i, width) != 0)
      return "element " + std::to_string(i / width) + ": " +
             formatElement(c.type, actual.data() + i) + " != expected " +
             formatElement(c.type, expected.data() + i);
  return "";
}

} // namespace zerosbp::runtime::testing
