//===- TrainingEnums.h - the optimizer and precision kinds ------*- C++ -*-===//
//
// The enums of zero-optimizer's `optimizer` and zero-amp's `precision`
// options. The config (compiler/config) fills them in; they live here so
// that the passes need nothing from the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_COMMON_TRAININGENUMS_H
#define ZEROSBP_PASSES_COMMON_TRAININGENUMS_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace zerosbp {

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
