//===- SoftmaxChecks.h - the checks of softmax and cross-entropy -*- C++
//-*-===//
//
// softmax and softmax_grad along any axis, with `causal` along the last one;
// the softmax cross-entropy and its gradient, with `count` the number the
// summed sample losses are divided by.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_SOFTMAXCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_SOFTMAXCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// The softmax axis as outer x size x inner elements, and the causal mask.
/// Plain data: the CUDA kernels take it as a launch argument.
struct SoftmaxLayout {
  int64_t outer;
  int64_t size;
  int64_t inner;
  bool causal;
};
SoftmaxLayout checkSoftmax(std::string_view op, const AttrMap &attrs,
                           const Tensors &operands, const Tensors &results);
SoftmaxLayout checkSoftmaxGrad(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands, const Tensors &results);

/// The logits as samples x classes, and what the sum of sample losses is
/// divided by. The labels' values are checked by each backend, where they
/// live.
struct LossLayout {
  int64_t samples;
  int64_t classes;
  double count;
};
/// The message of a label outside [0, classes).
ValueMessage labelMessage(int64_t classes);
LossLayout checkCrossEntropy(std::string_view op, const AttrMap &attrs,
                             const Tensors &operands, const Tensors &results);
LossLayout checkCrossEntropyGrad(std::string_view op, const AttrMap &attrs,
                                 const Tensors &operands,
                                 const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_SOFTMAXCHECKS_H
