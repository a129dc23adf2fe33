//===- LossScalingChecks.h - the checks of the loss scaler's ops -*- C++
//-*-===//
//
// nonfinite_count, select and loss_scale_update: the overflow check and the
// dynamic loss scaler of mixed-precision training.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_LOSSSCALINGCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_LOSSSCALINGCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// nn.nonfinite_count: a float input and a float scalar result.
void checkNonfiniteCount(std::string_view op, const Tensors &operands,
                         const Tensors &results);

/// nn.select: a float scalar predicate, float on_true and on_false of one
/// shape, and a float result of it.
void checkSelect(std::string_view op, const Tensors &operands,
                 const Tensors &results);

/// The attributes of a checked nn.loss_scale_update. Plain data: the CUDA
/// kernel takes it as a launch argument.
struct LossScaleConfig {
  int64_t window;
  int64_t hysteresis;
  double minScale;
};
/// Four float scalar operands and three float scalar results.
LossScaleConfig checkLossScaleUpdate(std::string_view op, const AttrMap &attrs,
                                     const Tensors &operands,
                                     const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_LOSSSCALINGCHECKS_H
