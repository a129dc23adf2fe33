//===- ZeroStage.cpp - zero-stage -----------------------------------------===//
//
// The ZeRO rewrite on a propagated data-parallel graph
// (docs/design.md#zero-stages-and-their-formulas). A partitioned tensor is
// flattened, padded to a multiple of the rank count and held S(0) on every
// hierarchy axis, so each rank owns an equal, contiguous shard; partitioning
// is per tensor, in graph order, the same on every rank.
//
//   stage 1: optimizer states are shards; the update runs on shards: the
//            gradient is reduce-scattered just before it and the updated
//            parameter all-gathered after it.
//   stage 2: as stage 1, but each gradient is reduce-scattered as soon as
//            backward has produced it, so the full gradient dies there.
//   stage 3: parameters are shards too: every use, forward or backward,
//            all-gathers its own copy, and the update writes the shard.
//
// MiCS (`mics-shard-size`): on a 2-D placement [nodes, m] the shards are
// `[B, S(0)]`, split over the m ranks of a node and replicated across
// nodes, padded to a multiple of m (docs/design.md#hierarchical-zero).
// hpZ (`hpz-partition-size`, stage 3): shards stay split over every rank,
// and the forward's gather of a parameter also keeps its `[B, S(0)]` slice,
// a secondary shard the backward gathers from within the node.
//
// Tensor parallelism: a variable captured split on a model axis keeps its
// model part there; its shard is a `(parts, n)` tensor, row t the model part
// t flattened and padded, split over the other (data) axes
// (docs/design.md#zero-on-the-data-axis).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROSTAGE
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

/// Where a variable captured split on a model axis (tensor parallelism) is
/// cut: hierarchy axis `axis` splits its dim `dim` into `parts` equal parts.
struct ModelSplit {
  int64_t axis = -1, dim = 0, parts = 1;
  explicit operator bool() const { return axis >= 0; }
  bool operator==(const ModelSplit &other) const {
    return axis == other.axis && dim == other.dim && parts == other.parts;
  }
};

class StageRewriter {
public:
  StageRewriter(func::FuncOp func, int64_t stage, int64_t shardMinSize,
                int64_t persistenceThreshold, int64_t micsShardSize,
                int64_t hpzPartitionSize)
      : func(func), builder(func.getContext()), stage(stage),
        shardMinSize(shardMinSize), persistenceThreshold(persistenceThreshold),
        micsShardSize(micsShardSize), hpzPartitionSize(hpzPartitionSize) {}

  LogicalResult run();

private:
  /// Elements of one model part of a tensor (the whole tensor when it is
  /// not model-split), padded to a multiple of the ranks that share it.
  int64_t paddedSize(int64_t numel, ModelSplit split) const {
    int64_t ranks = shardRanks / split.parts;
    int64_t part = numel / split.parts;
    return (part + ranks - 1) / ranks * ranks;
  }
  /// The SBP of a shard: S(0) on every axis, or MiCS's [B, S(0)]; a model
  /// split keeps its rows on the model axis and splits them elsewhere.
  SmallVector<SbpAttr> shardSbp(ModelSplit split) const {
    MLIRContext *context = builder.getContext();
    if (micsShardSize > 0)
      return {SbpAttr::getBroadcast(context), SbpAttr::getSplit(context, 0)};
    if (!split)
      return uniformSbp(SbpAttr::getSplit(context, 0), placement);
    SmallVector<SbpAttr> sbp =
        uniformSbp(SbpAttr::getSplit(context, 1), placement);
    sbp[split.axis] = SbpAttr::getSplit(context, 0);
    return sbp;
  }
  /// The SBP of a whole (gathered) tensor: Broadcast, but for the model
  /// axis of a split one, which keeps its rows.
  SmallVector<SbpAttr> wholeSbp(ModelSplit split) const {
    MLIRContext *context = builder.getContext();
    SmallVector<SbpAttr> sbp =
        uniformSbp(SbpAttr::getBroadcast(context), placement);
    if (split)
      sbp[split.axis] = SbpAttr::getSplit(context, 0);
    return sbp;
  }
  /// Checks that the placement is [nodes, `size`], for the `option`'s
  /// groups.
  LogicalResult checkGroupedPlacement(StringRef option, int64_t size);
  bool isPartitioned(RankedTensorType type) const {
    return type.getNumElements() >= std::max<int64_t>(shardMinSize, 1);
  }
  bool isParamPartitioned(RankedTensorType type) const {
    return stage >= 3 && isPartitioned(type) &&
           type.getNumElements() >= persistenceThreshold;
  }

