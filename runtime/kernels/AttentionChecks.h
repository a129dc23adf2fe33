//===- AttentionChecks.h - the checks of fused attention --------*- C++ -*-===//
//
// nn.attention: softmax(scale q k^T) v over the last two dims, with the
// row-wise log-sum-exp (lse) the backward recomputes the probabilities from,
// and nn.attention_grad. `causal` hides key j > i from query i.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_ATTENTIONCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_ATTENTIONCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// Plain data: the CUDA kernels take it as a launch argument.
struct AttentionLayout {
  int64_t batch;    // product of the leading dims
  int64_t queries;  // Sq
  int64_t keys;     // Sk
  int64_t headDim;  // D
  int64_t valueDim; // Dv
  float scale;
  bool causal;
};

/// Operands q (..., Sq, D), k (..., Sk, D), v (..., Sk, Dv) of one float
/// type, at least one leading dim; results `result` (..., Sq, Dv) of that
/// type and `lse` (..., Sq) in f32.
AttentionLayout checkAttention(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands, const Tensors &results);

/// Operands grad_output, q, k, v, result, lse (as nn.attention's); results
/// grad_q, grad_k, grad_v shaped and typed as q, k, v.
AttentionLayout checkAttentionGrad(std::string_view op, const AttrMap &attrs,
                                   const Tensors &operands,
                                   const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_ATTENTIONCHECKS_H
