//===- SbpOps.cpp - boxing and async collective ops -----------------------===//

#include "dialects/sbp/IR/SbpOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::sbp;

/// `all_gather`: the collective kind as a bare keyword.
static ParseResult parseCollectiveKind(OpAsmParser &parser,
                                       CollectiveKindAttr &kind) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<CollectiveKind> parsed = symbolizeCollectiveKind(keyword);
  if (!parsed)
    return parser.emitError(loc, "unknown collective '")
           << keyword
           << "' (expected all_reduce, reduce_scatter, all_gather or "
              "all_to_all)";
  kind = CollectiveKindAttr::get(parser.getContext(), *parsed);
  return success();
}

static void printCollectiveKind(OpAsmPrinter &printer, Operation *,
                                CollectiveKindAttr kind) {
  printer << stringifyCollectiveKind(kind.getValue());
}

static ParseResult parseMemoryKind(OpAsmParser &parser, MemoryKindAttr &kind) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<MemoryKind> parsed = symbolizeMemoryKind(keyword);
  if (!parsed)
    return parser.emitError(loc, "unknown memory kind '")
           << keyword << "' (expected device, host or nvme)";
  kind = MemoryKindAttr::get(parser.getContext(), *parsed);
  return success();
}

static void printMemoryKind(OpAsmPrinter &printer, Operation *,
                            MemoryKindAttr kind) {
  printer << stringifyMemoryKind(kind.getValue());
}

#define GET_OP_CLASSES
#include "dialects/sbp/IR/SbpOps.cpp.inc"

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

GlobalTensorAttr CastOp::getSourceEncoding() {
  return getGlobalEncoding(getInput().getType());
}

GlobalTensorAttr CastOp::getTargetEncoding() {
  return getGlobalEncoding(getResult().getType());
}

LogicalResult ToPartialOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (getGridAxis() < 0)
    return emitOpError("grid_axis must be non-negative, got ") << getGridAxis();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return emitOpError("result must have the input's element type and rank");
  std::optional<int64_t> split = getSplitAxis();
  if (split && (*split < 0 || *split >= input.getRank()))
    return emitOpError("split_axis ")
           << *split << " is out of range for rank " << input.getRank();
  for (int64_t dim = 0; dim < input.getRank(); ++dim) {
    bool grows = split && dim == *split;
    if (grows ? input.getDimSize(dim) > result.getDimSize(dim)
              : input.getDimSize(dim) != result.getDimSize(dim))
      return emitOpError("result dim ")
             << dim << " must " << (grows ? "hold" : "equal")
             << " the input's (" << input.getDimSize(dim) << "), got "
             << result.getDimSize(dim);
  }
  return success();
}

