//===- MatmulChecks.h - the checks of the matmul ops ------------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_KERNELS_MATMULCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_MATMULCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// A checked nn.matmul or nn.batch_matmul: result = op(lhs) op(rhs), `batch`
/// times, op(lhs) m x k and op(rhs) k x n, all row-major and packed.
struct MatmulShape {
  int64_t batch, m, n, k;
  bool transposeLhs, transposeRhs;
};
MatmulShape checkMatmul(std::string_view op, const AttrMap &attrs,
                        const Tensors &operands, const Tensors &results,
                        bool batched);

/// A checked nn.matmul_bias (`gelu` false) or nn.matmul_bias_gelu: operands
/// lhs and rhs 2-D and bias 1-D of n; results `result` (m, n) and, with
/// `gelu`, `pre_activation` (m, n); all of one element type, f32, f16 or
/// bf16. No result may overlap an operand or the other result. `batch` is 1.
MatmulShape checkMatmulEpilogue(std::string_view op, const AttrMap &attrs,
                                const Tensors &operands, const Tensors &results,
                                bool gelu);

/// A checked nn.matmul_add: operands lhs and rhs 2-D and addend (m, n),
/// result (m, n), all of one element type, f32, f16 or bf16. The result may
/// be the addend's bytes (accumulating in place) but overlaps neither lhs
/// nor rhs, nor the addend partly. `batch` is 1.
MatmulShape checkMatmulAdd(std::string_view op, const AttrMap &attrs,
                           const Tensors &operands, const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_MATMULCHECKS_H
