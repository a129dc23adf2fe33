//===- NormalizationChecks.h - the checks of layer_norm ---------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_KERNELS_NORMALIZATIONCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_NORMALIZATIONCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// A checked nn.layer_norm or nn.layer_norm_grad: `rows` rows of `size`
/// elements normalized over the last axis (no rows when it is empty), and
/// the `epsilon` added to the variance.
struct LayerNormShape {
  int64_t rows;
  int64_t size;
  double epsilon;
};
LayerNormShape checkLayerNorm(std::string_view op, const AttrMap &attrs,
                              const Tensors &operands, const Tensors &results);
LayerNormShape checkLayerNormGrad(std::string_view op, const AttrMap &attrs,
                                  const Tensors &operands,
                                  const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_NORMALIZATIONCHECKS_H
