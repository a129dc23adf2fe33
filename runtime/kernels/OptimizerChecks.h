//===- OptimizerChecks.h - the checks of sgd, adam and clipping -*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_KERNELS_OPTIMIZERCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_OPTIMIZERCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// nn.sgd: a float param and grad of one shape, a float result of it.
void checkSgd(std::string_view op, const Tensors &operands,
              const Tensors &results);

/// nn.adam and nn.adamw up to the step's value, which each backend reads
/// where it lives: param, grad, exp_avg and exp_avg_sq float and of one
/// shape, three float results of it, and a one-element integer step.
void checkAdam(std::string_view op, const Tensors &operands,
               const Tensors &results);

/// The message of a step below 1.
ValueMessage adamStepMessage();

/// Adam's constants that do not depend on the step, in f32 as PyTorch
/// applies them, and the hyperparameters the bias corrections need, in
/// double. Plain data: the CUDA kernel takes it as a launch argument.
struct AdamConstants {
  double lr, beta1Double, beta2Double;
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2;
  float epsilon;
  float gradScale;
  bool hasCoupledDecay; // Adam: g += wd p
  float coupledDecay;
  bool hasDecay; // AdamW: p *= 1 - lr wd
  float decay;
};
/// The attributes of nn.adam, or with `decoupled` of nn.adamw.
AdamConstants adamConstants(const AttrMap &attrs, bool decoupled);

/// nn.clip_coefficient: a float scalar sum of squares and a float scalar
/// result.
void checkClipCoefficient(std::string_view op, const Tensors &operands,
                          const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_OPTIMIZERCHECKS_H
