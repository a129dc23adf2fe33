//===- SbpUtils.cpp - helpers shared by the SBP passes --------------------===//

#include "passes/common/SbpUtils.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::sbp;

double zerosbp::collectiveBytes(CollectiveKind kind, int64_t bytes,
                                int64_t groupSize) {
  if (groupSize <= 1)
    return 0;
  double t = static_cast<double>(bytes);
  double p = static_cast<double>(groupSize);
  switch (kind) {
  case CollectiveKind::all_reduce:
    return 2 * t * (p - 1) / p;
  case CollectiveKind::reduce_scatter:
  case CollectiveKind::all_gather:
    return t * (p - 1) / p;
  case CollectiveKind::all_to_all:
    return t * (p - 1) / (p * p);
  }
  return 0;
}

double zerosbp::boxingBytes(SbpAttr from, SbpAttr to, int64_t bytes,
                            int64_t groupSize) {
  if (from == to || groupSize <= 1)
    return 0;
  if (from.isPartial()) {
    if (to.isBroadcast())
      return collectiveBytes(CollectiveKind::all_reduce, bytes, groupSize);
    if (to.isSplit())
      return collectiveBytes(CollectiveKind::reduce_scatter, bytes, groupSize);
    return std::numeric_limits<double>::infinity();
  }
  if (from.isSplit()) {
    if (to.isBroadcast())
      return collectiveBytes(CollectiveKind::all_gather, bytes, groupSize);
    if (to.isSplit())
      return collectiveBytes(CollectiveKind::all_to_all, bytes, groupSize);
    // S -> P: keep the local part and zero the rest; no communication.
    return 0;
  }
  return 0; // B -> S is a local slice, B -> P keeps rank 0's copy.
}

double zerosbp::boxingBytes(ArrayRef<SbpAttr> from, ArrayRef<SbpAttr> to,
                            int64_t bytes, PlacementAttr placement) {
  SmallVector<int64_t, 2> hierarchy = placement.getHierarchyShape();
  double total = 0;
  for (auto [axis, pair] : llvm::enumerate(llvm::zip(from, to)))
    total += boxingBytes(std::get<0>(pair), std::get<1>(pair), bytes,
                         hierarchy[axis]);
  return total;
}

SmallVector<int64_t> zerosbp::localShape(ArrayRef<int64_t> shape,
                                         ArrayRef<SbpAttr> sbp,
                                         ArrayRef<int64_t> hierarchy,
                                         ArrayRef<int64_t> coords,
                                         UnevenSplit *uneven) {
  SmallVector<int64_t> local(shape);
  for (auto [axis, entry] : llvm::enumerate(sbp)) {
    if (!entry.isSplit())
      continue;
    int64_t dim = entry.getAxis();
    int64_t parts = hierarchy[axis];
    int64_t size = local[dim];
    if (!coords.empty()) {
      local[dim] = splitSize(size, parts, coords[axis]);
      continue;
    }
    if (size % parts != 0 && uneven && !*uneven)
      *uneven = {dim, size, parts, static_cast<int64_t>(axis)};
    local[dim] = size / parts;
  }
  return local;
}

int64_t zerosbp::elementBytes(RankedTensorType type) {
  return (type.getElementType().getIntOrFloatBitWidth() + 7) / 8;
}

int64_t zerosbp::tensorBytes(RankedTensorType type) {
  return type.getNumElements() * elementBytes(type);
}

std::optional<int64_t> zerosbp::checkedTensorBytes(RankedTensorType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  std::optional<int64_t> bytes = elementBytes(type);
  for (int64_t dim : type.getShape())
    if (!(bytes = llvm::checkedMul(*bytes, dim)))
      return std::nullopt;
  return bytes;
}

RankedTensorType zerosbp::globalTensorType(RankedTensorType type,
                                           ArrayRef<SbpAttr> sbp,
                                           PlacementAttr placement, Role role) {
  auto encoding =
      GlobalTensorAttr::get(type.getContext(), sbp, placement, role);
  return RankedTensorType::get(type.getShape(), type.getElementType(),
                               encoding);
}

SmallVector<SbpAttr> zerosbp::uniformSbp(SbpAttr sbp, PlacementAttr placement) {
  return SmallVector<SbpAttr>(placement.getNumHierarchyAxes(), sbp);
}

std::string zerosbp::sbpString(ArrayRef<SbpAttr> sbp) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(sbp, os, [&](SbpAttr entry) { entry.printBare(os); });
  os << "]";
  return text;
}

