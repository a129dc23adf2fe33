//===- NNLocalView.cpp - nn op attributes in the local view ---------------===//
//
// SbpOpInterface's local-view hook: attributes that refer to sizes of the
// global tensors keep their meaning once zero-partition gives the operands
// and results their per-rank types (docs/ir.md#the-local-view).
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::nn;

/// The product of the dims of `shape` listed in `axes`.
static int64_t productOf(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes) {
  int64_t product = 1;
  for (int64_t axis : axes)
    product *= shape[axis];
  return product;
}

/// The samples of logits `(..., classes)`: the product of the leading dims.
static int64_t sampleCount(ArrayRef<int64_t> logits) {
  int64_t product = 1;
  for (int64_t dim : logits.drop_back())
    product *= dim;
  return product;
}

void DequantizeOp::localizeAttrs(function_ref<RankedTensorType(Value)>,
                                 Builder &builder) {
  setShapeAttr(builder.getDenseI64ArrayAttr(getResult().getType().getShape()));
}

void SliceOp::localizeAttrs(function_ref<RankedTensorType(Value)> globalTypeOf,
                            Builder &builder) {
  // Only whole dims may be split: they keep the whole local dim.
  ArrayRef<int64_t> global = globalTypeOf(getInput()).getShape();
  ArrayRef<int64_t> local = getInput().getType().getShape();
  SmallVector<int64_t> sizes(getSizes());
  for (auto [axis, size] : llvm::enumerate(sizes))
    if (getOffsets()[axis] == 0 && size == global[axis])
      size = local[axis];
  setSizesAttr(builder.getDenseI64ArrayAttr(sizes));
}

// The losses and the mean divide by the global count, so that the partial
// sums of the ranks add up to the global result.

void CrossEntropyOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  setCountAttr(builder.getI64IntegerAttr(
      sampleCount(globalTypeOf(getLogits()).getShape())));
}

void CrossEntropyGradOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  setCountAttr(builder.getI64IntegerAttr(
      sampleCount(globalTypeOf(getLogits()).getShape())));
}

void ReduceMeanOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  setCountAttr(builder.getI64IntegerAttr(
      productOf(globalTypeOf(getInput()).getShape(), getAxes())));
}

/// Per hierarchy axis, the dim of `global` its SBP splits (-1: none).
static SmallVector<int64_t> splitDimsOf(RankedTensorType global) {
  SmallVector<int64_t> splitDims;
  for (sbp::SbpAttr sbp : sbp::getGlobalEncoding(global).getSbp())
    splitDims.push_back(sbp.isSplit() ? sbp.getAxis() : -1);
  return splitDims;
}

void DropoutOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  // The mask follows global indices; the runtime finds this rank's offsets
  // from the split dims (docs/compiler.md, "Dropout").
  RankedTensorType global = globalTypeOf(getResult());
  setGlobalShapeAttr(builder.getDenseI64ArrayAttr(global.getShape()));
  setSplitDimsAttr(builder.getDenseI64ArrayAttr(splitDimsOf(global)));
}

// A table split by vocabulary: the runtime finds the rank's first row from
// the split dims (docs/plan-format.md, "nn.embedding").

void EmbeddingOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  RankedTensorType global = globalTypeOf(getTable());
  if (!llvm::is_contained(splitDimsOf(global), 0))
    return;
  setGlobalShapeAttr(builder.getDenseI64ArrayAttr(global.getShape()));
  setSplitDimsAttr(builder.getDenseI64ArrayAttr(splitDimsOf(global)));
}

void EmbeddingGradOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  RankedTensorType global = globalTypeOf(getResult());
  if (!llvm::is_contained(splitDimsOf(global), 0))
    return;
  setVocabSizeAttr(
      builder.getI64IntegerAttr(getResult().getType().getDimSize(0)));
  setGlobalShapeAttr(builder.getDenseI64ArrayAttr(global.getShape()));
  setSplitDimsAttr(builder.getDenseI64ArrayAttr(splitDimsOf(global)));
  setSplitOfAttr(builder.getStringAttr("result"));
}

// The vocabulary-parallel loss: the rows' mean divides by the global row
// count, and on logits split by class the runtime finds the rank's first
// class from the split dims (docs/plan-format.md, "nn.cross_entropy_sums").

/// `global` splits its last dim on some hierarchy axis.
static bool splitsClasses(RankedTensorType global) {
  return llvm::is_contained(splitDimsOf(global), global.getRank() - 1);
}

void CrossEntropySumsOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  RankedTensorType global = globalTypeOf(getLogits());
  if (!splitsClasses(global))
    return;
  setGlobalShapeAttr(builder.getDenseI64ArrayAttr(global.getShape()));
  setSplitDimsAttr(builder.getDenseI64ArrayAttr(splitDimsOf(global)));
}

void CrossEntropyLossOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  setCountAttr(
      builder.getI64IntegerAttr(globalTypeOf(getMax()).getNumElements()));
}

void CrossEntropySplitGradOp::localizeAttrs(
    function_ref<RankedTensorType(Value)> globalTypeOf, Builder &builder) {
  RankedTensorType global = globalTypeOf(getLogits());
  setCountAttr(builder.getI64IntegerAttr(sampleCount(global.getShape())));
  if (!splitsClasses(global))
    return;
  setGlobalShapeAttr(builder.getDenseI64ArrayAttr(global.getShape()));
  setSplitDimsAttr(builder.getDenseI64ArrayAttr(splitDimsOf(global)));
  setSplitOfAttr(builder.getStringAttr("result"));
}