LogicalResult CastOp::verify() {
  auto sourceType = getInput().getType();
  auto targetType = getResult().getType();
  GlobalTensorAttr source = getSourceEncoding();
  GlobalTensorAttr target = getTargetEncoding();
  if (!source || !target)
    return emitOpError("needs #sbp.global encodings on both sides");
  if (sourceType.getShape() != targetType.getShape())
    return emitOpError("changes the shape from ")
           << sourceType << " to " << targetType;
  if (sourceType.getElementType() != targetType.getElementType())
    return emitOpError("changes the element type from ")
           << sourceType.getElementType() << " to "
           << targetType.getElementType() << "; use nn.cast";
  PlacementAttr from = source.getPlacement(), to = target.getPlacement();
  auto sameRanks = [](PlacementAttr a, PlacementAttr b) {
    return a == b ||
           (a.getDevice() == b.getDevice() && a.getRanks() == b.getRanks() &&
            a.getHierarchy() == b.getHierarchy());
  };
  // A hop between pipeline stages: each rank's part moves as it is to the
  // rank at the same place of another stage's grid of the same shape.
  bool hop = from.getDevice() == to.getDevice() &&
             from.getHierarchyShape() == to.getHierarchyShape() &&
             from.getRanks() != to.getRanks();
  if (hop && (source.getSbp() != target.getSbp() ||
              from.getMemory() != to.getMemory()))
    return emitOpError("moves to another pipeline stage's placement and "
                       "changes the SBP or memory kind too; cast one, then "
                       "the other");
  if (!hop && !sameRanks(from, to))
    return emitOpError("casts between different placements ")
           << from << " and " << to
           << "; only SBP changes on one placement and moves between "
              "pipeline stages' placements of one grid shape are supported";
  // A transfer between memory kinds moves each rank's part as it is.
  if (from.getMemory() != to.getMemory() && source.getSbp() != target.getSbp())
    return emitOpError("changes both the memory kind and the SBP; cast "
                       "one, then the other");
  if (source.getRole() != target.getRole())
    return emitOpError("changes the role from ")
           << stringifyRole(source.getRole()) << " to "
           << stringifyRole(target.getRole());
  for (auto [axis, from, to] :
       llvm::enumerate(source.getSbp(), target.getSbp())) {
    if (from.isPartial() && to.isPartial() &&
        from.getReduce() != to.getReduce())
      return emitOpError("cannot cast ") << from.str() << " to " << to.str()
                                         << " on hierarchy axis " << axis;
  }
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

std::optional<CollectiveKind> CastOp::getCollectiveOnAxis(int64_t axis) {
  SbpAttr from = getSourceEncoding().getSbp()[axis];
  SbpAttr to = getTargetEncoding().getSbp()[axis];
  if (from.isPartial() && to.isBroadcast())
    return CollectiveKind::all_reduce;
  if (from.isPartial() && to.isSplit())
    return CollectiveKind::reduce_scatter;
  if (from.isSplit() && to.isBroadcast())
    return CollectiveKind::all_gather;
  if (from.isSplit() && to.isSplit() && from.getAxis() != to.getAxis())
    return CollectiveKind::all_to_all;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// CollectiveStartOp
//===----------------------------------------------------------------------===//

/// Checks one segment of a collective: `input` becomes `result`.
static LogicalResult verifySegment(CollectiveStartOp op, RankedTensorType input,
                                   RankedTensorType result) {
  auto emitOpError = [&](const Twine &message) {
    return op.emitOpError(message);
  };
  auto getKind = [&] { return op.getKind(); };
  auto getGatherAxis = [&] { return op.getGatherAxis(); };
  auto getScatterAxis = [&] { return op.getScatterAxis(); };
  if (getGlobalEncoding(input) || getGlobalEncoding(result))
    return emitOpError("works on per-rank tensors; drop the #sbp.global "
                       "encoding");
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.getRank() != result.getRank())
    return emitOpError("changes the rank from ")
           << input.getRank() << " to " << result.getRank();
  // Per-rank buffers have fixed sizes; the shape rules below also do
  // arithmetic on the dims, which a dynamic size would corrupt.
  if (!input.hasStaticShape() || !result.hasStaticShape())
    return emitOpError("needs static shapes, got ")
           << input << " and " << result;
  SmallVector<int64_t, 2> hierarchy = op.getPlacement().getHierarchyShape();
  int64_t hierarchyAxis = op.getHierarchyAxis();
  if (hierarchyAxis < 0 || hierarchyAxis >= (int64_t)hierarchy.size())
    return emitOpError("hierarchy axis ")
           << hierarchyAxis << " is out of range for a placement with "
           << hierarchy.size() << (hierarchy.size() == 1 ? " axis" : " axes");
  int64_t group = hierarchy[hierarchyAxis];
  int64_t rank = input.getRank();

  auto checkAxis = [&](std::optional<int64_t> axis,
                       StringRef name) -> FailureOr<int64_t> {
    if (!axis)
      return emitOpError(stringifyCollectiveKind(getKind()))
             << " needs '" << name << "'";
    if (*axis < 0 || *axis >= rank)
      return emitOpError(name)
             << " " << *axis << " is out of range for rank " << rank;
    return *axis;
  };
  auto expectShape = [&](SmallVector<int64_t> expected) -> LogicalResult {
    if (ArrayRef<int64_t>(expected) == result.getShape())
      return success();
    return emitOpError("result type ")
           << result << " does not match " << stringifyCollectiveKind(getKind())
           << " over " << group << " ranks of " << input << " (expected shape "
           << RankedTensorType::get(expected, result.getElementType()) << ")";
  };

  SmallVector<int64_t> expected(input.getShape());
  // Dim `axis` of the expected result gathers `group` pieces.
  auto grow = [&](int64_t axis) -> LogicalResult {
    std::optional<int64_t> size = llvm::checkedMul(expected[axis], group);
    if (!size)
      return emitOpError("gathered dimension ")
             << axis << " overflows: " << expected[axis] << " x " << group;
    expected[axis] = *size;
    return success();
  };
  switch (getKind()) {
  case CollectiveKind::all_reduce:
    return expectShape(expected);
  case CollectiveKind::all_gather: {
    FailureOr<int64_t> axis = checkAxis(getGatherAxis(), "gather_axis");
    if (failed(axis))
      return failure();
    if (failed(grow(*axis)))
      return failure();
    return expectShape(expected);
  }
  case CollectiveKind::reduce_scatter: {
    FailureOr<int64_t> axis = checkAxis(getScatterAxis(), "scatter_axis");
    if (failed(axis))
      return failure();
    if (expected[*axis] % group != 0)
      return emitOpError("scatter dimension ")
             << expected[*axis] << " is not divisible by " << group
             << " ranks; pad the buffer first";
    expected[*axis] /= group;
    return expectShape(expected);
  }
  case CollectiveKind::all_to_all: {
    FailureOr<int64_t> scatter = checkAxis(getScatterAxis(), "scatter_axis");
    FailureOr<int64_t> gather = checkAxis(getGatherAxis(), "gather_axis");
    if (failed(scatter) || failed(gather))
      return failure();
    if (expected[*scatter] % group != 0)
      return emitOpError("scatter dimension ")
             << expected[*scatter] << " is not divisible by " << group
             << " ranks";
    expected[*scatter] /= group;
    if (failed(grow(*gather)))
      return failure();
    return expectShape(expected);
  }
  }
  return success();
}

LogicalResult CollectiveStartOp::verify() {
  ArrayRef<RankedTensorType> results = getFuture().getType().getValueTypes();
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  if (results.size() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " operands but its future holds "
           << results.size() << " values";
  Type elementType = results.front().getElementType();
  for (auto [input, result] : llvm::zip(getInputs().getTypes(), results)) {
    if (result.getElementType() != elementType)
      return emitOpError("mixes element types ")
             << elementType << " and " << result.getElementType()
             << " in one bucket";
    if (failed(verifySegment(*this, cast<RankedTensorType>(input), result)))
      return failure();
  }
  if (std::optional<int64_t> bucket = getBucket(); bucket && *bucket < 0)
    return emitOpError("bucket index ") << *bucket << " is negative";
  return success();
}

//===----------------------------------------------------------------------===//
// CollectiveWaitOp
//===----------------------------------------------------------------------===//

LogicalResult CollectiveWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferred) {
  if (operands.size() != 1)
    return failure();
  auto future = dyn_cast<FutureType>(operands.front().getType());
  if (!future)
    return failure();
  llvm::append_range(inferred, future.getValueTypes());
  return success();
}

//===----------------------------------------------------------------------===//
// TransferStartOp, TransferWaitOp
//===----------------------------------------------------------------------===//

LogicalResult TransferStartOp::verify() {
  ArrayRef<RankedTensorType> results = getFuture().getType().getValueTypes();
  if (results.size() != 1 || results.front() != getInput().getType())
    return emitOpError("must yield one tensor of its input's type ")
           << getInput().getType();
  if (getFrom() == getTo())
    return emitOpError("copies from ")
           << stringifyMemoryKind(getFrom()) << " to the same memory kind";
  return success();
}

LogicalResult TransferWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferred) {
  if (operands.size() != 1)
    return failure();
  auto future = dyn_cast<FutureType>(operands.front().getType());
  if (!future || future.getValueTypes().size() != 1)
    return failure();
  inferred.push_back(future.getValueTypes().front());
  return success();
}

