//===- Plan.cpp - plan helpers
//---------------------------------------------===//

#include "runtime/plan/Plan.h"

#include <algorithm>

namespace zerosbp::runtime {

static const char *const kRoleNames[kNumRoles] = {
    "param",      "grad",  "master",     "opt_state",
    "activation", "input", "comm_buffer"};

const char *roleName(Role role) { return kRoleNames[static_cast<int>(role)]; }

std::optional<Role> parseRole(const std::string &name) {
  for (int role = 0; role < kNumRoles; ++role)
    if (name == kRoleNames[role])
      return static_cast<Role>(role);
  return std::nullopt;
}

const char *memoryKindName(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Device:
    return "device";
  case MemoryKind::Host:
    return "host";
  case MemoryKind::Nvme:
    return "nvme";
  }
  return "?";
}

std::optional<MemoryKind> parseMemoryKind(const std::string &name) {
  for (MemoryKind kind :
       {MemoryKind::Device, MemoryKind::Host, MemoryKind::Nvme})
    if (name == memoryKindName(kind))
      return kind;
  return std::nullopt;
}

std::vector<DimRange> DistributedTensor::shard(int rank) const {
  if (!shards.empty())
    return shards[rank];
  // Row-major coordinates of `rank` in the hierarchy.
  std::vector<int64_t> coords(hierarchy.size());
  int64_t rest = rank;
  for (size_t axis = hierarchy.size(); axis-- > 0;) {
    coords[axis] = rest % hierarchy[axis];
    rest /= hierarchy[axis];
  }
  std::vector<DimRange> ranges;
  for (size_t dim = 0; dim < globalShape.size(); ++dim) {
    int64_t begin = 0, size = globalShape[dim];
    for (size_t axis = 0; axis < splitDims.size(); ++axis)
      if (splitDims[axis] == static_cast<int>(dim)) {
        int64_t parts = hierarchy[axis], index = coords[axis];
        begin += index * (size / parts) + std::min(index, size % parts);
        size = size / parts + (index < size % parts ? 1 : 0);
      }
    ranges.emplace_back(begin, begin + size);
  }
  return ranges;
}

int64_t PlanValue::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::vector<int64_t> Plan::coordinates(int rank) const {
  std::vector<int64_t> coords(hierarchy.size());
  int64_t rest = rank;
  for (size_t axis = hierarchy.size(); axis-- > 0;) {
    coords[axis] = rest % hierarchy[axis];
    rest /= hierarchy[axis];
  }
  return coords;
}

int Plan::stageOf(int rank) const {
  if (!pipeline)
    return 0;
  return static_cast<int>(coordinates(rank)[0]);
}

bool Plan::runsOn(const Instruction &instruction, int stage) const {
  return instruction.stages.empty() ||
         std::binary_search(instruction.stages.begin(),
                            instruction.stages.end(), stage);
}

std::vector<int> Plan::groupOf(int rank, int axis) const {
  std::vector<int64_t> coords = coordinates(rank);
  std::vector<int> group;
  for (int64_t index = 0; index < hierarchy[axis]; ++index) {
    coords[axis] = index;
    int64_t linear = 0;
    for (size_t a = 0; a < hierarchy.size(); ++a)
      linear = linear * hierarchy[a] + coords[a];
    group.push_back(static_cast<int>(linear));
  }
  return group;
}

const PlanVariable *Plan::findVariable(const std::string &name) const {
  for (const PlanVariable &variable : variables)
    if (variable.name == name)
      return &variable;
  return nullptr;
}

bool Plan::scalesLossDynamically() const {
  return findVariable("amp.loss_scale") != nullptr;
}

} // namespace zerosbp::runtime
