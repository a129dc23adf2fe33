//===- test_plans.h - small plans and shard contents for the tests -*- C++ -*-//
//
// Plans built in memory with only what checkpoints read (world, stage,
// hierarchy, configuration, variables and their shards), the same five
// variables laid out three ways, three others laid out five ways (two of
// them model-split flat partitions), and the brute-force map from a
// shard's local elements to model elements that the tests check runs
// against.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_CHECKPOINT_TEST_PLANS_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_CHECKPOINT_TEST_PLANS_H

#include "runtime/core/DType.h"
#include "runtime/exec/ShardRuns.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::testing {

using runtime::DimRange;
using runtime::DType;
using runtime::Plan;
using runtime::PlanVariable;
using runtime::Role;
using runtime::ShardLayout;

inline int64_t product(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

/// The model element of each local element of the shard `ranges`, in local
/// (row-major over the shard's extents) order; -1 for padding. Written from
/// the definitions, without runs.
inline std::vector<int64_t>
bruteForceModelIndices(const ShardLayout &layout,
                       const std::vector<DimRange> &ranges) {
  std::vector<int64_t> model;
  int64_t modelCount = product(layout.modelShape);
  if (layout.modelSplit) {
    // Row t: the model's part t along the split dim, flattened; columns
    // past it are padding.
    size_t dim = static_cast<size_t>(layout.modelSplit->dim);
    std::vector<int64_t> part = layout.modelShape;
    part[dim] /= layout.modelSplit->parts;
    for (int64_t t = ranges[0].first; t < ranges[0].second; ++t)
      for (int64_t c = ranges[1].first; c < ranges[1].second; ++c) {
        if (c >= product(part)) {
          model.push_back(-1);
          continue;
        }
        int64_t rest = c, index = 0, stride = 1;
        for (size_t d = part.size(); d-- > 0;) {
          int64_t coordinate = rest % part[d] + (d == dim ? t * part[d] : 0);
          rest /= part[d];
          index += coordinate * stride;
          stride *= layout.modelShape[d];
        }
        model.push_back(index);
      }
    return model;
  }
  if (layout.flat) {
    for (int64_t i = ranges[0].first; i < ranges[0].second; ++i)
      model.push_back(i < modelCount ? i : -1);
    return model;
  }
  size_t rank = ranges.size();
  std::vector<int64_t> extents;
  for (const DimRange &range : ranges)
    extents.push_back(range.second - range.first);
  int64_t count = product(extents);
  for (int64_t local = 0; local < count; ++local) {
    // Unravel `local` over the extents, offset by the box's start, and
    // ravel over the model shape.
    int64_t rest = local, index = 0, stride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t coordinate = ranges[d].first + rest % extents[d];
      rest /= extents[d];
      index += coordinate * stride;
      stride *= layout.modelShape[d];
    }
    model.push_back(index);
  }
  return model;
}

using Shards = std::vector<std::vector<DimRange>>;

inline std::vector<int64_t> extentsOf(const std::vector<DimRange> &ranges) {
  std::vector<int64_t> extents;
  for (const DimRange &range : ranges)
    extents.push_back(range.second - range.first);
  return extents;
}

/// A variable that is a box of its model tensor on every rank.
inline PlanVariable boxVariable(const std::string &name, Role role, DType dtype,
                                std::vector<int64_t> shape,
                                std::vector<std::string> sbp, Shards shards) {
  PlanVariable variable;
  variable.name = name;
  variable.role = role;
  variable.dtype = dtype;
  variable.globalShape = std::move(shape);
  variable.localShape = extentsOf(shards[0]);
  variable.sbp = std::move(sbp);
  variable.shards = std::move(shards);
  return variable;
}

/// A ZeRO partition: the model tensor flattened, padded to `padded`
/// elements, and split evenly over `world` ranks.
inline PlanVariable flatVariable(const std::string &name, Role role,
                                 DType dtype, std::vector<int64_t> modelShape,
                                 int64_t padded, int world) {
  PlanVariable variable;
  variable.name = name;
  variable.role = role;
  variable.dtype = dtype;
  variable.globalShape = {padded};
  variable.logicalShape = std::move(modelShape);
  int64_t chunk = padded / world;
  variable.localShape = {chunk};
  variable.sbp = {"S(0)"};
  for (int rank = 0; rank < world; ++rank)
    variable.shards.push_back({{rank * chunk, (rank + 1) * chunk}});
  return variable;
}

