//===- SbpPropagation.cpp - zero-sbp-propagation --------------------------===//
//
// Gives every value of a graph an SBP and inserts the casts (boxing) where
// an op's chosen signature disagrees with its operands. Greedy in op order:
// each op takes the legal signature whose operand casts move the fewest
// bytes, which for a data-parallel graph keeps activations split on the
// batch and leaves weight gradients as partial sums.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"

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
  LogicalResult annotateReturn(func::ReturnOp op);
  Role resultRole(Operation *op, unsigned index);

  SbpAttr broadcast() { return SbpAttr::getBroadcast(func.getContext()); }

  func::FuncOp func;
  PlacementAttr placement;
  OpBuilder builder;
  /// Values an optimizer update consumes as its gradient.
  llvm::DenseSet<Value> gradients;
  llvm::StringMap<nn::VariableOp> variables;
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

LogicalResult Propagation::annotateSource(Operation *op) {
  Value result = op->getResult(0);
  auto type = cast<RankedTensorType>(result.getType());
  if (getGlobalEncoding(type))
    return success();
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
    // Fewest bytes moved, then fewest casts (a free slice still costs a
    // copy and usually a gather later), then the first listed.
    const SbpSignature *best = nullptr;
    std::pair<double, int> bestCost = {std::numeric_limits<double>::infinity(),
                                       0};
    for (const SbpSignature &signature : signatures) {
      std::pair<double, int> cost = {0, 0};
      for (auto [index, encoding] : llvm::enumerate(operandEncodings)) {
        auto type =
            cast<RankedTensorType>(operation->getOperand(index).getType());
        SbpAttr from = encoding.getSbp()[axis];
        cost.first += boxingBytes(from, signature.operands[index],
                                  tensorBytes(type), hierarchy[axis]);
        cost.second += from != signature.operands[index];
      }
      if (pinned && signature.operands[*pinned] !=
                        operandEncodings[*pinned].getSbp()[axis])
        continue;
      if (cost < bestCost) {
        best = &signature;
        bestCost = cost;
      }
    }
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
    operation->setOperand(
        index, castTo(builder, operation->getLoc(), operand, wanted));
  }
  for (auto [index, result] : llvm::enumerate(operation->getResults())) {
    SmallVector<SbpAttr> sbp;
    for (const SbpSignature *signature : chosen)
      sbp.push_back(signature->results[index]);
    result.setType(globalTensorType(cast<RankedTensorType>(result.getType()),
                                    sbp, placement,
                                    resultRole(operation, index)));
  }
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
    LogicalResult result = success();
    if (isa<nn::VariableOp, nn::InputOp, nn::FillOp, nn::StepOp>(op))
      result = annotateSource(&op);
    else if (isa<CastOp>(op))
      continue;
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
