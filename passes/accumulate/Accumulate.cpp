//===- Accumulate.cpp - zero-accumulate -----------------------------------===//
//
// Gradient accumulation inside the graph. An input of global batch B on N
// data-parallel ranks is viewed as (N, k, B/(N k), ...): dim 0 keeps the
// ranks' S(0) split, so taking micro-batch i along dim 1 gives every rank
// the i-th part of its own share with no communication.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROACCUMULATE
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

struct ZeroAccumulatePass
    : public zerosbp::impl::ZeroAccumulateBase<ZeroAccumulatePass> {
  using ZeroAccumulateBase::ZeroAccumulateBase;
  void runOnOperation() override;

private:
  /// Micro-batch `index` of `input` (leading dim = global batch), split
  /// over `ranks` data-parallel ranks.
  Value microBatch(OpBuilder &builder, Value input, int64_t ranks,
                   int64_t index);
  /// A copy of `op` for one micro-batch, operands remapped and result types
  /// recomputed; fails with a diagnostic where the shape cannot follow.
  FailureOr<Operation *> cloneForMicroBatch(OpBuilder &builder, Operation &op,
                                            IRMapping &mapping);
};

RankedTensorType plainType(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

} // namespace

Value ZeroAccumulatePass::microBatch(OpBuilder &builder, Value input,
                                     int64_t ranks, int64_t index) {
  auto type = cast<RankedTensorType>(input.getType());
  Location loc = input.getLoc();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t micro = shape[0] / (ranks * steps);
  SmallVector<int64_t> grouped = {ranks, steps, micro};
  grouped.append(shape.begin() + 1, shape.end());
  Value view = nn::ReshapeOp::create(
      builder, loc, plainType(grouped, type.getElementType()), input);
  SmallVector<int64_t> offsets(grouped.size(), 0), sizes(grouped);
  offsets[1] = index;
  sizes[1] = 1;
  Value slice = nn::SliceOp::create(
      builder, loc, plainType(sizes, type.getElementType()), view,
      builder.getDenseI64ArrayAttr(offsets),
      builder.getDenseI64ArrayAttr(sizes), /*strides=*/nullptr);
  SmallVector<int64_t> microShape = {ranks * micro};
  microShape.append(shape.begin() + 1, shape.end());
  return nn::ReshapeOp::create(
      builder, loc, plainType(microShape, type.getElementType()), slice);
}

FailureOr<Operation *>
ZeroAccumulatePass::cloneForMicroBatch(OpBuilder &builder, Operation &op,
                                       IRMapping &mapping) {
  Operation *copy = builder.clone(op, mapping);
  if (auto reshape = dyn_cast<nn::ReshapeOp>(copy)) {
    // A batch-major reshape: the leading dim shrinks with the batch.
    auto input = reshape.getInput().getType();
    auto target = reshape.getResult().getType();
    SmallVector<int64_t> shape(target.getShape());
    if (shape.empty() || shape[0] % steps != 0) {
      return copy->emitOpError("cannot follow the batch into ")
             << steps.getValue() << " micro-batches: the leading dim of "
             << target << " is not a multiple of it";
    }
    shape[0] /= steps;
    auto micro = plainType(shape, target.getElementType());
    if (micro.getNumElements() != input.getNumElements())
      return copy->emitOpError("cannot follow the batch into micro-batches: ")
             << input << " does not reshape to " << micro;
    reshape.getResult().setType(micro);
    return copy;
  }
  if (auto cast = dyn_cast<nn::CastOp>(copy)) {
    cast.getResult().setType(
        plainType(cast.getInput().getType().getShape(),
                  cast.getResult().getType().getElementType()));
    return copy;
  }
  if (!isa<InferTypeOpInterface>(copy))
    return copy->emitOpError("reads a batch input but its shape cannot be "
                             "recomputed for micro-batches");
  if (failed(zerosbp::reinferResultTypes(copy)))
    return failure();
  return copy;
}