/// A ZeRO partition of a tensor-parallel variable: the model tensor split
/// along `dim` over hierarchy axis `modelAxis`, each part flattened and
/// padded to `padded`, a row per part (S(0) on the model axis) and each
/// row's columns split over the other axes (S(1)). The shards follow from
/// the SBP.
inline PlanVariable modelSplitVariable(const std::string &name, Role role,
                                       DType dtype,
                                       std::vector<int64_t> modelShape, int dim,
                                       std::vector<int64_t> hierarchy,
                                       int modelAxis, int64_t padded) {
  PlanVariable variable;
  variable.name = name;
  variable.role = role;
  variable.dtype = dtype;
  variable.globalShape = {hierarchy[modelAxis], padded};
  variable.logicalShape = std::move(modelShape);
  variable.modelSplit = runtime::ModelSplit{modelAxis, dim};
  for (int axis = 0; axis < static_cast<int>(hierarchy.size()); ++axis) {
    variable.sbp.push_back(axis == modelAxis ? "S(0)" : "S(1)");
    variable.splitDims.push_back(axis == modelAxis ? 0 : 1);
  }
  variable.hierarchy = std::move(hierarchy);
  Shards shards;
  for (int rank = 0; rank < product(variable.hierarchy); ++rank)
    shards.push_back(variable.shard(rank));
  variable.shards = std::move(shards);
  variable.localShape = extentsOf(variable.shards[0]);
  return variable;
}

inline Plan emptyPlan(int world, std::optional<int> stage) {
  Plan plan;
  plan.source = "test.zplan";
  plan.function = "gpt";
  plan.stage = stage;
  plan.world = world;
  plan.device = "cpu";
  for (int rank = 0; rank < world; ++rank)
    plan.ranks.push_back(rank);
  plan.hierarchy = {world};
  plan.configJson =
      R"({"optimizer": {"type": "Adam", "params": {"lr": 0.001}}})";
  return plan;
}

/// Five variables over two ranks: a replicated parameter (copied from its
/// fp32 master), two flat partitions (one padded), a bf16 parameter split
/// by columns and an f64 state split by rows.
inline Plan planOnTwoRanks() {
  Plan plan = emptyPlan(2, 3);
  Shards whole = {{{0, 4}, {0, 6}}, {{0, 4}, {0, 6}}};
  plan.variables.push_back(
      boxVariable("w", Role::Param, DType::F32, {4, 6}, {"B"}, whole));
  plan.variables.back().copyOf = "w.master";
  plan.variables.push_back(
      flatVariable("w.master", Role::Master, DType::F32, {4, 6}, 24, 2));
  plan.variables.push_back(
      flatVariable("w.exp_avg", Role::OptState, DType::F32, {5, 3}, 16, 2));
  plan.variables.push_back(boxVariable("b", Role::Param, DType::BF16, {3, 4},
                                       {"S(1)"},
                                       {{{0, 3}, {0, 2}}, {{0, 3}, {2, 4}}}));
  plan.variables.push_back(boxVariable("e", Role::OptState, DType::F64, {7},
                                       {"S(0)"}, {{{0, 4}}, {{4, 7}}}));
  return plan;
}

/// The same variables over three ranks, every one laid out differently.
inline Plan planOnThreeRanks() {
  Plan plan = emptyPlan(3, 1);
  plan.variables.push_back(
      boxVariable("w", Role::Param, DType::F32, {4, 6}, {"S(0)"},
                  {{{0, 2}, {0, 6}}, {{2, 3}, {0, 6}}, {{3, 4}, {0, 6}}}));
  plan.variables.back().copyOf = "w.master";
  plan.variables.push_back(
      flatVariable("w.master", Role::Master, DType::F32, {4, 6}, 24, 3));
  plan.variables.push_back(
      flatVariable("w.exp_avg", Role::OptState, DType::F32, {5, 3}, 18, 3));
  plan.variables.push_back(
      boxVariable("b", Role::Param, DType::BF16, {3, 4}, {"S(0)"},
                  {{{0, 1}, {0, 4}}, {{1, 2}, {0, 4}}, {{2, 3}, {0, 4}}}));
  plan.variables.push_back(boxVariable("e", Role::OptState, DType::F64, {7},
                                       {"B"}, {{{0, 7}}, {{0, 7}}, {{0, 7}}}));
  return plan;
}

/// The same variables on one rank, whole (flat ones padded by one element).
inline Plan planOnOneRank() {
  Plan plan = emptyPlan(1, 0);
  plan.variables.push_back(boxVariable("w", Role::Param, DType::F32, {4, 6},
                                       {"B"}, {{{0, 4}, {0, 6}}}));
  plan.variables.back().copyOf = "w.master";
  plan.variables.push_back(
      flatVariable("w.master", Role::Master, DType::F32, {4, 6}, 25, 1));
  plan.variables.push_back(
      flatVariable("w.exp_avg", Role::OptState, DType::F32, {5, 3}, 15, 1));
  plan.variables.push_back(boxVariable("b", Role::Param, DType::BF16, {3, 4},
                                       {"B"}, {{{0, 3}, {0, 4}}}));
  plan.variables.push_back(
      boxVariable("e", Role::OptState, DType::F64, {7}, {"B"}, {{{0, 7}}}));
  return plan;
}

