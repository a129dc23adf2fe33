//===- Distribution.cpp - whole tensors <-> rank shards -------------------===//

#include "runtime/exec/Distribution.h"

#include "runtime/core/Error.h"
#include "runtime/exec/ShardRuns.h"

#include <cmath>
#include <cstring>

namespace zerosbp::runtime {

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

namespace {

/// Calls `visit(globalIndex, localIndex, count)` for each run of contiguous
/// elements of `rank`'s block.
template <typename Visit>
void forEachRun(const DistributedTensor &tensor, int rank, Visit visit) {
  const std::vector<int64_t> &shape = tensor.globalShape;
  const std::vector<DimRange> ranges = tensor.shard(rank);
  size_t rankCount = shape.size();
  if (rankCount == 0) {
    visit(0, 0, 1);
    return;
  }
  std::vector<int64_t> strides(rankCount, 1);
  for (size_t d = rankCount - 1; d-- > 0;)
    strides[d] = strides[d + 1] * shape[d + 1];
  for (const DimRange &range : ranges)
    if (range.second <= range.first)
      return; // An empty shard.
  int64_t run = ranges.back().second - ranges.back().first;
  std::vector<int64_t> index(rankCount);
  for (size_t d = 0; d < rankCount; ++d)
    index[d] = ranges[d].first;
  int64_t local = 0;
  while (true) {
    int64_t global = 0;
    for (size_t d = 0; d < rankCount; ++d)
      global += index[d] * strides[d];
    visit(global, local, run);
    local += run;
    // Advance the outer dims (all but the last) like an odometer.
    size_t d = rankCount - 1;
    while (true) {
      if (d == 0)
        return;
      --d;
      if (++index[d] < ranges[d].second)
        break;
      index[d] = ranges[d].first;
    }
  }
}

uint64_t splitMix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform on (0, 1), 53 bits.
double uniformOpen(uint64_t &state) {
  return (static_cast<double>(splitMix(state) >> 11) + 0.5) * 0x1.0p-53;
}

} // namespace

std::vector<double> shardOf(const DistributedTensor &tensor, int rank,
                            const std::vector<double> &model) {
  std::vector<double> local(numElements(tensor.localShape), 0.0);
  int64_t available = static_cast<int64_t>(model.size());
  forEachRun(tensor, rank, [&](int64_t global, int64_t at, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      local[at + i] = global + i < available ? model[global + i] : 0.0;
  });
  return local;
}

void placeShard(const DistributedTensor &tensor, int rank,
                const std::vector<double> &local, std::vector<double> &global) {
  forEachRun(tensor, rank, [&](int64_t at, int64_t from, int64_t count) {
    std::memcpy(global.data() + at, local.data() + from,
                count * sizeof(double));
  });
}

std::vector<double> shardOf(const PlanVariable &variable, int rank,
                            const std::vector<double> &model) {
  std::vector<double> local(numElements(variable.localShape), 0.0);
  int64_t available = static_cast<int64_t>(model.size());
  for (const ShardRun &run :
       shardRuns(layoutOf(variable), variable.shard(rank)))
    for (int64_t i = 0; i < run.length; ++i)
      local[run.local + i] =
          run.model + i < available ? model[run.model + i] : 0.0;
  return local;
}

void placeShard(const PlanVariable &variable, int rank,
                const std::vector<double> &local, std::vector<double> &model) {
  for (const ShardRun &run :
       shardRuns(layoutOf(variable), variable.shard(rank)))
    std::memcpy(model.data() + run.model, local.data() + run.local,
                run.length * sizeof(double));
}

std::vector<double> initialValues(const PlanVariable &variable, uint64_t seed) {
  int64_t count = numElements(variable.modelShape());
  std::vector<double> values(count, 0.0);
  double scale = variable.initScale;
  if (variable.init == "ones" || variable.init == "constant") {
    std::fill(values.begin(), values.end(),
              variable.init == "ones" ? 1.0 : scale);
    return values;
  }
  if (variable.init == "zeros")
    return values;
  // FNV-1a of the name: each variable has its own stream, whatever the order.
  uint64_t state = 1469598103934665603ull ^ seed;
  for (unsigned char c : variable.name)
    state = (state ^ c) * 1099511628211ull;
  if (variable.init == "uniform") {
    for (double &value : values)
      value = scale * (2.0 * uniformOpen(state) - 1.0);
    return values;
  }
  // normal: Box-Muller, two values per pair of draws.
  for (int64_t i = 0; i < count; i += 2) {
    double radius = std::sqrt(-2.0 * std::log(uniformOpen(state)));
    double angle = 2.0 * M_PI * uniformOpen(state);
    values[i] = scale * radius * std::cos(angle);
    if (i + 1 < count)
      values[i + 1] = scale * radius * std::sin(angle);
  }
  return values;
}

void storeElements(const TensorRef &tensor, const std::vector<double> &values) {
  int64_t count = tensor.numel();
  if (static_cast<int64_t>(values.size()) != count)
    throw RuntimeError("internal: element count mismatch");
  for (int64_t i = 0; i < count; ++i) {
    double value = values[i];
    switch (tensor.dtype) {
    case DType::F32:
      tensor.as<float>()[i] = static_cast<float>(value);
      break;
    case DType::F64:
      tensor.as<double>()[i] = value;
      break;
    case DType::F16:
      tensor.as<uint16_t>()[i] = floatToHalf(static_cast<float>(value));
      break;
    case DType::BF16:
      tensor.as<uint16_t>()[i] = floatToBf16(static_cast<float>(value));
      break;
    case DType::I64:
      tensor.as<int64_t>()[i] = static_cast<int64_t>(value);
      break;
    case DType::I32:
      tensor.as<int32_t>()[i] = static_cast<int32_t>(value);
      break;
    case DType::I1:
      tensor.as<uint8_t>()[i] = value != 0;
      break;
    case DType::I8:
      tensor.as<int8_t>()[i] = static_cast<int8_t>(value);
      break;
    }
  }
}

std::vector<double> loadElements(const TensorRef &tensor) {
  int64_t count = tensor.numel();
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) {
    switch (tensor.dtype) {
    case DType::F32:
      values[i] = tensor.as<float>()[i];
      break;
    case DType::F64:
      values[i] = tensor.as<double>()[i];
      break;
    case DType::F16:
      values[i] = halfToFloat(tensor.as<uint16_t>()[i]);
      break;
    case DType::BF16:
      values[i] = bf16ToFloat(tensor.as<uint16_t>()[i]);
      break;
    case DType::I64:
      values[i] = static_cast<double>(tensor.as<int64_t>()[i]);
      break;
    case DType::I32:
      values[i] = tensor.as<int32_t>()[i];
      break;
    case DType::I1:
      values[i] = tensor.as<uint8_t>()[i];
      break;
    case DType::I8:
      values[i] = tensor.as<int8_t>()[i];
      break;
    }
  }
  return values;
}

} // namespace zerosbp::runtime
