//===- SbpDialect.h - sbp dialect, attributes and types ---------*- C++ -*-===//

#ifndef ZEROSBP_DIALECTS_SBP_IR_SBPDIALECT_H
#define ZEROSBP_DIALECTS_SBP_IR_SBPDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/TensorEncoding.h"
#include "runtime/core/Limits.h"

namespace mlir::sbp {

/// The most bytes a memory plan addresses (runtime/core/Limits.h).
using ::zerosbp::runtime::kMaxPlanBytes;

} // namespace mlir::sbp

#include "dialects/sbp/IR/SbpDialect.h.inc"
#include "dialects/sbp/IR/SbpEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/sbp/IR/SbpAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/sbp/IR/SbpTypes.h.inc"

namespace mlir::sbp {

/// The `#sbp.global` encoding of `type`, or null when it has none.
GlobalTensorAttr getGlobalEncoding(Type type);

/// `type` with its encoding replaced by `encoding` (null drops it).
RankedTensorType withEncoding(RankedTensorType type, Attribute encoding);

/// Balanced split: the number of elements rank `index` of `parts` holds when
/// `size` elements are split (sizes differ by at most one, larger first).
int64_t splitSize(int64_t size, int64_t parts, int64_t index);

/// Offset of part `index` in a balanced split of `size` into `parts`.
int64_t splitOffset(int64_t size, int64_t parts, int64_t index);

} // namespace mlir::sbp

#endif // ZEROSBP_DIALECTS_SBP_IR_SBPDIALECT_H
