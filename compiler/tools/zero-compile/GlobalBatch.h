//===- GlobalBatch.h - the GPT-2 graph's batch from the flags ---*- C++ -*-===//
//
// zero-compile's `--batch-size` is the global batch on its own command line
// and Megatron's per-GPU batch on a Megatron-DeepSpeed one (the DeepSpeed
// tutorial's `--batch-size 1 --deepspeed_config ds_zero_stage_1.config`).
// Either way the batch must agree with the config's `train_batch_size`, as
// DeepSpeed's batch assertion demands.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_TOOLS_ZERO_COMPILE_GLOBALBATCH_H
#define ZEROSBP_COMPILER_TOOLS_ZERO_COMPILE_GLOBALBATCH_H

#include "compiler/config/ZeroConfig.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zerosbp {

struct BatchFlags {
  /// `--batch-size`; nullopt when not given.
  std::optional<int64_t> batchSize;
  /// True on a Megatron-DeepSpeed command line: `--batch-size` counts
  /// sequences per rank and micro-batch (Megatron's meaning).
  bool perRank = false;
  /// Where the config came from, for messages ("ds.config", "--pipeline").
  std::string configSource;
};

/// Sequences in one training step of the graph (the whole step's batch,
/// all micro-batches and ranks), or an error naming the flag and the key
/// that disagree. Without `--batch-size` the config's batch sizes decide,
/// and without those one sequence per rank and micro-batch.
llvm::Expected<int64_t> resolveGlobalBatch(const BatchFlags &flags,
                                           const ZeroConfig &config);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_TOOLS_ZERO_COMPILE_GLOBALBATCH_H
