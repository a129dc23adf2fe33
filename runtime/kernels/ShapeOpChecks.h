//===- ShapeOpChecks.h - the checks of the shape ops ------------*- C++ -*-===//
//
// fill, reshape, pad, transpose, slice, split and concat: each check returns
// the layout both backends' copies need, where the moved elements lie in the
// source and in the destination.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_SHAPEOPCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_SHAPEOPCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// nn.fill's `value` as one element of `type`, in the low bytes (the host's
/// byte order, which the device shares).
uint64_t fillBits(double value, DType type);

/// nn.reshape: a result of the input's element type and count.
void checkReshape(std::string_view op, const Tensors &operands,
                  const Tensors &results);

/// A checked nn.pad: the result's shape, and the element of the result
/// (counted from its start) where the input's first element goes.
struct PadWindow {
  std::vector<int64_t> shape;
  int64_t offset;
};
PadWindow checkPad(std::string_view op, const AttrMap &attrs,
                   const Tensors &operands, const Tensors &results);

/// A checked nn.transpose: the result's shape and, along each of its dims,
/// the input's stride.
struct TransposeView {
  std::vector<int64_t> shape;
  std::vector<int64_t> srcStrides;
};
TransposeView checkTranspose(std::string_view op, const AttrMap &attrs,
                             const Tensors &operands, const Tensors &results);

/// A checked nn.slice: its window's first element (counted in elements from
/// the input's start) and the input strides between its elements.
struct SliceWindow {
  int64_t offset;
  std::vector<int64_t> strides;
};
SliceWindow checkSlice(std::string_view op, const AttrMap &attrs,
                       const Tensors &operands, const Tensors &results);

/// A checked nn.split or nn.concat, seen as pieces along an axis of a whole
/// tensor (split's input, concat's result): the whole's row-major strides
/// and, for each piece (split's results, concat's operands), the element of
/// the whole where it starts.
struct AxisPieces {
  std::vector<int64_t> strides;
  std::vector<int64_t> offsets;
};
AxisPieces checkSplit(std::string_view op, const AttrMap &attrs,
                      const Tensors &operands, const Tensors &results);
AxisPieces checkConcat(std::string_view op, const AttrMap &attrs,
                       const Tensors &operands, const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_SHAPEOPCHECKS_H
