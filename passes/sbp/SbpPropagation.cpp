//===- SbpPropagation.cpp - zero-sbp-propagation --------------------------===//
//
// Gives every value of a graph an SBP and inserts the casts (boxing) where
// an op's chosen signature disagrees with its operands. Greedy in op order:
// each op takes the legal signature whose operand casts move the fewest
// bytes, which for a data-parallel graph keeps activations split on the
// batch and leaves weight gradients as partial sums. Signatures that leave
// a rank an empty part of a tensor, or that move a parameter the user
// split on an axis (tensor parallelism), are taken only when nothing else
// is legal.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROSBPPROPAGATION
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

class Propagation {
public:
  Propagation(func::FuncOp func, PlacementAttr placement)
      : func(func), placement(placement), builder(func.getContext()) {}

  LogicalResult run();

private:
  LogicalResult annotateSource(Operation *op);
  LogicalResult annotateCompute(SbpOpInterface op);
  LogicalResult annotateAssign(nn::AssignOp op);
  LogicalResult annotateVocabParallelLoss(Operation *op);
  template <typename OpTy, typename... Args>
  FailureOr<OpTy> createAnnotated(Location loc, Args &&...args);
  LogicalResult annotateReturn(func::ReturnOp op);
  Role resultRole(Operation *op, unsigned index);

  SbpAttr broadcast() const {
    return SbpAttr::getBroadcast(placement.getContext());
  }
  Value castOnce(Location loc, Value value, ArrayRef<SbpAttr> sbp);
  bool hasCast(Value value, ArrayRef<const SbpSignature *> chosen,
               unsigned index, SbpAttr entry) const;
  double partialSumDebt(ArrayRef<GlobalTensorAttr> operands,
                        const SbpSignature &signature,
                        ArrayRef<double> operandBytes,
                        ArrayRef<double> resultBytes, int64_t axis) const;
  bool isPinned(Value value, int64_t axis) const {
    return pinnedAxes.lookup(value) & (1u << axis);
  }

  func::FuncOp func;
  PlacementAttr placement;
  OpBuilder builder;
  /// Values an optimizer update consumes as its gradient.
  llvm::DenseSet<Value> gradients;
  llvm::StringMap<nn::VariableOp> variables;
  /// Per value, a bit per hierarchy axis on which it is a parameter the
  /// user split there, or computed from such parameters alone.
  llvm::DenseMap<Value, unsigned> pinnedAxes;
  /// The casts made of each value so far; a later op that wants the same
  /// layout reads the earlier cast instead of moving the bytes again.
  llvm::DenseMap<Value, SmallVector<Value, 1>> casts;
  /// The values computed from the loss seed (the gradients and what the
  /// backward computes from them).
  llvm::DenseSet<Value> fromSeed;
  /// Per (logits, labels) of a vocabulary-parallel loss, each row's max and
  /// its sums, made once for the loss and its gradient.
  llvm::DenseMap<std::pair<Value, Value>,
                 std::pair<Value, nn::CrossEntropySumsOp>>
      rowStats;
  /// The axes on which some parameter is pinned: the model axes.
  unsigned modelAxes = 0;
};

} // namespace