  RankedTensorType flatType(RankedTensorType type, Role role, ModelSplit split);
  /// reshape -> pad -> cast to the shard SBP: the shard of `value` on this
  /// rank.
  Value toShard(Location loc, Value value, Role role, ModelSplit split);
  /// cast to the whole SBP -> slice -> reshape: the model tensor from
  /// shards.
  Value fromShard(Location loc, Value shard, RankedTensorType logicalType,
                  Role role, ModelSplit split);
  /// slice -> reshape: the model tensor of a whole flat one.
  Value toLogical(Location loc, Value whole, RankedTensorType logicalType,
                  Role role, ModelSplit split);
  /// A model-split `value` (S(dim) on the model axis) as `(parts, n)` rows
  /// of role `role`, row t its part t flattened; and back.
  Value toModelRows(Location loc, Value value, ModelSplit split, Role role);
  Value fromModelRows(Location loc, Value rows, RankedTensorType logicalType,
                      Role role, ModelSplit split);
  /// The model split of a captured variable, or failure (with an error) for
  /// a layout the rewrite cannot partition.
  FailureOr<ModelSplit> modelSplitOf(nn::VariableOp variable);
  ModelSplit splitOf(nn::VariableOp variable) const {
    return modelSplits.lookup(variable);
  }
  void partitionVariable(nn::VariableOp variable);
  /// Computes again, for the backward, what the forward computed from
  /// `param` by recomputable ops alone (a reshape, a split of q, k and v),
  /// so that the backward reads the parameter itself and gathers it again.
  void recomputeForBackward(nn::VariableOp param);
  void gatherUses(nn::VariableOp param, RankedTensorType logicalType);
  LogicalResult rewriteUpdate(nn::OptimizerUpdateOpInterface update);
  /// Points the assigns that store `oldValue` (directly, through SBP casts,
  /// or narrowed by an nn.cast) at `shard`, gathering it back where the
  /// variable is not partitioned.
  LogicalResult routeToAssigns(Value oldValue, Value shard);

  func::FuncOp func;
  OpBuilder builder;
  int64_t stage, shardMinSize, persistenceThreshold, micsShardSize,
      hpzPartitionSize;
  PlacementAttr placement;
  /// The ranks a shard is split over: all of them, or a MiCS group.
  int64_t shardRanks = 1;
  llvm::StringMap<nn::VariableOp> variables;
  /// The forward pass: every op the returned loss depends on.
  llvm::DenseSet<Operation *> forward;
  /// Logical (model) types of the variables this pass partitioned.
  llvm::DenseMap<Operation *, RankedTensorType> logicalTypes;
  /// The captured model splits, by variable.
  llvm::DenseMap<Operation *, ModelSplit> modelSplits;
};

} // namespace

RankedTensorType StageRewriter::flatType(RankedTensorType type, Role role,
                                         ModelSplit split) {
  int64_t padded = paddedSize(type.getNumElements(), split);
  SmallVector<int64_t, 2> shape{padded};
  if (split)
    shape.insert(shape.begin(), split.parts);
  return globalTensorType(RankedTensorType::get(shape, type.getElementType()),
                          shardSbp(split), placement, role);
}

LogicalResult StageRewriter::checkGroupedPlacement(StringRef option,
                                                   int64_t size) {
  SmallVector<int64_t, 2> hierarchy = placement.getHierarchyShape();
  if (hierarchy.size() == 2 && hierarchy[1] == size)
    return success();
  std::string shape;
  llvm::raw_string_ostream os(shape);
  llvm::interleave(hierarchy, os, "x");
  return func.emitError("zero-stage: ")
         << option << "=" << size << " needs a 2-D placement [nodes, " << size
         << "] (zero-sbp-propagation's group-size makes one); @"
         << func.getName() << " is placed on " << shape;
}

/// `value` with the same SBP (its model-axis split renumbered to `dim`)
/// and role `role`, retyped to `shape`.
static RankedTensorType retyped(Value value, ArrayRef<int64_t> shape,
                                ModelSplit split, int64_t dim, Role role) {
  auto type = cast<RankedTensorType>(value.getType());
  GlobalTensorAttr encoding = getGlobalEncoding(type).withRole(role);
  if (split) {
    SmallVector<SbpAttr> sbp(encoding.getSbp());
    sbp[split.axis] = SbpAttr::getSplit(type.getContext(), dim);
    encoding = encoding.withSbp(sbp);
  }
  return RankedTensorType::get(shape, type.getElementType(), encoding);
}

