//===- TrainingEnums.h - the stage, optimizer and precision kinds -*- C++
//-*-===//
//
// The enums of the ZeRO stage, zero-optimizer's `optimizer` and zero-amp's
// `precision` options. The config (compiler/config) fills them in; they
// live here so that the passes need nothing from the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_COMMON_TRAININGENUMS_H
#define ZEROSBP_PASSES_COMMON_TRAININGENUMS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace zerosbp {

/// What ZeRO partitions over the data-parallel ranks
/// (docs/design.md#model-state-memory): stage 0 is plain data
/// parallelism; each later stage also partitions one more kind of state:
/// the optimizer states (P_os), the gradients (P_os+g), the parameters
/// (P_os+g+p). The values are DeepSpeed's `zero_optimization.stage`.
enum class ZeroStage : int64_t {
  DataParallel = 0,
  OptimizerStates = 1,
  Gradients = 2,
  Parameters = 3,
};

/// 0 to 3, as DeepSpeed numbers the stages.
inline int64_t stageNumber(ZeroStage stage) {
  return static_cast<int64_t>(stage);
}
/// The stage numbered `number`, if it is 0 to 3.
std::optional<ZeroStage> symbolizeZeroStage(int64_t number);

/// The update rule appended by `zero-optimizer`, with torch.optim's
/// definitions (docs/design.md#numerics).
enum class OptimizerKind { SGD, Adam, AdamW };

/// Compute precision. FP16 and BF16 train with fp32 master weights
/// (`zero-amp`); only FP16 uses loss scaling, as in DeepSpeed.
enum class Precision { FP32, FP16, BF16 };

/// Where the optimizer states (and fp32 masters) live: the device's memory,
/// host memory (ZeRO-Offload) or files on NVMe (ZeRO-Infinity); DeepSpeed's
/// `offload_optimizer.device` (docs/design.md#offload).
enum class OffloadDevice { None, Cpu, Nvme };

/// "sgd", "adam", "adamw".
llvm::StringRef stringifyOptimizerKind(OptimizerKind kind);
/// Case-insensitive inverse of stringifyOptimizerKind.
std::optional<OptimizerKind> symbolizeOptimizerKind(llvm::StringRef name);
/// "fp32", "fp16", "bf16".
llvm::StringRef stringifyPrecision(Precision precision);
/// Case-insensitive inverse of stringifyPrecision.
std::optional<Precision> symbolizePrecision(llvm::StringRef name);
/// "none", "cpu", "nvme".
llvm::StringRef stringifyOffloadDevice(OffloadDevice device);
/// Case-insensitive inverse of stringifyOffloadDevice.
std::optional<OffloadDevice> symbolizeOffloadDevice(llvm::StringRef name);

} // namespace zerosbp

#endif // ZEROSBP_PASSES_COMMON_TRAININGENUMS_H
