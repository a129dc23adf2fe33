//===- DropoutChecks.h - the checks and layout of nn.dropout ----*- C++ -*-===//
//
// What the CPU and CUDA dropout kernels share: the operand and attribute
// checks, the Philox key and threshold, the scale, and where this rank's
// block lies in the op's global shape (docs/plan-format.md, "nn.dropout").
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_DROPOUTCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_DROPOUTCHECKS_H

#include "runtime/kernels/KernelChecks.h"
#include "runtime/kernels/Philox.h"

namespace zerosbp::runtime::checks {

struct DropoutLayout {
  philox::DropoutStream stream;
  /// float(1 / (1 - p)), the factor of kept elements.
  float scale = 1;
  /// Per local dim: the stride of the global shape, in elements.
  std::vector<int64_t> globalStrides;
  /// The global index of local element 0 (the block's corner).
  int64_t base = 0;
};

/// Operands (input, step), one result of the input's shape; attributes `p`,
/// `seed`, `stream`, optional `micro_batch`, `global_shape` (default: the
/// local shape) and `shard_offsets` (default: zeros), the rank's block lying
/// inside the global shape.
DropoutLayout checkDropout(std::string_view op, const AttrMap &attrs,
                           const Tensors &operands, const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_DROPOUTCHECKS_H
