//===- ElementwiseChecks.h - the checks of elementwise ops ------*- C++ -*-===//
//
// The broadcasting arithmetic (add, sub, mul, div, bias_add), the ops of one
// float operand (activations, scale, cast, softmax) and the gradients of two
// (activation gradients, softmax_grad).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_ELEMENTWISECHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_ELEMENTWISECHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// Float `lhs`, `rhs` and `result`, the operands' shapes broadcasting
/// (NumPy's rules) to the result's; returns that shape.
std::vector<int64_t> checkBroadcast(std::string_view op, const TensorRef &lhs,
                                    const TensorRef &rhs,
                                    const TensorRef &result);

/// nn.bias_add before its broadcast: a 1-D bias as long as the input's last
/// dim.
void checkBiasAdd(std::string_view op, const Tensors &operands,
                  const Tensors &results);

/// One float operand and a float result of its shape.
void checkUnaryFloat(std::string_view op, const Tensors &operands,
                     const Tensors &results);

/// A gradient `dx = f(dy, saved)`: grad_output, the saved tensor (named
/// `savedName`) and the result, all float and of one shape.
void checkGradPair(std::string_view op, const Tensors &operands,
                   const Tensors &results, const char *savedName);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_ELEMENTWISECHECKS_H
