//===- ZeroMemory.h - ZeRO-DP model-state memory per rank -------*- C++ -*-===//
//
// The memory model of the ZeRO paper (Rajbhandari et al., SC'20,
// arXiv:1910.02054, section 5) and docs/design.md#model-state-memory: the
// bytes of model states (fp16 parameters and gradients, K bytes of optimizer
// state per parameter) one data-parallel rank holds at each ZeRO stage.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_EXAMPLES_MEMORY_TABLE_ZEROMEMORY_H
#define ZEROSBP_EXAMPLES_MEMORY_TABLE_ZEROMEMORY_H

#include "passes/common/TrainingEnums.h"

#include <cstdint>

namespace zerosbp::examples::memory {

using zerosbp::ZeroStage;

/// Optimizer-state bytes per parameter for mixed-precision Adam: fp32
/// master copy, momentum and variance.
inline constexpr int64_t kMixedPrecisionAdamK = 12;

/// Per parameter, a rank holds `replicated` bytes for every parameter of the
/// model and `partitioned` bytes for each parameter of its own 1/N shard.
struct BytesPerParameter {
  int64_t replicated;
  int64_t partitioned;
};

BytesPerParameter bytesPerParameter(ZeroStage stage, int64_t optimizerBytesK);

/// The paper's formula, replicated * psi + partitioned * psi / N: (2+2+K)psi,
/// 4psi + K psi/N, 2psi + (2+K)psi/N, (2+2+K)psi/N for stages 0 to 3.
double modelStateBytes(ZeroStage stage, double numParams, int64_t dataParallel,
                       int64_t optimizerBytesK);

/// Elements of one rank's shard when numel elements are split into equal,
/// padded shards: ceil(numel / ranks).
int64_t shardSize(int64_t numel, int64_t ranks);

/// The exact bytes a rank holds when partitioned buffers are padded to equal
/// shards (docs/design.md#how-a-tensor-is-partitioned). Equals
/// modelStateBytes when dataParallel divides numParams.
int64_t paddedModelStateBytes(ZeroStage stage, int64_t numParams,
                              int64_t dataParallel, int64_t optimizerBytesK);

/// The largest parameter count whose model states fit in deviceBytes per
/// rank: the formula solved for psi. Model parallelism splits every model
/// state a further modelParallel ways, as in the paper's Table 2.
double maxModelParams(ZeroStage stage, double deviceBytes, int64_t dataParallel,
                      int64_t optimizerBytesK, int64_t modelParallel = 1);

} // namespace zerosbp::examples::memory

#endif // ZEROSBP_EXAMPLES_MEMORY_TABLE_ZEROMEMORY_H