void ZeroAccumulatePass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || steps == 1)
    return;
  if (steps < 1) {
    func.emitError("zero-accumulate: steps must be positive, got ")
        << steps.getValue();
    return signalPassFailure();
  }
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1 ||
      cast<RankedTensorType>(ret.getOperand(0).getType()).getRank() != 0) {
    func.emitError("zero-accumulate: @")
        << func.getName() << " must return one 0-D loss";
    return signalPassFailure();
  }

  SmallVector<nn::InputOp> inputs(body.getOps<nn::InputOp>());
  if (inputs.empty()) {
    func.emitError("zero-accumulate: @") << func.getName() << " has no input";
    return signalPassFailure();
  }
  int64_t ranks = world;
  for (nn::InputOp input : inputs) {
    auto type = cast<RankedTensorType>(input.getResult().getType());
    if (auto encoding = sbp::getGlobalEncoding(type)) {
      if (ranks > 0 && ranks != encoding.getPlacement().getNumRanks()) {
        input.emitOpError("is placed on ")
            << encoding.getPlacement().getNumRanks()
            << " ranks but world=" << ranks;
        return signalPassFailure();
      }
      ranks = encoding.getPlacement().getNumRanks();
    }
  }
  if (ranks < 1)
    ranks = 1;
  llvm::DenseMap<Operation *, int64_t> partsOf;
  for (nn::InputOp input : inputs) {
    auto type = cast<RankedTensorType>(input.getResult().getType());
    // The batch is split over the axes that split the input (the data
    // axes; a model axis holds it whole), or over every rank.
    int64_t parts = ranks;
    if (auto encoding = sbp::getGlobalEncoding(type)) {
      parts = 1;
      for (auto [sbp, size] : llvm::zip_equal(
               encoding.getSbp(), encoding.getPlacement().getHierarchyShape()))
        if (sbp.isSplit())
          parts *= size;
    }
    partsOf[input] = parts;
    if (type.getRank() == 0 || type.getDimSize(0) % (parts * steps) != 0) {
      input.emitOpError("batch of ")
          << (type.getRank() ? type.getDimSize(0) : 0)
          << " does not split into " << steps.getValue()
          << " micro-batches on each of " << parts << " ranks";
      return signalPassFailure();
    }
  }

  // Ops that (transitively) read an input run once per micro-batch.
  llvm::DenseSet<Operation *> batched;
  for (nn::InputOp input : inputs)
    batched.insert(input);
  SmallVector<Operation *> perMicroBatch;
  for (Operation &op : body.without_terminator()) {
    if (isa<nn::InputOp>(op))
      continue;
    bool reads = llvm::any_of(op.getOperands(), [&](Value v) {
      return v.getDefiningOp() && batched.contains(v.getDefiningOp());
    });
    if (reads) {
      batched.insert(&op);
      perMicroBatch.push_back(&op);
    }
  }

  OpBuilder builder(ret);
  Value total;
  // As a loop, the graph keeps micro-batch 0's copy and the schedule runs
  // it once per micro-batch (docs/design.md#the-micro-batch-loop).
  int64_t copies = loop ? 1 : steps;
  for (int64_t index = 0; index < copies; ++index) {
    IRMapping mapping;
    // The pipeline schedule orders micro-batches by this mark.
    auto microBatchMark = builder.getI64IntegerAttr(index);
    for (nn::InputOp input : inputs) {
      Value part =
          microBatch(builder, input.getResult(), partsOf[input], index);
      for (Operation *op = part.getDefiningOp(); op;
           op = op->getOperand(0).getDefiningOp()) {
        if (op == input)
          break;
        op->setAttr(nn::kMicroBatchAttr, microBatchMark);
        if (loop && isa<nn::SliceOp>(op))
          op->setAttr(zerosbp::kMicroBatchDimAttr,
                      builder.getI64IntegerAttr(1));
      }
      mapping.map(input.getResult(), part);
    }
    for (Operation *op : perMicroBatch) {
      FailureOr<Operation *> copy = cloneForMicroBatch(builder, *op, mapping);
      if (failed(copy))
        return signalPassFailure();
      (*copy)->setAttr(nn::kMicroBatchAttr, microBatchMark);
      // Each micro-batch draws its own dropout mask (docs/compiler.md).
      if (auto dropout = dyn_cast<nn::DropoutOp>(*copy))
        dropout.setMicroBatchAttr(builder.getI64IntegerAttr(index));
    }
    Value loss = mapping.lookupOrDefault(ret.getOperand(0));
    if (loop) {
      // The losses' running total, zero before the loop: the same sum, in
      // the same order, as the copies'.
      Value zero = nn::FillOp::create(builder, ret.getLoc(), loss.getType(),
                                      builder.getF64FloatAttr(0.0));
      Operation *add =
          nn::AddOp::create(builder, ret.getLoc(), loss.getType(), zero, loss);
      add->setAttr(nn::kMicroBatchAttr, microBatchMark);
      add->setAttr(zerosbp::kLoopCarriedAttr, builder.getUnitAttr());
      total = add->getResult(0);
      continue;
    }
    total = total ? nn::AddOp::create(builder, ret.getLoc(), loss.getType(),
                                      total, loss)
                        .getResult()
                  : loss;
  }
  total = nn::ScaleOp::create(builder, ret.getLoc(), total.getType(), total,
                              builder.getF64FloatAttr(1.0 / steps));
  ret->setOperand(0, total);
  if (loop)
    func->setAttr(zerosbp::kMicroBatchLoopAttr,
                  builder.getI64IntegerAttr(steps));
  func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(),
                                               TypeRange{total.getType()}));
  // The whole-batch forward is now dead.
  for (Operation *op : llvm::reverse(perMicroBatch))
    op->erase();
}