Value zerosbp::castTo(OpBuilder &builder, Location loc, Value value,
                      ArrayRef<SbpAttr> sbp) {
  auto type = cast<RankedTensorType>(value.getType());
  GlobalTensorAttr encoding = getGlobalEncoding(type);
  if (encoding.getSbp() == sbp)
    return value;
  return CastOp::create(builder, loc, withEncoding(type, encoding.withSbp(sbp)),
                        value);
}

SmallVector<nn::OptimizerUpdateOpInterface>
zerosbp::collectOptimizerUpdates(Operation *func) {
  SmallVector<nn::OptimizerUpdateOpInterface> updates;
  func->walk([&](nn::OptimizerUpdateOpInterface update) {
    updates.push_back(update);
  });
  return updates;
}

void zerosbp::ScalarSum::add(OpBuilder &builder, Location loc, Value term) {
  GlobalTensorAttr encoding = getGlobalEncoding(term.getType());
  bool broadcast = encoding && llvm::all_of(encoding.getSbp(), [](SbpAttr sbp) {
                     return sbp.isBroadcast();
                   });
  if (broadcast) {
    whole = whole
                ? nn::AddOp::create(builder, loc, whole.getType(), whole, term)
                      .getResult()
                : term;
    return;
  }
  Value asPartial =
      castTo(builder, loc, term,
             uniformSbp(SbpAttr::getPartial(builder.getContext()), placement));
  partial = partial ? nn::AddOp::create(builder, loc, asPartial.getType(),
                                        partial, asPartial)
                          .getResult()
                    : asPartial;
}

Value zerosbp::ScalarSum::broadcast(OpBuilder &builder, Location loc) const {
  SmallVector<SbpAttr> broadcastSbp =
      uniformSbp(SbpAttr::getBroadcast(builder.getContext()), placement);
  Value reduced =
      partial ? castTo(builder, loc, partial, broadcastSbp) : Value();
  if (!whole)
    return reduced;
  Value wholeSum = castTo(builder, loc, whole, broadcastSbp);
  if (!reduced)
    return wholeSum;
  return nn::AddOp::create(builder, loc, reduced.getType(), reduced, wholeSum);
}

LogicalResult zerosbp::reinferResultTypes(Operation *op) {
  auto inferable = dyn_cast<InferTypeOpInterface>(op);
  if (!inferable)
    return op->emitOpError("cannot recompute its result types");
  SmallVector<Type> types;
  if (failed(inferable.inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), types)))
    return failure();
  for (auto [result, type] : llvm::zip(op->getResults(), types)) {
    auto inferred = cast<RankedTensorType>(type);
    result.setType(RankedTensorType::get(
        inferred.getShape(), inferred.getElementType(),
        cast<RankedTensorType>(result.getType()).getEncoding()));
  }
  return success();
}

/// Moves `value`'s producer, and what it needs, above `anchor` when it is
/// below it.
static void hoistAbove(Value value, Operation *anchor) {
  Operation *producer = value.getDefiningOp();
  if (!producer || producer->getBlock() != anchor->getBlock() ||
      producer->isBeforeInBlock(anchor))
    return;
  for (Value operand : producer->getOperands())
    hoistAbove(operand, anchor);
  producer->moveBefore(anchor);
}

void zerosbp::hoistGradientsAboveUpdates(
    ArrayRef<nn::OptimizerUpdateOpInterface> updates) {
  if (updates.empty())
    return;
  Operation *first = updates.front();
  for (nn::OptimizerUpdateOpInterface update : updates)
    if (update->isBeforeInBlock(first))
      first = update;
  for (nn::OptimizerUpdateOpInterface update : updates)
    hoistAbove(update.getGradient(), first);
}

SmallVector<int64_t, 2> zerosbp::rankCoordinates(ArrayRef<int64_t> hierarchy,
                                                 int64_t linear) {
  SmallVector<int64_t, 2> at(hierarchy.size());
  for (int64_t axis = hierarchy.size() - 1; axis >= 0; --axis) {
    at[axis] = linear % hierarchy[axis];
    linear /= hierarchy[axis];
  }
  return at;
}

int64_t zerosbp::pipelineMark(Operation *op, StringRef mark) {
  auto value = op ? op->getAttrOfType<IntegerAttr>(mark) : IntegerAttr();
  return value ? value.getInt() : -1;
}

void zerosbp::copyPipelineMarks(Operation *from, Operation *before,
                                OpBuilder &builder) {
  Block::iterator first = before ? std::next(before->getIterator())
                                 : builder.getInsertionBlock()->begin();
  for (StringRef mark : {nn::kPipelineStageAttr, nn::kMicroBatchAttr})
    if (Attribute value = from->getAttr(mark))
      for (Operation &built :
           llvm::make_range(first, builder.getInsertionPoint()))
        built.setAttr(mark, value);
}