/// Three variables of a tensor-parallel ZeRO run on a [2, 2] hierarchy, as
/// model-split flat partitions: w (4x8, split by columns on model axis 1,
/// parts of 16 padded to 18), v (8x4, by rows, parts of 16, no padding)
/// and u (2x4x3, along dim 1 on axis 0, parts of 12 padded to 14).
inline Plan planOfModelSplits() {
  Plan plan = emptyPlan(4, 2);
  plan.hierarchy = {2, 2};
  plan.variables.push_back(modelSplitVariable(
      "w", Role::Param, DType::F32, {4, 8}, 1, plan.hierarchy, 1, 18));
  plan.variables.push_back(modelSplitVariable(
      "v", Role::OptState, DType::BF16, {8, 4}, 0, plan.hierarchy, 1, 16));
  plan.variables.push_back(modelSplitVariable(
      "u", Role::OptState, DType::F64, {2, 4, 3}, 1, plan.hierarchy, 0, 14));
  return plan;
}

/// The same split in four parts on a [1, 4] hierarchy: a row per rank.
inline Plan planOfFourModelParts() {
  Plan plan = emptyPlan(4, 3);
  plan.hierarchy = {1, 4};
  plan.variables.push_back(modelSplitVariable("w", Role::Param, DType::F32,
                                              {4, 8}, 1, plan.hierarchy, 1, 9));
  plan.variables.push_back(modelSplitVariable("v", Role::OptState, DType::BF16,
                                              {8, 4}, 0, plan.hierarchy, 1, 8));
  plan.variables.push_back(modelSplitVariable(
      "u", Role::OptState, DType::F64, {2, 4, 3}, 1, plan.hierarchy, 1, 7));
  return plan;
}

/// The same variables as plain flat ZeRO partitions on four ranks.
inline Plan planOfFlatPartitions() {
  Plan plan = emptyPlan(4, 3);
  plan.variables.push_back(
      flatVariable("w", Role::Param, DType::F32, {4, 8}, 32, 4));
  plan.variables.push_back(
      flatVariable("v", Role::OptState, DType::BF16, {8, 4}, 36, 4));
  plan.variables.push_back(
      flatVariable("u", Role::OptState, DType::F64, {2, 4, 3}, 28, 4));
  return plan;
}

/// The same variables whole on each of four ranks (B).
inline Plan planOfWholeTensors() {
  Plan plan = emptyPlan(4, 0);
  auto whole = [](std::vector<int64_t> shape) {
    std::vector<DimRange> box;
    for (int64_t dim : shape)
      box.emplace_back(0, dim);
    return Shards(4, box);
  };
  plan.variables.push_back(
      boxVariable("w", Role::Param, DType::F32, {4, 8}, {"B"}, whole({4, 8})));
  plan.variables.push_back(boxVariable("v", Role::OptState, DType::BF16, {8, 4},
                                       {"B"}, whole({8, 4})));
  plan.variables.push_back(boxVariable("u", Role::OptState, DType::F64,
                                       {2, 4, 3}, {"B"}, whole({2, 4, 3})));
  return plan;
}

/// The same variables as boxes split by dim 1 over the model axis of a
/// [2, 2] hierarchy ([B, S(1)], tensor parallelism at stage 0).
inline Plan planOfColumnBoxes() {
  Plan plan = emptyPlan(4, 0);
  plan.hierarchy = {2, 2};
  auto columns = [](std::vector<int64_t> shape) {
    Shards shards;
    for (int rank = 0; rank < 4; ++rank) {
      std::vector<DimRange> box;
      for (int64_t dim : shape)
        box.emplace_back(0, dim);
      int64_t half = shape[1] / 2;
      box[1] = {rank % 2 * half, (rank % 2 + 1) * half};
      shards.push_back(box);
    }
    return shards;
  };
  plan.variables.push_back(boxVariable("w", Role::Param, DType::F32, {4, 8},
                                       {"B", "S(1)"}, columns({4, 8})));
  plan.variables.push_back(boxVariable("v", Role::OptState, DType::BF16, {8, 4},
                                       {"B", "S(1)"}, columns({8, 4})));
  plan.variables.push_back(boxVariable("u", Role::OptState, DType::F64,
                                       {2, 4, 3}, {"B", "S(1)"},
                                       columns({2, 4, 3})));
  return plan;
}

/// Byte `k` of model element `element` of the variable named `name`: every
/// element of every variable distinct, in every byte.
inline unsigned char modelByte(const std::string &name, int64_t element,
                               size_t k) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : name)
    hash = (hash ^ c) * 16777619u;
  return static_cast<unsigned char>((hash >> 8) + element * 7 + k * 61 + 1);
}

/// What rank `rank` holds of `variable`, byte for byte: the model's bytes
/// where its shard has model elements, `pad` in padding.
inline std::vector<unsigned char> shardBytes(const PlanVariable &variable,
                                             int rank, unsigned char pad) {
  size_t elementBytes = runtime::dtypeBytes(variable.dtype);
  std::vector<int64_t> model = bruteForceModelIndices(
      runtime::layoutOf(variable), variable.shards[rank]);
  std::vector<unsigned char> bytes;
  for (int64_t element : model)
    for (size_t k = 0; k < elementBytes; ++k)
      bytes.push_back(element < 0 ? pad : modelByte(variable.name, element, k));
  return bytes;
}

} // namespace zerosbp::testing

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_CHECKPOINT_TEST_PLANS_H
