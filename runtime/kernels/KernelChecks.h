//===- KernelChecks.h - precondition checks every kernel shares -*- C++ -*-===//
//
// The checks the CPU and the CUDA kernels run on their operands before they
// compute, each throwing a one-line RuntimeError that names the op. Both
// backends use these, so a bad call gets the same message on either. The
// checks of whole ops, built from these, are grouped by op beside this file
// (ElementwiseChecks.h, ShapeOpChecks.h, ...).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_KERNELCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_KERNELCHECKS_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zerosbp::runtime::checks {

using Tensors = std::vector<TensorRef>;

/// Throws RuntimeError("<op>: <message>").
[[noreturn]] void fail(std::string_view op, const std::string &message);

/// The message of a bad value that only the backend holding it can read (an
/// id, a label, Adam's step): `prefix + value + suffix`, after "<op>: ".
struct ValueMessage {
  std::string prefix;
  std::string suffix;
  std::string about(int64_t value) const;
};

/// `[2, 3]`.
std::string shapeString(const std::vector<int64_t> &shape);

/// Exactly `numOperands` operands and `numResults` results.
void expectArity(std::string_view op, const Tensors &operands,
                 const Tensors &results, size_t numOperands, size_t numResults);
/// f32, f16 or bf16 (f64 is accepted too: it widens like the others).
void expectFloat(std::string_view op, const TensorRef &tensor,
                 const char *what);
/// i32 or i64.
void expectIndex(std::string_view op, const TensorRef &tensor,
                 const char *what);
void expectShape(std::string_view op, const TensorRef &tensor,
                 const std::vector<int64_t> &shape, const char *what);
void expectSameDType(std::string_view op, const TensorRef &tensor,
                     const TensorRef &like, const char *what);
void expectNumel(std::string_view op, const TensorRef &tensor, int64_t numel,
                 const char *what);
/// A float tensor of one element (a 0-D scalar).
void expectScalar(std::string_view op, const TensorRef &tensor,
                  const char *what);

/// The divisor of a mean: the `count` attribute (the global count, set by
/// zero-partition), which must be positive, else `local`.
double countOf(std::string_view op, const AttrMap &attrs, int64_t local);

/// `axis` counted from the front; negative counts from the back.
int64_t normalizeAxis(std::string_view op, int64_t axis, int64_t rank);

/// Row-major strides, in elements.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// Whether the bytes of two tensors intersect.
bool overlaps(const TensorRef &a, const TensorRef &b);
bool overlapsAny(const TensorRef &result, const Tensors &operands);
/// Whether `result` is exactly `operand` (same bytes, type and shape): the
/// one overlap that element-by-element kernels compute in place.
bool replaces(const TensorRef &result, const TensorRef &operand);
/// Whether `result` overlaps some operand that it does not replace.
bool overlapsOtherThanReplaced(const TensorRef &result,
                               const Tensors &operands);

/// Attribute `name`, checked to have one entry per dim of `rank`.
const std::vector<int64_t> &perDim(std::string_view op, const AttrMap &attrs,
                                   const std::string &name, int64_t rank);

/// Where a rank's block lies in the op's whole tensor (docs/plan-format.md,
/// "nn.dropout"): `global_shape` (default: the block's shape) and
/// `shard_offsets` (default: zeros), one entry per dim of the block.
struct BlockPlace {
  std::vector<int64_t> global;
  std::vector<int64_t> offsets;
};

/// The block `shape`'s place from `attrs`, checked to lie in the global shape.
BlockPlace checkBlockPlace(std::string_view op, const AttrMap &attrs,
                           const std::vector<int64_t> &shape);

/// The element offset of `index` under `strides`.
int64_t offsetOf(const std::vector<int64_t> &index,
                 const std::vector<int64_t> &strides);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_KERNELCHECKS_H