/// `sbp` with every split made Broadcast.
static SmallVector<SbpAttr> withoutSplits(ArrayRef<SbpAttr> sbp) {
  SmallVector<SbpAttr> result(sbp);
  for (SbpAttr &entry : result)
    if (entry.isSplit())
      entry = SbpAttr::getBroadcast(entry.getContext());
  return result;
}

Value StageRewriter::toModelRows(Location loc, Value value, ModelSplit split,
                                 Role role) {
  auto type = cast<RankedTensorType>(value.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t numel = type.getNumElements();
  SmallVector<int64_t, 2> rows{split.parts, numel / split.parts};
  if (split.dim == 0)
    return nn::ReshapeOp::create(builder, loc,
                                 retyped(value, rows, split, 0, role), value);
  // Cut the split dim in two, (parts, size / parts), and move the parts to
  // the front: locally a reshape and a transpose of a unit dim.
  SmallVector<int64_t> cut(shape.take_front(split.dim));
  cut.push_back(split.parts);
  cut.push_back(shape[split.dim] / split.parts);
  llvm::append_range(cut, shape.drop_front(split.dim + 1));
  Value result = nn::ReshapeOp::create(
      builder, loc, retyped(value, cut, split, split.dim, role), value);
  SmallVector<int64_t> permutation{split.dim};
  SmallVector<int64_t> moved{split.parts};
  for (int64_t i = 0; i < (int64_t)cut.size(); ++i)
    if (i != split.dim) {
      permutation.push_back(i);
      moved.push_back(cut[i]);
    }
  result = nn::TransposeOp::create(
      builder, loc, retyped(result, moved, split, 0, role), result,
      builder.getDenseI64ArrayAttr(permutation));
  return nn::ReshapeOp::create(builder, loc,
                               retyped(result, rows, split, 0, role), result);
}

Value StageRewriter::fromModelRows(Location loc, Value rows,
                                   RankedTensorType logicalType, Role role,
                                   ModelSplit split) {
  ArrayRef<int64_t> shape = logicalType.getShape();
  if (split.dim == 0)
    return nn::ReshapeOp::create(
        builder, loc, retyped(rows, shape, split, split.dim, role), rows);
  SmallVector<int64_t> moved{split.parts};
  llvm::append_range(moved, shape.take_front(split.dim));
  moved.push_back(shape[split.dim] / split.parts);
  llvm::append_range(moved, shape.drop_front(split.dim + 1));
  Value result = nn::ReshapeOp::create(
      builder, loc, retyped(rows, moved, split, 0, role), rows);
  // The inverse of toModelRows's permutation.
  SmallVector<int64_t> permutation;
  SmallVector<int64_t> cut;
  for (int64_t i = 1; i <= split.dim; ++i) {
    permutation.push_back(i);
    cut.push_back(moved[i]);
  }
  permutation.push_back(0);
  cut.push_back(split.parts);
  for (int64_t i = split.dim + 1; i < (int64_t)moved.size(); ++i) {
    permutation.push_back(i);
    cut.push_back(moved[i]);
  }
  result = nn::TransposeOp::create(
      builder, loc, retyped(result, cut, split, split.dim, role), result,
      builder.getDenseI64ArrayAttr(permutation));
  return nn::ReshapeOp::create(
      builder, loc, retyped(result, shape, split, split.dim, role), result);
}

Value StageRewriter::toShard(Location loc, Value value, Role role,
                             ModelSplit split) {
  auto type = cast<RankedTensorType>(value.getType());
  GlobalTensorAttr encoding = getGlobalEncoding(type);
  int64_t numel = type.getNumElements();
  Value result = value;
  if (split) {
    // The model axis holds the variable's part; other axes stay as they are
    // (Broadcast, or a partial sum for a gradient).
    // A value split on another axis (a gradient the backward left split
    // over the data axis) is gathered there first: the rows are cut from
    // whole model parts.
    SmallVector<SbpAttr> sbp = withoutSplits(encoding.getSbp());
    sbp[split.axis] = SbpAttr::getSplit(builder.getContext(), split.dim);
    result = castTo(builder, loc, result, sbp);
    result = toModelRows(loc, result, split, role);
  } else if (type.getRank() != 1 || encoding.getRole() != role) {
    // Flattening keeps no split; one the backward left (a gradient split
    // over the model axis) is gathered first.
    result = castTo(builder, loc, result, withoutSplits(encoding.getSbp()));
    result = nn::ReshapeOp::create(
        builder, loc,
        RankedTensorType::get(
            {numel}, type.getElementType(),
            getGlobalEncoding(result.getType()).withRole(role)),
        result);
  }
  auto rowsType = cast<RankedTensorType>(result.getType());
  int64_t length = rowsType.getShape().back();
  if (int64_t padding = paddedSize(numel, split) - length) {
    SmallVector<int64_t, 2> shape(rowsType.getShape());
    shape.back() += padding;
    SmallVector<int64_t, 2> low(shape.size(), 0), high(shape.size(), 0);
    high.back() = padding;
    result =
        nn::PadOp::create(builder, loc,
                          RankedTensorType::get(shape, type.getElementType(),
                                                rowsType.getEncoding()),
                          result, builder.getDenseI64ArrayAttr(low),
                          builder.getDenseI64ArrayAttr(high));
  }
  return castTo(builder, loc, result, shardSbp(split));
}

Value StageRewriter::fromShard(Location loc, Value shard,
                               RankedTensorType logicalType, Role role,
                               ModelSplit split) {
  Value whole = castTo(builder, loc, shard, wholeSbp(split));
  return toLogical(loc, whole, logicalType, role, split);
}

Value StageRewriter::toLogical(Location loc, Value whole,
                               RankedTensorType logicalType, Role role,
                               ModelSplit split) {
  auto wholeType = cast<RankedTensorType>(whole.getType());
  auto encoding = getGlobalEncoding(wholeType).withRole(role);
  int64_t numel = logicalType.getNumElements();
  int64_t length = numel / split.parts;
  if (paddedSize(numel, split) != length) {
    SmallVector<int64_t, 2> shape(wholeType.getShape());
    shape.back() = length;
    SmallVector<int64_t, 2> offsets(shape.size(), 0);
    whole = nn::SliceOp::create(
        builder, loc,
        RankedTensorType::get(shape, logicalType.getElementType(), encoding),
        whole, builder.getDenseI64ArrayAttr(offsets),
        builder.getDenseI64ArrayAttr(shape), /*strides=*/nullptr);
  }
  if (split)
    return fromModelRows(loc, whole, logicalType, role, split);
  if (logicalType.getRank() != 1)
    whole = nn::ReshapeOp::create(
        builder, loc,
        RankedTensorType::get(logicalType.getShape(),
                              logicalType.getElementType(), encoding),
        whole);
  return whole;
}

void StageRewriter::partitionVariable(nn::VariableOp variable) {
  if (logicalTypes.count(variable))
    return;
  auto type = cast<RankedTensorType>(variable.getResult().getType());
  logicalTypes[variable] = type;
  ModelSplit split = splitOf(variable);
  variable.getResult().setType(flatType(type, variable.getRole(), split));
  variable.setLogicalShapeAttr(builder.getDenseI64ArrayAttr(type.getShape()));
  if (split)
    variable.setModelSplitAttr(
        builder.getDenseI64ArrayAttr({split.axis, split.dim}));
}

void StageRewriter::recomputeForBackward(nn::VariableOp param) {
  // The forward ops that compute from the parameter through recomputable
  // ops only.
  llvm::SetVector<Operation *> chain;
  auto fromParam = [&](Value value) {
    Operation *producer = value.getDefiningOp();
    return value == param.getResult() || (producer && chain.contains(producer));
  };
  SmallVector<Operation *> worklist(param.getResult().getUsers());
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (chain.contains(op) || !forward.contains(op) ||
        !isa<nn::RecomputableOpInterface>(op) ||
        !llvm::all_of(op->getOperands(), fromParam))
      continue;
    chain.insert(op);
    for (Value result : op->getResults())
      llvm::append_range(worklist, result.getUsers());
  }
  SmallVector<OpOperand *> reads;
  Operation *first = nullptr;
  for (Operation *op : chain)
    for (Value result : op->getResults())
      for (OpOperand &use : result.getUses()) {
        Operation *user = use.getOwner();
        if (forward.contains(user) ||
            isa<nn::OptimizerUpdateOpInterface, nn::AssignOp>(user))
          continue;
        reads.push_back(&use);
        if (!first || user->isBeforeInBlock(first))
          first = user;
      }
  if (!first)
    return;
  SmallVector<Operation *> ordered(chain.begin(), chain.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  builder.setInsertionPoint(first);
  IRMapping copies;
  for (Operation *op : ordered)
    builder.clone(*op, copies);
  for (OpOperand *use : reads)
    use->set(copies.lookup(use->get()));
}

void StageRewriter::gatherUses(nn::VariableOp param,
                               RankedTensorType logicalType) {
  // One gather serves the forward uses and another the backward uses, each
  // placed before the first use of its phase (ZeRO-3's fetch before forward
  // and again before backward); liveness frees each after its last use.
  SmallVector<OpOperand *> phaseUses[2];
  for (OpOperand &use : param.getResult().getUses()) {
    Operation *user = use.getOwner();
    if (isa<nn::OptimizerUpdateOpInterface, nn::AssignOp>(user))
      continue;
    phaseUses[forward.contains(user) ? 0 : 1].push_back(&use);
  }
  // hpZ: the forward's gathered copy leaves a [B, S(0)] slice behind (no
  // communication), and the backward gathers that within the node.
  Value secondary;
  for (auto [phase, uses] : llvm::enumerate(phaseUses)) {
    if (uses.empty())
      continue;
    Operation *first = uses.front()->getOwner();
    for (OpOperand *use : uses)
      if (use->getOwner()->isBeforeInBlock(first))
        first = use->getOwner();
    builder.setInsertionPoint(first);
    Location loc = first->getLoc();
    MLIRContext *context = builder.getContext();
    ModelSplit split = splitOf(param);
    Value whole =
        castTo(builder, loc, secondary ? secondary : param.getResult(),
               wholeSbp(split));
    if (phase == 0 && hpzPartitionSize > 0 && !phaseUses[1].empty())
      secondary = castTo(
          builder, loc, whole,
          {SbpAttr::getBroadcast(context), SbpAttr::getSplit(context, 0)});
    Value gathered = toLogical(loc, whole, logicalType, Role::param, split);
    for (OpOperand *use : uses)
      use->set(gathered);
  }
}

/// The value `operand` had before propagation cast it for its consumer.
static Value uncast(Value operand) {
  if (auto cast = operand.getDefiningOp<CastOp>())
    return cast.getInput();
  return operand;
}

LogicalResult StageRewriter::routeToAssigns(Value oldValue, Value shard) {
  for (OpOperand &use : llvm::make_early_inc_range(oldValue.getUses())) {
    Operation *user = use.getOwner();
    while (isa<CastOp>(user) && user->hasOneUse())
      user = *user->getUsers().begin();
    // Mixed precision: the parameter is the master narrowed; narrow the
    // shard instead, so only half-precision bytes are gathered.
    if (auto narrow = dyn_cast<nn::CastOp>(user)) {
      builder.setInsertionPoint(narrow);
      auto shardType = cast<RankedTensorType>(shard.getType());
      auto encoding = getGlobalEncoding(shardType).withRole(Role::param);
      Value narrowed = nn::CastOp::create(
          builder, narrow.getLoc(),
          RankedTensorType::get(shardType.getShape(),
                                narrow.getResult().getType().getElementType(),
                                encoding),
          shard);
      if (failed(routeToAssigns(narrow.getResult(), narrowed)))
        return failure();
      continue;
    }
    auto assign = dyn_cast<nn::AssignOp>(user);
    if (!assign)
      return user->emitOpError(
          "uses an optimizer result in a way zero-stage does not understand");
    nn::VariableOp target = variables.lookup(assign.getName());
    if (!target)
      return assign.emitOpError("names no variable");
    builder.setInsertionPoint(assign);
    Value value = shard;
    if (!logicalTypes.count(target))
      value = fromShard(assign.getLoc(), shard,
                        cast<RankedTensorType>(target.getResult().getType()),
                        target.getRole(), splitOf(target));
    assign.getValueMutable().assign(value);
  }
  return success();
}

/// Erases the users of `op`'s results that (once their own dead users are
/// gone) have no uses left, so that `op` can be erased without leaving
/// operands that point at it.
static void eraseDeadUsers(Operation *op) {
  for (Value result : op->getResults())
    for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
      eraseDeadUsers(user);
      if (user->use_empty())
        user->erase();
    }
}

