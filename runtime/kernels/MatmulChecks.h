//===- MatmulChecks.h - the checks of matmul and batch_matmul ---*- C++ -*-===//

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

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_MATMULCHECKS_H
