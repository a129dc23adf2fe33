//===- Distribution.h - whole tensors <-> rank shards ----------*- C++ -*-===//
//
// Moves values between a model tensor (PyTorch shape, row-major) and the
// part one rank holds: its block of the global shape (`shards`). An input's
// global tensor is its model tensor; a variable's may be a ZeRO partition of
// it, flattened (after a model split, part by part) and zero-padded, whose
// elements ShardRuns.h maps. Elements travel as double, which holds every
// f32, f16, bf16 and i32 value and integers up to 2^53 exactly.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_DISTRIBUTION_H
#define ZEROSBP_RUNTIME_EXEC_DISTRIBUTION_H

#include "runtime/core/Tensor.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <vector>

namespace zerosbp::runtime {

/// `rank`'s local elements of `tensor`, whose global tensor is the model
/// tensor (an input), given the whole model tensor (`model.size()` at most
/// the global element count; the rest is padding).
std::vector<double> shardOf(const DistributedTensor &tensor, int rank,
                            const std::vector<double> &model);

/// Writes `local` (rank `rank`'s elements) into `global` (the global
/// element count), the inverse of shardOf.
void placeShard(const DistributedTensor &tensor, int rank,
                const std::vector<double> &local, std::vector<double> &global);

/// `rank`'s local elements of `variable`, given the whole model tensor;
/// padding is zero.
std::vector<double> shardOf(const PlanVariable &variable, int rank,
                            const std::vector<double> &model);

/// Writes the model elements of `local` (rank `rank`'s elements) into
/// `model` (at least the model's element count; the global count holds
/// it), the inverse of shardOf; padding is left out.
void placeShard(const PlanVariable &variable, int rank,
                const std::vector<double> &local, std::vector<double> &model);

/// The initial model tensor of a variable from its `init` and `init_scale`:
/// the same on every rank, from `seed` and the variable's name.
std::vector<double> initialValues(const PlanVariable &variable, uint64_t seed);

/// Elements of a tensor in its dtype <-> double.
void storeElements(const TensorRef &tensor, const std::vector<double> &values);
std::vector<double> loadElements(const TensorRef &tensor);

int64_t numElements(const std::vector<int64_t> &shape);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_DISTRIBUTION_H