LogicalResult
StageRewriter::rewriteUpdate(nn::OptimizerUpdateOpInterface update) {
  Value paramValue = update.getParameter();
  auto param = paramValue.getDefiningOp<nn::VariableOp>();
  if (!param)
    return update->emitOpError("updates a value that is not a variable; "
                               "zero-stage expects zero-optimizer's output");
  auto logicalType = logicalTypes.count(param)
                         ? logicalTypes[param]
                         : cast<RankedTensorType>(paramValue.getType());
  if (!isPartitioned(logicalType))
    return success();

  Location loc = update->getLoc();
  // The gradient: the partial sum, before propagation's all-reduce.
  Value partialGrad = uncast(update.getGradient());
  if (Operation *producer = partialGrad.getDefiningOp(); producer && stage >= 2)
    builder.setInsertionPointAfter(producer);
  else
    builder.setInsertionPoint(update);
  ModelSplit split = splitOf(param);
  Value gradShard = toShard(loc, partialGrad, Role::grad, split);

  // An fp32 master weight is optimizer state: stage 1 splits it.
  if (param.getRole() == Role::master)
    partitionVariable(param);
  builder.setInsertionPoint(update);
  Value paramShard = logicalTypes.count(param)
                         ? param.getResult()
                         : toShard(loc, paramValue, Role::param, split);
  // The update again, on the shards: the parameter, the gradient and the
  // states are replaced; other operands (the step counter) pass through.
  SmallVector<Value> operands(update->getOperands());
  SmallVector<Type> resultTypes(update->getResultTypes());
  operands[update.getParameterMutable().getOperandNumber()] = paramShard;
  operands[update.getGradientMutable().getOperandNumber()] = gradShard;
  resultTypes[update.getUpdatedParameter().getResultNumber()] =
      paramShard.getType();
  for (auto [operand, result] :
       llvm::zip_equal(update.getStatesMutable(), update.getUpdatedStates())) {
    auto variable = operand.get().getDefiningOp<nn::VariableOp>();
    if (!variable || variable.getRole() != Role::opt_state)
      return update->emitOpError("zero-stage: operand ")
             << operand.getOperandNumber()
             << " is not an opt_state variable; zero-stage expects "
                "zero-optimizer's output";
    if (!(splitOf(variable) == split))
      return update->emitOpError("zero-stage: state '")
             << variable.getName()
             << "' is laid out unlike its parameter on the model axis";
    partitionVariable(variable);
    operands[operand.getOperandNumber()] = variable.getResult();
    resultTypes[result.getResultNumber()] = variable.getResult().getType();
  }

  OperationState state(loc, update->getName());
  state.addOperands(operands);
  state.addAttributes(update->getAttrs());
  state.addTypes(resultTypes);
  Operation *sharded = builder.create(state);

  for (auto [index, result] : llvm::enumerate(update->getResults()))
    if (failed(routeToAssigns(result, sharded->getResult(index))))
      return failure();
  // The casts routeToAssigns looked through now feed nothing; they still
  // read the old results, so they go before the update does.
  eraseDeadUsers(update);
  // Erasing an op that is still read would leave dangling operands (no
  // assertion catches it in a release LLVM).
  if (!update->use_empty())
    return update->emitOpError(
        "zero-stage: a result is still read after the rewrite");
  update->erase();
  return success();
}

