//===- GlobalBatch.cpp - the GPT-2 graph's batch from the flags -----------===//

#include "compiler/tools/zero-compile/GlobalBatch.h"

#include "llvm/Support/FormatVariadic.h"

using namespace zerosbp;

static llvm::Error batchError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<int64_t> zerosbp::resolveGlobalBatch(const BatchFlags &flags,
                                                    const ZeroConfig &config) {
  int64_t steps = config.gradientAccumulationSteps;
  // Batch sizes count the data-parallel ranks.
  int64_t world = config.dataParallelSize();
  if (!flags.batchSize)
    // A config's batch sizes are resolved and checked already.
    return config.trainBatchSize ? config.trainBatchSize : steps * world;
  // A value the user gave is checked, 0 included.
  if (*flags.batchSize < 1)
    return batchError(llvm::formatv("--batch-size must be positive, got {0}",
                                    *flags.batchSize));

  int64_t batch = *flags.batchSize;
  if (flags.perRank && (__builtin_mul_overflow(batch, steps, &batch) ||
                        __builtin_mul_overflow(batch, world, &batch)))
    return batchError(llvm::formatv(
        "--batch-size {0} * gradient_accumulation_steps {1} * {2} ranks "
        "overflows",
        *flags.batchSize, steps, world));
  if (!config.trainBatchSize || config.trainBatchSize == batch) {
    // Every rank takes an equal share of every micro-batch.
    if (batch % (steps * world))
      return batchError(
          llvm::formatv("--batch-size {0} does not split evenly into "
                        "gradient_accumulation_steps {1} * {2} ranks",
                        batch, steps, world));
    return batch;
  }
  // DeepSpeed's _batch_assertion: train_batch_size = micro batch per GPU *
  // gradient_accumulation_steps * world size.
  if (flags.perRank)
    return batchError(llvm::formatv(
        "{0}: train_batch_size {1} != --batch-size {2} (per GPU) * "
        "gradient_accumulation_steps {3} * {4} ranks = {5}",
        flags.configSource, config.trainBatchSize, *flags.batchSize, steps,
        world, batch));
  return batchError(llvm::formatv(
      "{0}: train_batch_size {1} != --batch-size {2} (the global batch; on "
      "a --deepspeed_config command line it is per GPU)",
      flags.configSource, config.trainBatchSize, batch));
}
