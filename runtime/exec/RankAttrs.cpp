//===- RankAttrs.cpp - instruction attributes as one rank sees them -------===//

#include "runtime/exec/RankAttrs.h"

#include "runtime/comm/Communicator.h"
#include "runtime/core/Error.h"

namespace zerosbp::runtime {

namespace {
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The values whose first one `global_shape` and `split_dims` describe:
/// the operands, or the results with `"split_of": "result"` (an op such as
/// nn.embedding_grad whose result is split, not its operands).
const std::vector<int> &splitValues(const Instruction &instruction) {
  if (!instruction.attrs.has("split_of"))
    return instruction.operands;
  const std::string &of = instruction.attrs.getString("split_of");
  if (of != "result")
    throw RuntimeError("'split_of' must be \"result\", got \"" + of + "\"");
  return instruction.results;
}
} // namespace

std::vector<int64_t> shardOffsets(const Plan &plan, int rank,
                                  const std::vector<int64_t> &globalShape,
                                  const std::vector<int64_t> &splitDims,
                                  std::vector<int64_t> &blockShape) {
  if (splitDims.size() != plan.hierarchy.size())
    throw RuntimeError("'split_dims' has " + std::to_string(splitDims.size()) +
                       " entries for " + std::to_string(plan.hierarchy.size()) +
                       " hierarchy axes");
  std::vector<int64_t> coords = plan.coordinates(rank);
  std::vector<int64_t> offsets(globalShape.size(), 0);
  blockShape = globalShape;
  // Nested splits: each axis cuts what the earlier ones left of its dim.
  for (size_t axis = 0; axis < splitDims.size(); ++axis) {
    int64_t dim = splitDims[axis];
    if (dim < 0)
      continue;
    if (dim >= static_cast<int64_t>(globalShape.size()))
      throw RuntimeError("'split_dims' names dim " + std::to_string(dim) +
                         " of a rank-" + std::to_string(globalShape.size()) +
                         " tensor");
    PartRange part =
        balancedPart(blockShape[dim], static_cast<int>(plan.hierarchy[axis]),
                     static_cast<int>(coords[axis]));
    offsets[dim] += part.offset;
    blockShape[dim] = part.size;
  }
  return offsets;
}

std::vector<AttrMap> rankAttrs(const Plan &plan, int rank) {
  std::vector<AttrMap> attrs;
  attrs.reserve(plan.instructions.size());
  int stage = plan.stageOf(rank);
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    const Instruction &instruction = plan.instructions[i];
    attrs.push_back(instruction.attrs);
    // Another pipeline stage's instruction never runs here.
    if (!instruction.attrs.has("split_dims") ||
        !plan.runsOn(instruction, stage))
      continue;
    try {
      const std::vector<int> &split = splitValues(instruction);
      if (split.empty())
        continue;
      const std::vector<int64_t> &local = plan.values[split.front()].shape;
      std::vector<int64_t> global = local;
      if (!local.empty() && instruction.attrs.has("global_shape"))
        global = instruction.attrs.getInts("global_shape");
      if (global.size() != local.size())
        throw RuntimeError("'global_shape' " + shapeText(global) +
                           " does not have the rank of " + shapeText(local));
      std::vector<int64_t> block;
      std::vector<int64_t> offsets = shardOffsets(
          plan, rank, global, instruction.attrs.getInts("split_dims"), block);
      if (block != local)
        throw RuntimeError("rank " + std::to_string(rank) + " holds " +
                           shapeText(local) + ", not its block " +
                           shapeText(block) + " of " + shapeText(global));
      attrs.back().set("shard_offsets", offsets);
    } catch (const RuntimeError &error) {
      throw RuntimeError(plan.source + ": instructions[" + std::to_string(i) +
                         "] (" + instruction.op + "): " + error.what());
    }
  }
  return attrs;
}

} // namespace zerosbp::runtime