FailureOr<ModelSplit> StageRewriter::modelSplitOf(nn::VariableOp variable) {
  GlobalTensorAttr encoding = getGlobalEncoding(variable.getResult().getType());
  ModelSplit split;
  if (!encoding)
    return split;
  auto describe = [&]() {
    return (stringifyRole(variable.getRole()) + " variable '" +
            variable.getName() + "' is captured " +
            sbpString(encoding.getSbp()))
        .str();
  };
  SmallVector<int64_t, 2> hierarchy =
      encoding.getPlacement().getHierarchyShape();
  for (auto [axis, sbp] : llvm::enumerate(encoding.getSbp())) {
    if (sbp.isBroadcast())
      continue;
    if (!sbp.isSplit() || split)
      return variable.emitError("zero-stage: ")
             << describe()
             << "; at stages 1-3 a variable is Broadcast, or split on one "
                "model axis (tensor parallelism) and Broadcast on the others";
    split =
        ModelSplit{static_cast<int64_t>(axis), sbp.getAxis(), hierarchy[axis]};
  }
  if (!split)
    return split;
  if (micsShardSize > 0 || (hpzPartitionSize > 0 && stage >= 3))
    return variable.emitError("zero-stage: ")
           << describe() << "; MiCS and hpZ make their own 2-D placement and "
           << "do not compose with a model axis (use mics-shard-size=0 and "
              "hpz-partition-size=0)";
  int64_t size = cast<RankedTensorType>(variable.getResult().getType())
                     .getDimSize(split.dim);
  if (size % split.parts != 0)
    return variable.emitError("zero-stage: ")
           << describe() << "; its dim " << split.dim << " (" << size
           << ") does not divide by the " << split.parts << " ranks of axis "
           << split.axis
           << ", and ZeRO over the other axes needs equal model parts";
  return split;
}