//===----------------------------------------------------------------------===//
// FutureType
//===----------------------------------------------------------------------===//

LogicalResult FutureType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<RankedTensorType> valueTypes) {
  if (valueTypes.empty())
    return emitError() << "!sbp.future needs at least one value type";
  return success();
}

//===----------------------------------------------------------------------===//
// SendOp, RecvOp
//===----------------------------------------------------------------------===//

LogicalResult SendOp::verify() {
  if (getSourceStage() < 0 || getTargetStage() < 0)
    return emitOpError("needs non-negative stages, got ")
           << getSourceStage() << " and " << getTargetStage();
  if (getSourceStage() == getTargetStage())
    return emitOpError("sends from stage ") << getSourceStage() << " to itself";
  ArrayRef<RankedTensorType> types = getMessage().getType().getValueTypes();
  if (types.size() != 1 || types.front() != getInput().getType())
    return emitOpError("carries ")
           << getInput().getType() << " but its message is "
           << getMessage().getType();
  return success();
}

LogicalResult RecvOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       ValueRange operands, DictionaryAttr,
                                       OpaqueProperties, RegionRange,
                                       SmallVectorImpl<Type> &inferred) {
  if (operands.size() != 1)
    return failure();
  auto message = dyn_cast<FutureType>(operands.front().getType());
  if (!message || message.getValueTypes().size() != 1)
    return failure();
  inferred.push_back(message.getValueTypes().front());
  return success();
}

SendOp RecvOp::getSend() { return getMessage().getDefiningOp<SendOp>(); }
