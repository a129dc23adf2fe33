//===- NNViews.cpp - ops whose result may be their operand's bytes --------===//
//
// ViewOpInterface (NNInterfaces.td): where a reshape's or a slice's result
// lies in its operand, so that the memory plan gives it no bytes of its own.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

using namespace mlir;
using namespace mlir::nn;

/// The same elements in the same order.
std::optional<int64_t> ReshapeOp::getViewElementOffset() { return 0; }

/// A slice that keeps every dim but the first whole, with unit strides, is
/// a contiguous run of rows of its input.
std::optional<int64_t> SliceOp::getViewElementOffset() {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (getStrides() &&
      llvm::any_of(*getStrides(), [](int64_t stride) { return stride != 1; }))
    return std::nullopt;
  ArrayRef<int64_t> offsets = getOffsets();
  ArrayRef<int64_t> sizes = getSizes();
  int64_t row = 1;
  for (int64_t dim = 1; dim < input.getRank(); ++dim) {
    if (offsets[dim] != 0 || sizes[dim] != input.getDimSize(dim))
      return std::nullopt;
    row *= input.getDimSize(dim);
  }
  if (input.getRank() == 0)
    return 0;
  return offsets[0] * row;
}
