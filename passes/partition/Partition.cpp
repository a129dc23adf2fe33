//===- Partition.cpp - zero-partition -------------------------------------===//
//
// Moves fully SBP-annotated graphs from the global view to the view of one
// rank (`rank=N`) or of every rank at once (SPMD, `rank=-1`). A value's local
// type is its logical shape cut by its SBP: on hierarchy axis a of n_a ranks,
// `S(d)` splits what the earlier axes left of dim d into n_a balanced parts
// (a nested split). Each `sbp.cast` becomes the collectives of
// docs/ir.md#boxing, one per hierarchy axis that changes, as upstream
// `shard` ops on one `shard.grid` per placement.
//
// Everything is checked before anything changes: annotations, even splits
// (SPMD), the rank, ops without a partition rule, and the collectives the
// `shard` verifiers reject (they need equal shards). Only the local form of
// an nn op is checked while rewriting, against the op's own type inference.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"
#include "llvm/ADT/ScopeExit.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROPARTITION
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using zerosbp::kGlobalTypeAttr;
using zerosbp::kPlacementAttr;
using zerosbp::kRankAttr;
using zerosbp::localShape;
using zerosbp::UnevenSplit;

namespace {

/// An uneven split: dim `dim` of `size` elements over the `parts` ranks of
/// hierarchy axis `axis`.
/// One hierarchy axis of an `sbp.cast`: `from` becomes `to` on `axis`,
/// taking the local type `input` to `result`.
struct BoxingStep {
  int64_t axis;
  SbpAttr from, to;
  RankedTensorType input, result;
};

class Partitioner {
public:
  Partitioner(ModuleOp module, int64_t rank)
      : module(module), rank(rank), builder(module.getContext()) {}

  LogicalResult run();

private:
  bool isSpmd() const { return rank < 0; }

  // Checks (nothing changes).
  LogicalResult checkFunc(func::FuncOp func);
  LogicalResult checkValue(func::FuncOp func, Value value);
  LogicalResult checkOp(Operation &op);
  LogicalResult planCast(CastOp cast);
  FailureOr<SmallVector<int64_t, 2>> coordsOf(PlacementAttr placement,
                                              func::FuncOp func);

  // Rewrites.
  LogicalResult rewriteFunc(func::FuncOp func);
  LogicalResult rewriteOp(Operation &op);
  void lowerCast(CastOp cast);
  Value lowerStep(const BoxingStep &step, Value value, PlacementAttr placement,
                  Location loc);
  Value zeros(RankedTensorType type, Location loc);
  FlatSymbolRefAttr gridOf(PlacementAttr placement);
  RankedTensorType localType(Value value);

  ModuleOp module;
  int64_t rank;
  OpBuilder builder;
  /// The global type of every tensor value, read before types change.
  llvm::DenseMap<Value, RankedTensorType> globalTypes;
  llvm::DenseMap<Operation *, SmallVector<BoxingStep>> castPlans;
  /// `rank`'s multi-index in each placement's hierarchy (rank=N only).
  llvm::DenseMap<PlacementAttr, SmallVector<int64_t, 2>> coords;
  llvm::DenseMap<PlacementAttr, FlatSymbolRefAttr> grids;
  Operation *lastGrid = nullptr;
  /// The zeros casts created; a later axis may zero a value again.
  SmallVector<Operation *> fills;
};

} // namespace

//===----------------------------------------------------------------------===//
// Local shapes
//===----------------------------------------------------------------------===//

/// An error about `value`, located at its producer.
static InFlightDiagnostic emitValueError(Value value) {
  if (auto result = dyn_cast<OpResult>(value)) {
    InFlightDiagnostic diag = result.getOwner()->emitOpError("result #");
    diag << result.getResultNumber();
    return diag;
  }
  auto argument = cast<BlockArgument>(value);
  InFlightDiagnostic diag = emitError(argument.getLoc(), "argument #");
  diag << argument.getArgNumber();
  return diag;
}