/// The placement of the graph: the one its annotated values share, or CPU
/// ranks 0..world-1 when none is annotated.
static FailureOr<PlacementAttr> findPlacement(func::FuncOp func,
                                              int64_t world) {
  PlacementAttr placement;
  WalkResult result = func.walk([&](Operation *op) {
    SmallVector<Value> values(op->getResults());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        llvm::append_range(values, block.getArguments());
    for (Value value : values) {
      GlobalTensorAttr encoding = getGlobalEncoding(value.getType());
      if (!encoding)
        continue;
      if (!placement) {
        placement = encoding.getPlacement();
        continue;
      }
      if (encoding.getPlacement() != placement) {
        op->emitError("zero-sbp-propagation needs one placement per graph; "
                      "found ")
            << placement << " and " << encoding.getPlacement();
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  if (world < 0)
    return func.emitError("zero-sbp-propagation: world must be positive, got ")
           << world;
  if (placement && world > 0 && placement.getNumRanks() != world)
    return func.emitError("zero-sbp-propagation: @")
           << func.getName() << " is placed on " << placement.getNumRanks()
           << " ranks but world=" << world;
  if (!placement && world > 0) {
    SmallVector<int64_t> ranks;
    for (int64_t rank = 0; rank < world; ++rank)
      ranks.push_back(rank);
    placement =
        PlacementAttr::get(func.getContext(), DeviceKind::cpu, ranks, {});
  }
  if (!placement)
    return func.emitError("zero-sbp-propagation: no value of @")
           << func.getName()
           << " has an #sbp.global encoding; annotate the inputs or "
              "variables with a placement, or pass world=N";
  return placement;
}

/// MiCS's and hpZ's placement: `placement`'s ranks as [nodes, shardSize]. The
/// values a 1-D graph annotates keep their SBP on both axes: a split over N
/// ranks is the same nested split over nodes x shardSize when it divides, and
/// the ranks keep their order.
static FailureOr<PlacementAttr> groupedPlacement(func::FuncOp func,
                                                 PlacementAttr placement,
                                                 int64_t shardSize) {
  SmallVector<int64_t, 2> hierarchy = placement.getHierarchyShape();
  int64_t ranks = placement.getNumRanks();
  if (hierarchy.size() == 2 && hierarchy[1] == shardSize)
    return placement;
  if (hierarchy.size() != 1 || ranks % shardSize != 0)
    return func.emitError("zero-sbp-propagation: group-size=")
           << shardSize << " must divide the ranks of a 1-D placement or be "
           << "the inner size of a 2-D one; @" << func.getName()
           << " is placed on " << placement;
  auto grid = PlacementAttr::get(
      func.getContext(), placement.getDevice(), placement.getRanks(),
      {ranks / shardSize, shardSize}, placement.getMemory());
  auto onGrid = [&](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    GlobalTensorAttr encoding = getGlobalEncoding(tensor);
    if (!encoding)
      return type;
    SbpAttr sbp = encoding.getSbp().front();
    return globalTensorType(
        RankedTensorType::get(tensor.getShape(), tensor.getElementType()),
        {sbp, sbp}, grid.withMemory(encoding.getPlacement().getMemory()),
        encoding.getRole());
  };
  for (BlockArgument argument : func.getArguments())
    argument.setType(onGrid(argument.getType()));
  func.walk([&](Operation *op) {
    for (Value result : op->getResults())
      result.setType(onGrid(result.getType()));
  });
  SmallVector<Type> results;
  for (Type type : func.getResultTypes())
    results.push_back(onGrid(type));
  func.setType(FunctionType::get(
      func.getContext(), func.getBody().front().getArgumentTypes(), results));
  return grid;
}

Role Propagation::resultRole(Operation *op, unsigned index) {
  // An update's results are the next values of its operands' variables.
  if (auto update = dyn_cast<nn::OptimizerUpdateOpInterface>(op)) {
    if (GlobalTensorAttr encoding = getGlobalEncoding(
            update.getUpdatedOperand(op->getResult(index)).get().getType()))
      return encoding.getRole();
  }
  if (gradients.contains(op->getResult(index)))
    return Role::grad;
  return Role::activation;
}

Value Propagation::castOnce(Location loc, Value value, ArrayRef<SbpAttr> sbp) {
  if (getGlobalEncoding(value.getType()).getSbp() == sbp)
    return value;
  SmallVector<Value, 1> &made = casts[value];
  for (Value cast : made)
    if (getGlobalEncoding(cast.getType()).getSbp() == sbp)
      return cast;
  made.push_back(castTo(builder, loc, value, sbp));
  return made.back();
}

/// Whether an earlier cast of operand `index` of the op being placed, a
/// value computed from the loss seed, has the layouts `chosen` on the axes
/// before this one and `entry` on it. Only such values count: which forward
/// values the backward reads, and which it computes again, depends on the
/// ZeRO stage (zero-recompute-cheap), and the layouts must not, or the
/// stages would sum in different orders.
bool Propagation::hasCast(Value value, ArrayRef<const SbpSignature *> chosen,
                          unsigned index, SbpAttr entry) const {
  if (!fromSeed.contains(value))
    return false;
  auto found = casts.find(value);
  if (found == casts.end())
    return false;
  return llvm::any_of(found->second, [&](Value cast) {
    ArrayRef<SbpAttr> sbp = getGlobalEncoding(cast.getType()).getSbp();
    for (auto [axis, signature] : llvm::enumerate(chosen))
      if (sbp[axis] != signature->operands[index])
        return false;
    return sbp[chosen.size()] == entry;
  });
}

/// On a model axis, what a signature that grows a partial sum owes: the
/// reduce-scatter that later ends each partial-sum result, less those of
/// the partial operands it consumes (`resultBytes` and `operandBytes`: each
/// value's bytes on one rank of this axis's group). Without it, a
/// signature that moves a small operand and leaves a large partial result
/// (a weight gradient summed over the model axis, an embedding gradient of
/// the whole vocabulary) looks cheapest, and so does the free cast of a
/// split value to a partial one. On a data axis, weight gradients are
/// partial sums whatever the signature, and the debt would only trade them
/// for redundant compute.
double Propagation::partialSumDebt(ArrayRef<GlobalTensorAttr> operands,
                                   const SbpSignature &signature,
                                   ArrayRef<double> operandBytes,
                                   ArrayRef<double> resultBytes,
                                   int64_t axis) const {
  if (!(modelAxes & (1u << axis)))
    return 0;
  int64_t group = placement.getHierarchyShape()[axis];
  // A reduce-scatter moves what an all-reduce moves in one of its halves.
  SbpAttr whole = broadcast();
  double debt = 0;
  for (auto [index, sbp] : llvm::enumerate(signature.results))
    if (sbp.isPartial())
      debt += boxingBytes(sbp, whole, resultBytes[index], group) / 2;
  for (auto [index, encoding] : llvm::enumerate(operands))
    if (SbpAttr sbp = encoding.getSbp()[axis]; sbp.isPartial())
      debt -= boxingBytes(sbp, whole, operandBytes[index], group) / 2;
  return std::max(debt, 0.0);
}

LogicalResult Propagation::annotateSource(Operation *op) {
  Value result = op->getResult(0);
  auto type = cast<RankedTensorType>(result.getType());
  if (GlobalTensorAttr encoding = getGlobalEncoding(type)) {
    if (isa<nn::VariableOp>(op) && encoding.getRole() == Role::param)
      for (auto [axis, sbp] : llvm::enumerate(encoding.getSbp()))
        if (sbp.isSplit())
          pinnedAxes[result] |= 1u << axis;
    modelAxes |= pinnedAxes.lookup(result);
    return success();
  }
  SbpAttr sbp = broadcast();
  Role role = Role::activation;
  if (auto variable = dyn_cast<nn::VariableOp>(op)) {
    role = variable.getRole();
  } else if (isa<nn::InputOp>(op)) {
    role = Role::input;
    if (type.getRank() > 0)
      sbp = SbpAttr::getSplit(op->getContext(), 0);
  }
  result.setType(
      globalTensorType(type, uniformSbp(sbp, placement), placement, role));
  return success();
}

LogicalResult Propagation::annotateCompute(SbpOpInterface op) {
  Operation *operation = op.getOperation();
  SmallVector<GlobalTensorAttr> operandEncodings;
  for (Value operand : operation->getOperands()) {
    GlobalTensorAttr encoding = getGlobalEncoding(operand.getType());
    if (!encoding)
      return operation->emitOpError(
          "operand has no SBP; its producer was not annotated");
    operandEncodings.push_back(encoding);
  }

  SmallVector<SbpSignature> signatures;
  op.getSbpSignatures(signatures);
  if (signatures.empty())
    return operation->emitOpError("lists no SBP signature");

  // An update runs where its parameter lives: the ZeRO stage, not a cost
  // model, decides to split optimizer state.
  std::optional<unsigned> pinned;
  if (auto update = dyn_cast<nn::OptimizerUpdateOpInterface>(operation))
    pinned = update.getParameterMutable().getOperandNumber();

  // Per hierarchy axis, the cheapest signature.
  int64_t numAxes = placement.getNumHierarchyAxes();
  SmallVector<int64_t, 2> hierarchy = placement.getHierarchyShape();
  SmallVector<const SbpSignature *, 2> chosen;
  for (int64_t axis = 0; axis < numAxes; ++axis) {
    // The SBP list a value gets on the axes chosen so far, with `entry` on
    // this one and B on the later ones.
    auto layoutWith = [&](auto pick, SbpAttr entry) {
      SmallVector<SbpAttr, 2> sbp;
      for (const SbpSignature *signature : chosen)
        sbp.push_back(pick(*signature));
      sbp.push_back(entry);
      sbp.resize(numAxes, broadcast());
      return sbp;
    };
    auto leavesNoRankEmpty = [&](Value value, ArrayRef<SbpAttr> sbp) {
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(value.getType()).getShape();
      SmallVector<int64_t> parts(shape.size(), 1);
      for (auto [axis, entry] : llvm::enumerate(sbp))
        if (entry.isSplit())
          parts[entry.getAxis()] *= hierarchy[axis];
      for (auto [size, count] : llvm::zip(shape, parts))
        if (size < count)
          return false;
      return true;
    };
    // A signature that splits a dim into more parts than it has elements
    // idles some ranks (and a micro-batch of one sequence has no batch to
    // split); another is taken where one is legal.
    auto fillsEveryRank = [&](const SbpSignature &signature) {
      for (auto [index, operand] : llvm::enumerate(operation->getOperands())) {
        if (signature.operands[index] == operandEncodings[index].getSbp()[axis])
          continue;
        auto pick = [&](const SbpSignature &s) { return s.operands[index]; };
        if (!leavesNoRankEmpty(operand,
                               layoutWith(pick, signature.operands[index])))
          return false;
      }
      for (auto [index, result] : llvm::enumerate(operation->getResults())) {
        auto pick = [&](const SbpSignature &s) { return s.results[index]; };
        if (!leavesNoRankEmpty(result,
                               layoutWith(pick, signature.results[index])))
          return false;
      }
      return true;
    };
    // Tensor parallelism: where a parameter was captured split on this
    // axis, it and what is computed from it alone stay as they are and the
    // activations move to them (docs/design.md#tensor-parallelism).
    auto keepsParameters = [&](const SbpSignature &signature) {
      for (auto [index, operand] : llvm::enumerate(operation->getOperands()))
        if (isPinned(operand, axis) &&
            signature.operands[index] != operandEncodings[index].getSbp()[axis])
          return false;
      return true;
    };
    // A value's bytes on one rank of this axis's group: the other axes'
    // splits divide it (the axes before this one as chosen, the later ones
    // as `later` has them, or whole).
    auto bytesOnAxis = [&](Value value, auto earlier,
                           GlobalTensorAttr later) -> double {
      double bytes = tensorBytes(cast<RankedTensorType>(value.getType()));
      for (int64_t k = 0; k < numAxes; ++k) {
        if (k == axis)
          continue;
        SbpAttr entry = k < axis ? earlier(k)
                        : later  ? later.getSbp()[k]
                                 : broadcast();
        if (entry.isSplit())
          bytes /= hierarchy[k];
      }
      return bytes;
    };
    SmallVector<double, 4> operandBytes;
    for (auto [index, operand] : llvm::enumerate(operation->getOperands()))
      operandBytes.push_back(bytesOnAxis(
          operand, [&](int64_t k) { return chosen[k]->operands[index]; },
          operandEncodings[index]));
    SmallVector<double, 2> resultBytes;
    for (auto [index, result] : llvm::enumerate(operation->getResults()))
      resultBytes.push_back(bytesOnAxis(
          result, [&](int64_t k) { return chosen[k]->results[index]; },
          /*later=*/nullptr));
    // Fewest bytes moved, then fewest casts (a free slice still costs a
    // copy and usually a gather later), then the first listed; among the
    // signatures that fill every rank and keep parameters in place when
    // there are any.
    auto cheapest = [&](bool needFill, bool needKeep) -> const SbpSignature * {
      const SbpSignature *best = nullptr;
      std::pair<double, int> bestCost = {
          std::numeric_limits<double>::infinity(), 0};
      for (const SbpSignature &signature : signatures) {
        if (pinned && signature.operands[*pinned] !=
                          operandEncodings[*pinned].getSbp()[axis])
          continue;
        if ((needKeep && !keepsParameters(signature)) ||
            (needFill && !fillsEveryRank(signature)))
          continue;
        std::pair<double, int> cost = {0, 0};
        for (auto [index, encoding] : llvm::enumerate(operandEncodings)) {
          SbpAttr from = encoding.getSbp()[axis];
          if (from == signature.operands[index] ||
              hasCast(operation->getOperand(index), chosen, index,
                      signature.operands[index]))
            continue;
          cost.first += boxingBytes(from, signature.operands[index],
                                    operandBytes[index], hierarchy[axis]);
          cost.second += 1;
        }
        cost.first += partialSumDebt(operandEncodings, signature, operandBytes,
                                     resultBytes, axis);
        if (cost < bestCost) {
          best = &signature;
          bestCost = cost;
        }
      }
      return best;
    };
    const SbpSignature *best = cheapest(true, true);
    if (!best)
      best = cheapest(true, false);
    // Otherwise the empty parts are reported where they are lowered, naming
    // the tensor.
    if (!best)
      best = cheapest(false, false);
    if (!best)
      return operation->emitOpError(
                 "no legal SBP signature reachable on hierarchy axis ")
             << axis;
    chosen.push_back(best);
  }

  builder.setInsertionPoint(operation);
  for (auto [index, operand] : llvm::enumerate(operation->getOperands())) {
    SmallVector<SbpAttr> wanted;
    for (const SbpSignature *signature : chosen)
      wanted.push_back(signature->operands[index]);
    operation->setOperand(index,
                          castOnce(operation->getLoc(), operand, wanted));
  }
  for (auto [index, result] : llvm::enumerate(operation->getResults())) {
    SmallVector<SbpAttr> sbp;
    for (const SbpSignature *signature : chosen)
      sbp.push_back(signature->results[index]);
    result.setType(globalTensorType(cast<RankedTensorType>(result.getType()),
                                    sbp, placement,
                                    resultRole(operation, index)));
  }
  // A view or slice of pinned parameters (a q/k/v part, a reshape, a
  // precision cast) stays where they are, as they do.
  if (operation->getNumOperands() == 0)
    return success();
  for (int64_t axis = 0; axis < numAxes; ++axis) {
    if (!llvm::all_of(operation->getOperands(),
                      [&](Value operand) { return isPinned(operand, axis); }))
      continue;
    for (Value result : operation->getResults())
      if (getGlobalEncoding(result.getType()).getSbp()[axis].isSplit())
        pinnedAxes[result] |= 1u << axis;
  }
  return success();
}

/// Whether `logits` are split on their class (last) dim on some axis.
static bool splitsClasses(Value logits) {
  GlobalTensorAttr encoding = getGlobalEncoding(logits.getType());
  if (!encoding)
    return false;
  int64_t classes = cast<RankedTensorType>(logits.getType()).getRank() - 1;
  return llvm::any_of(encoding.getSbp(), [&](SbpAttr sbp) {
    return sbp.isSplit() && sbp.getAxis() == classes;
  });
}

template <typename OpTy, typename... Args>
FailureOr<OpTy> Propagation::createAnnotated(Location loc, Args &&...args) {
  auto op = OpTy::create(builder, loc, std::forward<Args>(args)...);
  if (llvm::any_of(op->getOperands(),
                   [&](Value operand) { return fromSeed.contains(operand); }))
    fromSeed.insert(op->result_begin(), op->result_end());
  if (failed(annotateCompute(cast<SbpOpInterface>(op.getOperation()))))
    return failure();
  // The next op goes after this one and its casts.
  builder.setInsertionPointAfter(op);
  return op;
}

/// A cross entropy whose logits arrive split by class (a vocabulary-parallel
/// LM head) is computed where they lie, as Megatron does: each row's max is
/// a P(max) over the ranks that split the classes, its sum of exponentials
/// and its label's logit P(sum)s; all-reducing those rows, not gathering
/// the logits, completes the loss. The gradient reuses the forward's rows
/// and stays split as the logits are.
LogicalResult Propagation::annotateVocabParallelLoss(Operation *op) {
  Location loc = op->getLoc();
  builder.setInsertionPoint(op);
  auto forward = dyn_cast<nn::CrossEntropyOp>(op);
  auto backward = dyn_cast<nn::CrossEntropyGradOp>(op);
  Value logits = forward ? forward.getLogits() : backward.getLogits();
  Value labels = forward ? forward.getLabels() : backward.getLabels();
  auto [rows, made] = rowStats.try_emplace({logits, labels});
  if (made) {
    auto max = createAnnotated<nn::CrossEntropyMaxOp>(loc, logits);
    if (failed(max))
      return failure();
    auto sums = createAnnotated<nn::CrossEntropySumsOp>(
        loc, logits, max->getResult(), labels, /*global_shape=*/nullptr,
        /*split_dims=*/nullptr);
    if (failed(sums))
      return failure();
    rows->second = {max->getResult(), *sums};
  }
  auto [max, sums] = rows->second;
  Value replacement;
  if (forward) {
    auto loss = createAnnotated<nn::CrossEntropyLossOp>(
        loc, max, sums.getSumexp(), sums.getLabelLogit(), /*count=*/nullptr);
    if (failed(loss))
      return failure();
    replacement = loss->getResult();
  } else {
    auto grad = createAnnotated<nn::CrossEntropySplitGradOp>(
        loc, backward.getGradLoss(), logits, max, sums.getSumexp(), labels,
        /*count=*/nullptr, /*global_shape=*/nullptr, /*split_dims=*/nullptr,
        /*split_of=*/nullptr);
    if (failed(grad))
      return failure();
    replacement = grad->getResult();
  }
  op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
  return success();
}

LogicalResult Propagation::annotateAssign(nn::AssignOp op) {
  nn::VariableOp variable = variables.lookup(op.getName());
  if (!variable)
    return op.emitOpError("names no variable '") << op.getName() << "'";
  GlobalTensorAttr target = getGlobalEncoding(variable.getResult().getType());
  builder.setInsertionPoint(op);
  op.getValueMutable().assign(
      castTo(builder, op.getLoc(), op.getValue(), target.getSbp()));
  return success();
}

LogicalResult Propagation::annotateReturn(func::ReturnOp op) {
  // Graph results are read by the host: hand them back whole.
  builder.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands())
    operand.set(castTo(builder, op.getLoc(), operand.get(),
                       uniformSbp(broadcast(), placement)));
  func.setFunctionType(builder.getFunctionType(
      func.getArgumentTypes(), TypeRange(op.getOperandTypes())));
  return success();
}

LogicalResult Propagation::run() {
  func.walk([&](Operation *op) {
    if (auto update = dyn_cast<nn::OptimizerUpdateOpInterface>(op))
      gradients.insert(update.getGradient());
    if (auto variable = dyn_cast<nn::VariableOp>(op))
      variables[variable.getName()] = variable;
  });
  for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
    if (op.hasAttr(kLossSeedAttr) ||
        llvm::any_of(op.getOperands(),
                     [&](Value operand) { return fromSeed.contains(operand); }))
      fromSeed.insert(op.getResults().begin(), op.getResults().end());
    LogicalResult result = success();
    if (isa<nn::VariableOp, nn::InputOp, nn::FillOp, nn::StepOp>(op))
      result = annotateSource(&op);
    else if (isa<CastOp>(op))
      continue;
    else if (isa<nn::CrossEntropyOp, nn::CrossEntropyGradOp>(op) &&
             splitsClasses(op.getOperand(isa<nn::CrossEntropyOp>(op) ? 0 : 1)))
      result = annotateVocabParallelLoss(&op);
    else if (auto sbpOp = dyn_cast<SbpOpInterface>(op))
      result = annotateCompute(sbpOp);
    else if (auto assign = dyn_cast<nn::AssignOp>(op))
      result = annotateAssign(assign);
    else if (isa<nn::GradientOp>(op))
      continue;
    else if (auto ret = dyn_cast<func::ReturnOp>(op))
      result = annotateReturn(ret);
    else
      return op.emitOpError("has no SBP rule; zero-sbp-propagation cannot "
                            "place it");
    if (failed(result))
      return failure();
  }
  return success();
}

namespace {
struct ZeroSbpPropagationPass
    : public zerosbp::impl::ZeroSbpPropagationBase<ZeroSbpPropagationPass> {
  using ZeroSbpPropagationBase::ZeroSbpPropagationBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("zero-sbp-propagation expects a single-block graph");
      return signalPassFailure();
    }
    if (groupSize < 0) {
      func.emitError("zero-sbp-propagation: group-size must not be negative, "
                     "got ")
          << static_cast<int64_t>(groupSize);
      return signalPassFailure();
    }
    FailureOr<PlacementAttr> placement = findPlacement(func, world);
    if (succeeded(placement) && groupSize > 0)
      placement = groupedPlacement(func, *placement, groupSize);
    if (failed(placement) || failed(Propagation(func, *placement).run()))
      signalPassFailure();
  }
};
} // namespace
