//===- TrainingEnums.cpp - the stage, optimizer and precision kinds -------===//

#include "passes/common/TrainingEnums.h"

#include "llvm/Support/ErrorHandling.h"

using namespace zerosbp;

std::optional<ZeroStage> zerosbp::symbolizeZeroStage(int64_t number) {
  if (number < stageNumber(ZeroStage::DataParallel) ||
      number > stageNumber(ZeroStage::Parameters))
    return std::nullopt;
  return static_cast<ZeroStage>(number);
}

llvm::StringRef zerosbp::stringifyOptimizerKind(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::SGD:
    return "sgd";
  case OptimizerKind::Adam:
    return "adam";
  case OptimizerKind::AdamW:
    return "adamw";
  }
  llvm_unreachable("unknown OptimizerKind");
}

std::optional<OptimizerKind>
zerosbp::symbolizeOptimizerKind(llvm::StringRef name) {
  for (OptimizerKind kind :
       {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::AdamW})
    if (name.equals_insensitive(stringifyOptimizerKind(kind)))
      return kind;
  return std::nullopt;
}

llvm::StringRef zerosbp::stringifyPrecision(Precision precision) {
  switch (precision) {
  case Precision::FP32:
    return "fp32";
  case Precision::FP16:
    return "fp16";
  case Precision::BF16:
    return "bf16";
  }
  llvm_unreachable("unknown Precision");
}

std::optional<Precision> zerosbp::symbolizePrecision(llvm::StringRef name) {
  for (Precision precision :
       {Precision::FP32, Precision::FP16, Precision::BF16})
    if (name.equals_insensitive(stringifyPrecision(precision)))
      return precision;
  return std::nullopt;
}

llvm::StringRef zerosbp::stringifyOffloadDevice(OffloadDevice device) {
  switch (device) {
  case OffloadDevice::None:
    return "none";
  case OffloadDevice::Cpu:
    return "cpu";
  case OffloadDevice::Nvme:
    return "nvme";
  }
  llvm_unreachable("unknown OffloadDevice");
}

std::optional<OffloadDevice>
zerosbp::symbolizeOffloadDevice(llvm::StringRef name) {
  for (OffloadDevice device :
       {OffloadDevice::None, OffloadDevice::Cpu, OffloadDevice::Nvme})
    if (name.equals_insensitive(stringifyOffloadDevice(device)))
      return device;
  return std::nullopt;
}
