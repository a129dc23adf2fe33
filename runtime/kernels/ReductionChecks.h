//===- ReductionChecks.h - the checks of reduce_sum, reduce_mean -*- C++
//-*-===//

#ifndef ZEROSBP_RUNTIME_KERNELS_REDUCTIONCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_REDUCTIONCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// A checked nn.reduce_sum or nn.reduce_mean (`mean`): which input dims are
/// reduced, how many elements each result element sums, and what the sums
/// are divided by (1 for a sum; `count` or the reduced count for a mean).
struct ReduceShape {
  std::vector<bool> reduced;
  int64_t reducedCount;
  double divisor;
};
ReduceShape checkReduce(std::string_view op, const AttrMap &attrs,
                        const Tensors &operands, const Tensors &results,
                        bool mean);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_REDUCTIONCHECKS_H
