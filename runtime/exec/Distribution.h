//===- Distribution.h - whole tensors <-> rank shards ----------*- C++ -*-===//
//
// Moves values between a model tensor (PyTorch shape, row-major) and the
// part one rank holds: its block of the global shape (`shards`), where the
// global tensor of a ZeRO-partitioned variable is the model tensor flattened
// and zero-padded at the end. Elements travel as double, which holds every
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

/// `rank`'s local elements of `tensor`, given the whole model tensor
/// (`model.size()` at most the global element count; the rest is padding).
std::vector<double> shardOf(const DistributedTensor &tensor, int rank,
                            const std::vector<double> &model);

/// Writes `local` (rank `rank`'s elements) into `global` (the global
/// element count), the inverse of shardOf.
void placeShard(const DistributedTensor &tensor, int rank,
                const std::vector<double> &local, std::vector<double> &global);

/// The initial model tensor of a variable from its `init` and `init_scale`:
/// the same on every rank, from `seed` and the variable's name.
std::vector<double> initialValues(const PlanVariable &variable, uint64_t seed);

/// Elements of a tensor in its dtype <-> double.
void storeElements(const TensorRef &tensor, const std::vector<double> &values);
std::vector<double> loadElements(const TensorRef &tensor);

int64_t numElements(const std::vector<int64_t> &shape);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_DISTRIBUTION_H
