//===- DeepSpeedConfig.h - ZeroConfig from a DeepSpeed JSON -----*- C++ -*-===//
//
// Reads a DeepSpeed config (https://www.deepspeed.ai/docs/config-json/) the
// way DeepSpeed would, but strictly: an unknown key anywhere, a value of the
// wrong type, or one out of range is an error, and a feature ZeroSBP does
// not implement is refused rather than ignored.
//
// Decisions:
//  - Integers may be written as integral numbers (5e8), as DeepSpeed allows;
//    booleans must be JSON booleans.
//  - "auto" (a placeholder the Hugging Face Trainer replaces before DeepSpeed
//    reads the config) is refused with a message saying so: its values come
//    from the model and the Trainer's arguments, which are not here.
//  - optimizer.type is case-insensitive: Adam, AdamW, SGD. As in DeepSpeed,
//    "Adam" with params.adam_w_mode (default true) means AdamW (decoupled
//    weight decay); adam_w_mode false gives torch.optim.Adam (L2 added to
//    the gradient). adam_w_mode false with "AdamW" is refused as
//    contradictory (DeepSpeed would silently use AdamW). torch_adam only
//    picks DeepSpeed's implementation, so it changes nothing here except
//    one default: torch.optim.AdamW's weight_decay is 0.01, FusedAdam's 0.
//    max_grad_norm is refused as DeepSpeed refuses it (use
//    gradient_clipping). SGD takes lr only.
//  - zero_optimization.offload_optimizer / offload_param: only device "none"
//    (or null) is accepted; "cpu" and "nvme" are refused.
//  - Keys DeepSpeed knows whose non-default values ZeroSBP does not
//    implement (allgather_partitions, round_robin_gradients, ZeRO++'s
//    quantized gradients, auto_cast, ...) are accepted only at DeepSpeed's
//    default; zero_quantized_weights is qwZ (ConfigOptions.def).
//    scheduler, activation_checkpointing and amp are refused outright.
//  - steps_per_print, wall_clock_breakdown and zero_allow_untested_optimizer
//    only affect DeepSpeed's logging and its optimizer whitelist; they are
//    type-checked and have no effect.
//  - Neither batch size given: both stay 0 and the captured graph decides
//    (DeepSpeed would stop). Otherwise DeepSpeed's resolution applies.
//  - A config has no shard_min_size (0: every parameter is partitioned) and
//    gets shard_restore_level 1 (see ZeroConfig).
//  - Repeated keys are refused (as DeepSpeed's loader does).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_DEEPSPEEDCONFIG_H
#define ZEROSBP_COMPILER_CONFIG_DEEPSPEEDCONFIG_H

#include "compiler/config/ConfigLayer.h"
#include "compiler/config/ZeroConfig.h"

namespace zerosbp {

/// The fields the DeepSpeed JSON config `json` states, a Config layer whose
/// messages `source` prefixes (the file, or "" for none). Its syntax, keys,
/// types and refusals are checked here; its ranges and batch sizes by
/// resolveConfig.
llvm::Expected<ConfigLayer> readDeepSpeedConfig(llvm::StringRef json,
                                                llvm::StringRef source);

/// Resolves the DeepSpeed JSON config `json` alone for `world` ranks, of which
/// `modelParallelSize` share each model part and `pipelineParallelSize`
/// stages cut the layers (its batch sizes count the data-parallel ranks,
/// world / (modelParallelSize * pipelineParallelSize), as DeepSpeed's do).
/// Errors are one line and name the key path and the bad value, e.g.
/// `zero_optimization.stage: expected an integer in [0, 3], got 4`.
llvm::Expected<ZeroConfig>
parseDeepSpeedConfig(llvm::StringRef json, int64_t world,
                     int64_t modelParallelSize = 1,
                     int64_t pipelineParallelSize = 1);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_DEEPSPEEDCONFIG_H