RankedTensorType Partitioner::localType(Value value) {
  RankedTensorType type = globalTypes.lookup(value);
  GlobalTensorAttr encoding = getGlobalEncoding(type);
  PlacementAttr placement = encoding.getPlacement();
  SmallVector<int64_t, 2> at;
  if (!isSpmd())
    at = coords.lookup(placement.onDevice());
  return RankedTensorType::get(localShape(type.getShape(), encoding.getSbp(),
                                          placement.getHierarchyShape(), at),
                               type.getElementType());
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t, 2>>
Partitioner::coordsOf(PlacementAttr placement, func::FuncOp func) {
  if (isSpmd())
    return SmallVector<int64_t, 2>();
  placement = placement.onDevice();
  auto it = coords.find(placement);
  if (it != coords.end())
    return it->second;
  ArrayRef<int64_t> ranks = placement.getRanks();
  const int64_t *position = llvm::find(ranks, rank);
  if (position == ranks.end())
    return func.emitError("zero-partition: rank=")
           << rank << " is out of range for @" << func.getName()
           << ": its placement " << placement << " has " << ranks.size()
           << " ranks; pass one of them, or -1 for the SPMD program";
  SmallVector<int64_t, 2> at = zerosbp::rankCoordinates(
      placement.getHierarchyShape(), position - ranks.begin());
  coords[placement] = at;
  return at;
}

LogicalResult Partitioner::checkValue(func::FuncOp func, Value value) {
  Type type = value.getType();
  if (!isa<TensorType>(type))
    return success();
  auto ranked = dyn_cast<RankedTensorType>(type);
  GlobalTensorAttr encoding = getGlobalEncoding(type);
  if (!ranked || !encoding)
    return emitValueError(value)
           << " of type " << type
           << " has no #sbp.global encoding; zero-partition needs a fully "
              "annotated graph (run zero-sbp-propagation first)";
  PlacementAttr placement = encoding.getPlacement();
  FailureOr<SmallVector<int64_t, 2>> at = coordsOf(placement, func);
  if (failed(at))
    return failure();
  UnevenSplit uneven;
  (void)localShape(ranked.getShape(), encoding.getSbp(),
                   placement.getHierarchyShape(), *at, &uneven);
  if (uneven) {
    InFlightDiagnostic diag = emitValueError(value);
    diag << " of type " << type << " splits dim " << uneven.dim << " (size "
         << uneven.size << ") unevenly over " << uneven.parts << " ranks";
    if (placement.getNumHierarchyAxes() > 1)
      diag << " of hierarchy axis " << uneven.axis;
    diag << "; the SPMD program (rank=-1) needs even splits: pad the tensor, "
            "or pass rank=N for the program of rank N";
    return diag;
  }
  globalTypes[value] = ranked;
  return success();
}

LogicalResult Partitioner::checkOp(Operation &op) {
  Dialect *dialect = op.getDialect();
  if (!(dialect && isa<nn::NNDialect>(dialect)) &&
      !isa<CastOp, func::ReturnOp>(op)) {
    auto isTensor = [](Type type) { return isa<TensorType>(type); };
    if (llvm::any_of(op.getOperandTypes(), isTensor) ||
        llvm::any_of(op.getResultTypes(), isTensor))
      return op.emitOpError("has no zero-partition rule; the global view "
                            "holds nn ops and sbp.cast");
    return success();
  }
  if (auto cast = dyn_cast<CastOp>(op))
    return planCast(cast);
  return success();
}

/// Plans a cast axis by axis. Splits are removed from the innermost
/// hierarchy axis out and added from the outermost in, so that the ranks of
/// each step's group hold consecutive parts: gathering `[S(0), S(0)]` over
/// axis 1 first gives each row of the grid its half, then axis 0 the whole.
/// Among the other steps, those that split come before those that do not,
/// so that a reduction to `B` runs on the split part: `[P, P]` to
/// `[B, S(0)]` (MiCS's gradients) reduce-scatters over axis 1, then
/// all-reduces a 1/p1 shard over axis 0.
LogicalResult Partitioner::planCast(CastOp cast) {
  RankedTensorType sourceType = globalTypes.lookup(cast.getInput());
  GlobalTensorAttr source = getGlobalEncoding(sourceType);
  GlobalTensorAttr target = cast.getTargetEncoding();
  PlacementAttr placement = source.getPlacement().onDevice();
  SmallVector<int64_t, 2> hierarchy = placement.getHierarchyShape();
  SmallVector<int64_t, 2> at = coords.lookup(placement);
  ArrayRef<int64_t> shape = sourceType.getShape();
  Type elementType = sourceType.getElementType();
  SmallVector<SbpAttr> state(source.getSbp());
  ArrayRef<SbpAttr> wanted = target.getSbp();
  int64_t numAxes = state.size();

  // Each step changes one axis to a given SBP.
  using Step = std::pair<int64_t, SbpAttr>;
  SmallVector<Step> order;
  for (int64_t axis = numAxes - 1; axis >= 0; --axis)
    if (state[axis] != wanted[axis] && state[axis].isSplit())
      order.push_back({axis, wanted[axis]});
  for (bool toSplit : {true, false})
    for (int64_t axis = 0; axis < numAxes; ++axis)
      if (state[axis] != wanted[axis] && !state[axis].isSplit() &&
          wanted[axis].isSplit() == toSplit)
        order.push_back({axis, wanted[axis]});

  // Where that order would have an outer axis split a dim that an inner one
  // already splits (`[P, S(1)]` to `[S(0), S(0)]`: the inner axis's
  // all-to-all first), go through Broadcast instead: gather every split
  // that changes or sits below a change, innermost first; then reduce and
  // split outermost first, so that nested splits cut in rank order.
  // A later axis splitting the same dim would not see its parts in rank
  // order.
  auto splitBelow = [](ArrayRef<SbpAttr> at, int64_t axis, SbpAttr entry) {
    return entry.isSplit() &&
           llvm::is_contained(at.drop_front(axis + 1), entry);
  };
  auto conflicts = [&]() {
    SmallVector<SbpAttr> at(state);
    for (auto [axis, to] : order) {
      if (splitBelow(at, axis, at[axis]) || splitBelow(at, axis, to))
        return true;
      at[axis] = to;
    }
    return false;
  };
  if (numAxes > 1 && conflicts()) {
    int64_t outermostChange = numAxes;
    for (int64_t axis = 0; axis < numAxes; ++axis)
      if (state[axis] != wanted[axis]) {
        outermostChange = axis;
        break;
      }
    SbpAttr broadcast = SbpAttr::getBroadcast(cast.getContext());
    SmallVector<SbpAttr> at(state);
    order.clear();
    for (int64_t axis = numAxes - 1; axis >= outermostChange; --axis)
      if (at[axis].isSplit()) {
        order.push_back({axis, broadcast});
        at[axis] = broadcast;
      }
    for (int64_t axis = 0; axis < numAxes; ++axis)
      if (at[axis] != wanted[axis])
        order.push_back({axis, wanted[axis]});
  }

  auto emitCastError = [&](int64_t axis) {
    InFlightDiagnostic diag = cast.emitOpError("from ");
    diag << zerosbp::sbpString(source.getSbp()) << " to "
         << zerosbp::sbpString(wanted);
    if (numAxes > 1)
      diag << " (hierarchy axis " << axis << ")";
    return diag;
  };

  SmallVector<BoxingStep> steps;
  for (const Step &step : order) {
    int64_t axis = step.first;
    SbpAttr from = state[axis], to = step.second;
    assert(!splitBelow(state, axis, from) && !splitBelow(state, axis, to) &&
           "the order through Broadcast keeps nested splits in rank order");
    if (from.isSplit() && to.isPartial() && to.getReduce() == ReduceKind::max)
      return emitCastError(axis)
             << ": S -> P(max) is not supported by zero-partition";

    SmallVector<SbpAttr> next(state);
    next[axis] = to;
    UnevenSplit unevenIn, unevenOut;
    SmallVector<int64_t> in =
        localShape(shape, state, hierarchy, at, &unevenIn);
    SmallVector<int64_t> out =
        localShape(shape, next, hierarchy, at, &unevenOut);
    if (UnevenSplit uneven = unevenIn ? unevenIn : unevenOut)
      return emitCastError(axis)
             << " passes through an uneven split of dim " << uneven.dim
             << " (size " << uneven.size << " over " << uneven.parts
             << " ranks); the SPMD program (rank=-1) needs even splits";

    // Over one rank every step is the identity.
    int64_t group = hierarchy[axis];
    if (group == 1) {
      state = std::move(next);
      continue;
    }
    // The upstream verifiers of these collectives need equal shards: the
    // scattered or gathered dim divides by the group size.
    auto needEven = [&](StringRef opName, int64_t dim,
                        int64_t size) -> LogicalResult {
      if (size % group == 0)
        return success();
      return emitCastError(axis)
             << ": " << opName << " needs equal shards, but dim " << dim
             << " (size " << size << ") splits unevenly over " << group
             << " ranks; pad the tensor to a multiple of " << group;
    };
    if (from.isPartial() && to.isSplit() &&
        failed(
            needEven("shard.reduce_scatter", to.getAxis(), in[to.getAxis()])))
      return failure();
    if (from.isSplit() && !to.isPartial() &&
        failed(needEven(to.isSplit() ? "shard.all_to_all" : "shard.all_gather",
                        from.getAxis(), out[from.getAxis()])))
      return failure();
    if (from.isSplit() && to.isSplit() &&
        failed(needEven("shard.all_to_all", to.getAxis(), in[to.getAxis()])))
      return failure();

    steps.push_back({axis, from, to, RankedTensorType::get(in, elementType),
                     RankedTensorType::get(out, elementType)});
    state = std::move(next);
  }
  castPlans[cast] = std::move(steps);
  return success();
}

LogicalResult Partitioner::checkFunc(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("zero-partition expects a single-block graph");
  Block &block = func.getBody().front();
  for (BlockArgument argument : block.getArguments())
    if (failed(checkValue(func, argument)))
      return failure();
  for (Operation &op : block) {
    for (Value result : op.getResults())
      if (failed(checkValue(func, result)))
        return failure();
    if (failed(checkOp(op)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Rewrites
//===----------------------------------------------------------------------===//

FlatSymbolRefAttr Partitioner::gridOf(PlacementAttr placement) {
  // A grid stands for ranks; the memory kind is the tensor's, not theirs.
  placement = placement.onDevice();
  if (FlatSymbolRefAttr grid = grids.lookup(placement))
    return grid;
  std::string base =
      (placement.getDevice() == DeviceKind::cuda ? "gpus" : "cpus") +
      std::to_string(placement.getNumRanks());
  if (!placement.getHierarchy().empty()) {
    base += "_";
    llvm::raw_string_ostream os(base);
    llvm::interleave(placement.getHierarchy(), os, "x");
  }
  std::string name = base;
  for (int suffix = 1; module.lookupSymbol(name); ++suffix)
    name = base + "_" + std::to_string(suffix);

  OpBuilder::InsertionGuard guard(builder);
  if (lastGrid)
    builder.setInsertionPointAfter(lastGrid);
  else
    builder.setInsertionPointToStart(module.getBody());
  auto grid = shard::GridOp::create(builder, module.getLoc(), name,
                                    placement.getHierarchyShape());
  grid->setAttr(kPlacementAttr, placement);
  lastGrid = grid;
  FlatSymbolRefAttr symbol = FlatSymbolRefAttr::get(grid.getSymNameAttr());
  grids[placement] = symbol;
  return symbol;
}

Value Partitioner::zeros(RankedTensorType type, Location loc) {
  auto fill =
      nn::FillOp::create(builder, loc, type, builder.getF64FloatAttr(0.0));
  fills.push_back(fill);
  return fill;
}

static shard::ReductionKindAttr reductionOf(OpBuilder &builder, SbpAttr sbp) {
  return shard::ReductionKindAttr::get(builder.getContext(),
                                       sbp.getReduce() == ReduceKind::max
                                           ? shard::ReductionKind::Max
                                           : shard::ReductionKind::Sum);
}

Value Partitioner::lowerStep(const BoxingStep &step, Value value,
                             PlacementAttr placement, Location loc) {
  FlatSymbolRefAttr grid = gridOf(placement);
  DenseI16ArrayAttr gridAxes =
      builder.getDenseI16ArrayAttr({static_cast<int16_t>(step.axis)});
  int64_t group = placement.getHierarchyShape()[step.axis];
  SmallVector<int64_t, 2> at = coords.lookup(placement.onDevice());
  SbpAttr from = step.from, to = step.to;

  if (from.isPartial() && to.isBroadcast())
    return shard::AllReduceOp::create(builder, loc, step.result, grid, gridAxes,
                                      value, reductionOf(builder, from));
  if (from.isPartial() && to.isSplit())
    return shard::ReduceScatterOp::create(
        builder, loc, step.result, grid, gridAxes, value,
        reductionOf(builder, from), builder.getIndexAttr(to.getAxis()));
  if (from.isSplit() && to.isBroadcast())
    return shard::AllGatherOp::create(builder, loc, step.result, grid, gridAxes,
                                      value,
                                      builder.getIndexAttr(from.getAxis()));
  if (from.isSplit() && to.isSplit())
    // Each rank cuts its part along the new split dim and concatenates the
    // pieces it receives along the old one.
    return shard::AllToAllOp::create(builder, loc, step.result, grid, gridAxes,
                                     value, builder.getIndexAttr(to.getAxis()),
                                     builder.getIndexAttr(from.getAxis()));

  if (from.isBroadcast() && to.isSplit()) {
    int64_t dim = to.getAxis();
    int64_t size = step.input.getDimSize(dim);
    if (size % group == 0)
      return shard::AllSliceOp::create(builder, loc, step.result, grid,
                                       gridAxes, value,
                                       builder.getIndexAttr(dim));
    // Uneven, so rank=N (planning rejects it for SPMD): a static slice.
    SmallVector<int64_t> offsets(step.input.getRank(), 0);
    offsets[dim] = splitOffset(size, group, at[step.axis]);
    return nn::SliceOp::create(
        builder, loc, step.result, value, builder.getDenseI64ArrayAttr(offsets),
        builder.getDenseI64ArrayAttr(step.result.getShape()),
        /*strides=*/nullptr);
  }

  if (from.isBroadcast() && to.isPartial()) {
    // Equal copies already reduce to the value under max.
    if (to.getReduce() == ReduceKind::max)
      return value;
    // Under sum, rank 0 of the axis keeps the value and the others zero.
    if (!isSpmd())
      return at[step.axis] == 0 ? value : zeros(step.result, loc);
    return ToPartialOp::create(builder, loc, step.result, value,
                               builder.getI64IntegerAttr(step.axis),
                               /*split_axis=*/nullptr);
  }

  // S(d) -> P(sum): the local part in place, zeros around it.
  int64_t dim = from.getAxis();
  int64_t local = step.input.getDimSize(dim);
  int64_t whole = step.result.getDimSize(dim);
  if (!isSpmd()) {
    int64_t offset = splitOffset(whole, group, at[step.axis]);
    SmallVector<int64_t> low(step.input.getRank(), 0);
    SmallVector<int64_t> high(step.input.getRank(), 0);
    low[dim] = offset;
    high[dim] = whole - offset - local;
    return nn::PadOp::create(builder, loc, step.result, value,
                             builder.getDenseI64ArrayAttr(low),
                             builder.getDenseI64ArrayAttr(high));
  }
  return ToPartialOp::create(builder, loc, step.result, value,
                             builder.getI64IntegerAttr(step.axis),
                             builder.getI64IntegerAttr(dim));
}

void Partitioner::lowerCast(CastOp cast) {
  builder.setInsertionPoint(cast);
  PlacementAttr placement = cast.getTargetEncoding().getPlacement();
  Value value = cast.getInput();
  // What the cast becomes runs on the cast's pipeline stage.
  Operation *before = cast->getPrevNode(), *after = cast->getNextNode();
  Block *block = cast->getBlock();
  Attribute stage = cast->getAttr(nn::kPipelineStageAttr);
  // And in its chunk of the micro-batch loop, but for a receive, which
  // runs in the receiving stage's chunk.
  Attribute chunk = cast->getAttr(zerosbp::kLoopChunkAttr);
  Attribute receiveChunk = cast->getAttr(zerosbp::kLoopReceiveChunkAttr);
  llvm::scope_exit markStage([&] {
    Block::iterator first =
        before ? std::next(before->getIterator()) : block->begin();
    for (Operation &op : llvm::make_range(first, after->getIterator())) {
      if (stage && !op.hasAttr(nn::kPipelineStageAttr))
        op.setAttr(nn::kPipelineStageAttr, stage);
      if (chunk && !op.hasAttr(zerosbp::kLoopChunkAttr))
        op.setAttr(zerosbp::kLoopChunkAttr, chunk);
    }
  });
  PlacementAttr sourcePlacement =
      getGlobalEncoding(globalTypes.lookup(cast.getInput())).getPlacement();
  if (sourcePlacement.onDevice() != placement.onDevice()) {
    // A hop between pipeline stages (zero-pipeline-stages): each rank's
    // part goes as it is to the same place on the other stage's grid.
    auto stageOf = [&](PlacementAttr at) {
      return at.getRanks().front() / std::max<int64_t>(at.getNumRanks(), 1);
    };
    int64_t source = stageOf(sourcePlacement), target = stageOf(placement);
    RankedTensorType local = localType(cast.getInput());
    auto send = SendOp::create(builder, cast.getLoc(),
                               FutureType::get(builder.getContext(), {local}),
                               value, builder.getI64IntegerAttr(source),
                               builder.getI64IntegerAttr(target));
    auto recv = RecvOp::create(builder, cast.getLoc(), send.getMessage());
    // zero-schedule moves the receive to its first reader.
    recv->setAttr(nn::kPipelineStageAttr, builder.getI64IntegerAttr(target));
    if (receiveChunk)
      recv->setAttr(zerosbp::kLoopChunkAttr, receiveChunk);
    value = recv.getResult();
  }
  // The input's type is local by now; its global one was kept.
  MemoryKind from = getGlobalEncoding(globalTypes.lookup(cast.getInput()))
                        .getPlacement()
                        .getMemory();
  if (from != placement.getMemory()) {
    // Each rank moves its own part: an asynchronous transfer that
    // zero-schedule may start earlier.
    RankedTensorType local = localType(cast.getInput());
    auto start = TransferStartOp::create(
        builder, cast.getLoc(), FutureType::get(builder.getContext(), {local}),
        value, MemoryKindAttr::get(builder.getContext(), from),
        MemoryKindAttr::get(builder.getContext(), placement.getMemory()));
    value = TransferWaitOp::create(builder, cast.getLoc(), start.getFuture())
                .getResult();
  }
  for (const BoxingStep &step : castPlans.lookup(cast))
    value = lowerStep(step, value, placement, cast.getLoc());
  // Later ops read their operands' global types.
  if (value != cast.getInput())
    globalTypes[value] = cast.getType();
  cast.getResult().replaceAllUsesWith(value);
  cast.erase();
}

LogicalResult Partitioner::rewriteOp(Operation &op) {
  for (OpResult result : op.getResults())
    if (globalTypes.count(result))
      result.setType(localType(result));

  // Sources keep their global type in this pass's attribute, for checkpoints
  // and the plan; other ops rewrite their own attributes that refer to global
  // sizes (docs/ir.md#the-local-view).
  if (isa<nn::VariableOp, nn::InputOp>(op))
    op.setAttr(kGlobalTypeAttr,
               TypeAttr::get(globalTypes.lookup(op.getResult(0))));
  // Results off the device keep their memory kind (zero-offload).
  std::optional<MemoryKind> memory;
  for (OpResult result : op.getResults()) {
    RankedTensorType type = globalTypes.lookup(result);
    if (!type)
      continue;
    MemoryKind kind = getGlobalEncoding(type).getPlacement().getMemory();
    if (memory && *memory != kind)
      return op.emitOpError("has results in two memory kinds, ")
             << stringifyMemoryKind(*memory) << " and "
             << stringifyMemoryKind(kind);
    memory = kind;
  }
  if (memory && *memory != MemoryKind::device)
    op.setAttr(zerosbp::kMemoryKindAttr,
               MemoryKindAttr::get(op.getContext(), *memory));
  if (auto sbpOp = dyn_cast<SbpOpInterface>(op))
    sbpOp.localizeAttrs([&](Value value) { return globalTypes.lookup(value); },
                        builder);

  // The local op must still be well formed.
  if (auto reshape = dyn_cast<nn::ReshapeOp>(op)) {
    RankedTensorType input = reshape.getInput().getType();
    RankedTensorType result = reshape.getResult().getType();
    if (input.getNumElements() != result.getNumElements())
      return op.emitOpError("has no local form: this rank holds ")
             << input << " but would reshape it to " << result
             << "; an uneven split does not survive the reshape";
  }
  if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> inferred;
    if (failed(infer.inferReturnTypes(
            op.getContext(), op.getLoc(), op.getOperands(),
            op.getRawDictionaryAttrs(), op.getPropertiesStorage(),
            op.getRegions(), inferred)))
      return op.emitOpError("has no valid local form on this rank's shapes");
    if (!infer.isCompatibleReturnTypes(inferred, op.getResultTypes())) {
      InFlightDiagnostic diag =
          op.emitOpError("has no local form: its local results would be ");
      llvm::interleaveComma(inferred, diag);
      diag << ", not the split of its global results ";
      llvm::interleaveComma(op.getResultTypes(), diag);
      return diag;
    }
  }
  return success();
}

LogicalResult Partitioner::rewriteFunc(func::FuncOp func) {
  Block &block = func.getBody().front();
  // Every placement of the graph gets its grid, in the order of first use,
  // whether a collective needs it or not: the plan reads the placements
  // from the grids.
  auto makeGrid = [&](Value value) {
    if (RankedTensorType type = globalTypes.lookup(value))
      (void)gridOf(getGlobalEncoding(type).getPlacement());
  };
  llvm::for_each(block.getArguments(), makeGrid);
  for (Operation &op : block)
    llvm::for_each(op.getResults(), makeGrid);

  for (BlockArgument argument : block.getArguments())
    if (globalTypes.count(argument))
      argument.setType(localType(argument));
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto cast = dyn_cast<CastOp>(op)) {
      lowerCast(cast);
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    if (failed(rewriteOp(op)))
      return failure();
  }
  for (Operation *fill : fills)
    if (fill->use_empty())
      fill->erase();
  fills.clear();
  func.setFunctionType(builder.getFunctionType(
      block.getArgumentTypes(), block.getTerminator()->getOperandTypes()));
  if (!isSpmd())
    func->setAttr(kRankAttr, builder.getI64IntegerAttr(rank));
  return success();
}

LogicalResult Partitioner::run() {
  if (rank < -1)
    return module.emitError("zero-partition: rank must be -1 (the SPMD "
                            "program) or a rank of the placement, got ")
           << rank;
  SmallVector<func::FuncOp> funcs;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (failed(checkFunc(func)))
      return failure();
    funcs.push_back(func);
  }
  for (func::FuncOp func : funcs)
    if (failed(rewriteFunc(func)))
      return failure();
  return success();
}

namespace {
struct ZeroPartitionPass
    : public zerosbp::impl::ZeroPartitionBase<ZeroPartitionPass> {
  using ZeroPartitionBase::ZeroPartitionBase;
  void runOnOperation() override {
    if (failed(Partitioner(getOperation(), rank).run()))
      signalPassFailure();
  }
};
} // namespace