/// Drops the casts, reshapes and pads the rewrite left without users.
static void eraseDeadOps(func::FuncOp func) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(func.getBody().front()))) {
      if (op.use_empty() && op.getNumResults() > 0 && isPure(&op) &&
          !isa<nn::VariableOp, nn::InputOp>(op)) {
        op.erase();
        changed = true;
      }
    }
  }
}

LogicalResult StageRewriter::run() {
  if (stage < 0 || stage > 3)
    return func.emitError("zero-stage: stage must be 0, 1, 2 or 3, got ")
           << stage;
  if (shardMinSize < 0 || persistenceThreshold < 0)
    return func.emitError(
        "zero-stage: shard-min-size and persistence-threshold must be "
        "non-negative");
  if (micsShardSize < 0 || hpzPartitionSize < 0)
    return func.emitError("zero-stage: mics-shard-size and "
                          "hpz-partition-size must be non-negative");
  // A variable captured split is the user's layout (tensor parallelism,
  // docs/design.md#tensor-parallelism): at stage 0 every op computes on it
  // by its SBP signatures; stages 1-3 partition its model part over the
  // other axes.
  if (stage > 0)
    for (auto variable : func.getOps<nn::VariableOp>()) {
      FailureOr<ModelSplit> split = modelSplitOf(variable);
      if (failed(split))
        return failure();
      if (*split)
        modelSplits[variable] = *split;
    }
  func->setAttr(kStageAttr, builder.getI64IntegerAttr(stage));
  if (stage == 0)
    return success();

  SmallVector<nn::VariableOp> params;
  for (auto variable : func.getOps<nn::VariableOp>()) {
    variables[variable.getName()] = variable;
    GlobalTensorAttr encoding =
        getGlobalEncoding(variable.getResult().getType());
    if (!encoding)
      return variable.emitOpError(
          "has no SBP; run zero-sbp-propagation before zero-stage");
    if (!placement)
      placement = encoding.getPlacement();
    if (variable.getRole() == Role::param)
      params.push_back(variable);
  }
  if (!placement)
    return success();
  shardRanks = placement.getNumRanks();
  if (micsShardSize > 0) {
    if (failed(checkGroupedPlacement("mics-shard-size", micsShardSize)))
      return failure();
    shardRanks = micsShardSize;
  }
  if (hpzPartitionSize > 0 && stage >= 3 &&
      failed(checkGroupedPlacement("hpz-partition-size", hpzPartitionSize)))
    return failure();

  if (stage >= 3) {
    SmallVector<Operation *> worklist;
    for (Value result : func.getBody().front().getTerminator()->getOperands())
      if (Operation *producer = result.getDefiningOp())
        worklist.push_back(producer);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!forward.insert(op).second)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *producer = operand.getDefiningOp())
          worklist.push_back(producer);
    }
    for (nn::VariableOp param : params) {
      auto type = cast<RankedTensorType>(param.getResult().getType());
      if (!isParamPartitioned(type))
        continue;
      recomputeForBackward(param);
      partitionVariable(param);
      gatherUses(param, type);
    }
  }
  for (nn::OptimizerUpdateOpInterface update : collectOptimizerUpdates(func))
    if (failed(rewriteUpdate(update)))
      return failure();
  eraseDeadOps(func);
  return success();
}

namespace {
struct ZeroStagePass : public zerosbp::impl::ZeroStageBase<ZeroStagePass> {
  using ZeroStageBase::ZeroStageBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (failed(StageRewriter(func, stage, shardMinSize, persistenceThreshold,
                             micsShardSize, hpzPartitionSize)
                   .run()))
      signalPassFailure();
  }
};
} // namespace
