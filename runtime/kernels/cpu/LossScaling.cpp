//===- LossScaling.cpp - overflow count, select and the loss scaler -------===//
//
// The dynamic loss scaler is DeepSpeed's DynamicLossScaler (without
// consecutive hysteresis): on overflow, the scale halves (not below
// min_scale) once the hysteresis is down to 1, else the hysteresis drops by
// one; the clean-step count restarts. On a clean step the count grows, and
// when it reaches a multiple of `window` the scale doubles and the
// hysteresis is restored.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/LossScalingChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

#include <cmath>

namespace zerosbp::runtime::cpu {

namespace {
/// The number of elements whose exponent bits (`mask`) are all set.
template <typename Bits>
int64_t countNonfinite(const void *data, int64_t numel, Bits mask) {
  const Bits *bits = static_cast<const Bits *>(data);
  int64_t count = 0;
  for (int64_t i = 0; i < numel; ++i)
    count += (bits[i] & mask) == mask;
  return count;
}
} // namespace

void nonfiniteCountKernel(const AttrMap &, const Tensors &operands,
                          const Tensors &results) {
  checks::checkNonfiniteCount("nn.nonfinite_count", operands, results);
  const TensorRef &input = operands[0];
  int64_t numel = input.numel();
  int64_t count = 0;
  switch (input.dtype) {
  case DType::F32:
    count = countNonfinite<uint32_t>(input.data, numel, 0x7f800000u);
    break;
  case DType::F16:
    count = countNonfinite<uint16_t>(input.data, numel, 0x7c00u);
    break;
  case DType::BF16:
    count = countNonfinite<uint16_t>(input.data, numel, 0x7f80u);
    break;
  default:
    count = countNonfinite<uint64_t>(input.data, numel, 0x7ff0000000000000u);
    break;
  }
  writeScalar(results[0], static_cast<float>(count));
}

void selectKernel(const AttrMap &, const Tensors &operands,
                  const Tensors &results) {
  checks::checkSelect("nn.select", operands, results);
  const TensorRef &onTrue = operands[1], &onFalse = operands[2];
  const TensorRef &result = results[0];
  const TensorRef &chosen = readScalar(operands[0]) != 0.0f ? onTrue : onFalse;
  if (chosen.dtype == result.dtype) {
    if (chosen.data != result.data)
      std::memmove(result.data, chosen.data, chosen.bytes());
    return;
  }
  forEachChunk<1, 1>(
      chosen.numel(), {&chosen}, {&result},
      [](const float *const *in, float *const *out, int64_t count) {
        std::memcpy(out[0], in[0], static_cast<size_t>(count) * sizeof(float));
      });
}

void lossScaleUpdateKernel(const AttrMap &attrs, const Tensors &operands,
                           const Tensors &results) {
  checks::LossScaleConfig config = checks::checkLossScaleUpdate(
      "nn.loss_scale_update", attrs, operands, results);
  int64_t window = config.window, hysteresis = config.hysteresis;
  double minScale = config.minScale;

  // All operands are read before any result is written: the results are
  // usually the operands' own bytes.
  double scale = readScalar(operands[0]);
  double goodSteps = readScalar(operands[1]);
  double hysteresisLeft = readScalar(operands[2]);
  bool overflow = readScalar(operands[3]) != 0.0f;
  if (overflow) {
    if (hysteresis == 1 || hysteresisLeft <= 1.0)
      scale = std::max(scale / 2.0, minScale);
    else
      hysteresisLeft -= 1.0;
    goodSteps = 0.0;
  } else {
    goodSteps += 1.0;
    if (std::fmod(goodSteps, static_cast<double>(window)) == 0.0) {
      scale *= 2.0;
      hysteresisLeft = static_cast<double>(hysteresis);
    }
  }
  writeScalar(results[0], static_cast<float>(scale));
  writeScalar(results[1], static_cast<float>(goodSteps));
  writeScalar(results[2], static_cast<float>(hysteresisLeft));
}

} // namespace zerosbp::runtime::cpu
