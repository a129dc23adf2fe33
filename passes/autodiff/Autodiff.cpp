//===- Autodiff.cpp - zero-autodiff ---------------------------------------===//
//
// Reverse-mode differentiation of a forward graph. The backward ops go after
// the forward ops and before the return, which still returns the loss; each
// trainable parameter that reaches the loss gets one `nn.gradient`, in the
// order the parameters are declared.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"
#include "llvm/ADT/ScopeExit.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROAUTODIFF
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

static bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// The loss: the function's only result, a 0-D float tensor.
static FailureOr<Value> getLoss(func::FuncOp func) {
  ArrayRef<Type> results = func.getResultTypes();
  auto type = results.size() == 1 ? dyn_cast<RankedTensorType>(results[0])
                                  : RankedTensorType();
  if (type && type.getRank() == 0 && isa<FloatType>(type.getElementType()))
    return func.getBody().front().getTerminator()->getOperand(0);
  std::string returned;
  llvm::raw_string_ostream os(returned);
  llvm::interleaveComma(results, os);
  return func.emitError("zero-autodiff: function '")
         << func.getSymName()
         << "' must return exactly one 0-D float tensor (the loss), but "
            "returns ("
         << returned << ")";
}

namespace {
/// The loss gradient of each forward value, summed over its uses.
class GradientMap {
public:
  explicit GradientMap(OpBuilder &builder) : builder(builder) {}

  /// The sum of `value`'s contributions, built at the first lookup: every
  /// use of a value is differentiated before the value's own producer.
  Value lookup(Value value) {
    auto it = parts.find(value);
    if (it == parts.end())
      return {};
    if (it->second.size() > 1)
      it->second = {sum(it->second)};
    return it->second.front();
  }

  /// Under a micro-batch loop, a parameter's gradient over the whole step:
  /// each stage adds its contributions, in order, to a running total that
  /// a fill makes zero before the loop and that each micro-batch carries
  /// on (`zero.loop_carried`); the stages' totals are summed after the
  /// loop. The sums and their order are those `sum` builds over copies.
  Value lookupOverLoop(Value value) {
    auto it = parts.find(value);
    if (it == parts.end())
      return {};
    SmallVector<Value, 1> grads = it->second;
    llvm::stable_sort(grads, [&](Value a, Value b) {
      return markOf(a, nn::kPipelineStageAttr) <
             markOf(b, nn::kPipelineStageAttr);
    });
    SmallVector<Value> totals;
    for (size_t first = 0; first < grads.size();) {
      int64_t stage = markOf(grads[first], nn::kPipelineStageAttr);
      Value zero = nn::FillOp::create(builder, grads[first].getLoc(),
                                      grads[first].getType(),
                                      builder.getF64FloatAttr(0.0));
      if (stage >= 0)
        zero.getDefiningOp()->setAttr(nn::kPipelineStageAttr,
                                      builder.getI64IntegerAttr(stage));
      SmallVector<Value> sum = {zero};
      for (; first < grads.size() &&
             markOf(grads[first], nn::kPipelineStageAttr) == stage;
           ++first)
        sum.push_back(grads[first]);
      totals.push_back(chain(sum, /*pipelined=*/stage >= 0, /*carried=*/true));
    }
    return chain(totals, /*pipelined=*/true);
  }

  /// Adds one use's contribution; a value used several times (a tied
  /// embedding and LM head) gets the sum.
  void accumulate(Value value, Value grad) {
    SmallVector<Value, 1> &sofar = parts[value];
    sofar.push_back(grad);
    // Without pipeline stages the running total grows as the uses are
    // differentiated, so that each contribution dies at once.
    if (sofar.size() > 1 && !isPipelined(sofar))
      sofar = {sum(sofar)};
  }

private:
  static int64_t markOf(Value grad, StringRef name) {
    return zerosbp::pipelineMark(grad.getDefiningOp(), name);
  }
  static bool isPipelined(ArrayRef<Value> grads) {
    return llvm::any_of(grads, [&](Value grad) {
      return markOf(grad, nn::kPipelineStageAttr) >= 0;
    });
  }

  /// total = grads[0] + grads[1] + ..., left to right. Pipelined, each
  /// add runs on the stage of its running total, with the micro-batch that
  /// completes it when both sides are on one stage. Carried, each add is a
  /// micro-batch loop's running total (zero.loop_carried) and runs in the
  /// loop, with its contribution's micro-batch (0 when it has none).
  Value chain(ArrayRef<Value> grads, bool pipelined, bool carried = false) {
    Value total = grads.front();
    for (Value grad : grads.drop_front()) {
      int64_t totalStage = markOf(total, nn::kPipelineStageAttr);
      auto add = nn::AddOp::create(builder, grad.getLoc(), total, grad);
      add->setAttr(zerosbp::kGradSumAttr, builder.getUnitAttr());
      if (pipelined) {
        add->setAttr(nn::kPipelineStageAttr,
                     builder.getI64IntegerAttr(totalStage));
        int64_t microBatch = markOf(grad, nn::kMicroBatchAttr);
        if (totalStage == markOf(grad, nn::kPipelineStageAttr) &&
            microBatch >= 0)
          add->setAttr(nn::kMicroBatchAttr,
                       builder.getI64IntegerAttr(microBatch));
      }
      if (carried) {
        add->setAttr(zerosbp::kLoopCarriedAttr, builder.getUnitAttr());
        add->setAttr(nn::kMicroBatchAttr,
                     builder.getI64IntegerAttr(std::max<int64_t>(
                         0, markOf(grad, nn::kMicroBatchAttr))));
      }
      total = add;
    }
    return total;
  }

  /// Adds `grads` (in the order their uses were differentiated). Under
  /// pipeline parallelism each stage first sums its own in micro-batch
  /// order, so that the total grows as the schedule runs the backwards
  /// and crosses stages once (docs/design.md#pipeline-parallelism).
  Value sum(SmallVector<Value, 1> grads) {
    bool pipelined = isPipelined(grads);
    if (!pipelined)
      return chain(grads, /*pipelined=*/false);
    llvm::stable_sort(grads, [&](Value a, Value b) {
      return std::make_pair(markOf(a, nn::kPipelineStageAttr),
                            markOf(a, nn::kMicroBatchAttr)) <
             std::make_pair(markOf(b, nn::kPipelineStageAttr),
                            markOf(b, nn::kMicroBatchAttr));
    });
    // One running total per stage, then the totals summed on the earliest
    // stage: a stage's contributions cross to it once.
    SmallVector<Value> totals;
    for (size_t first = 0; first < grads.size();) {
      size_t end = first;
      while (end < grads.size() &&
             markOf(grads[end], nn::kPipelineStageAttr) ==
                 markOf(grads[first], nn::kPipelineStageAttr))
        ++end;
      totals.push_back(chain(ArrayRef<Value>(grads).slice(first, end - first),
                             /*pipelined=*/true));
      first = end;
    }
    return chain(totals, /*pipelined=*/true);
  }

  OpBuilder &builder;
  DenseMap<Value, SmallVector<Value, 1>> parts;
};
} // namespace

/// A gradient has its value's shape and element type, without the SBP
/// encoding.
static bool hasGradientType(Value grad, Value value) {
  auto gradType = dyn_cast<RankedTensorType>(grad.getType());
  auto valueType = dyn_cast<RankedTensorType>(value.getType());
  return gradType && valueType && gradType.getShape() == valueType.getShape() &&
         gradType.getElementType() == valueType.getElementType() &&
         !gradType.getEncoding();
}

/// Turns the gradients of `op`'s results into gradients of its operands.
static LogicalResult backpropagate(Operation *op, OpBuilder &builder,
                                   GradientMap &grads) {
  SmallVector<Value> resultGrads = llvm::map_to_vector(
      op->getResults(), [&](Value result) { return grads.lookup(result); });
  if (llvm::all_of(resultGrads, [](Value grad) { return !grad; }))
    return success();
  auto differentiable = dyn_cast<nn::GradientOpInterface>(op);
  if (!differentiable) {
    // Sources (variables, inputs, fills) and integer-only ops end the walk.
    if (llvm::none_of(op->getOperands(), isFloatTensor))
      return success();
    return op->emitOpError(
        "has no gradient (GradientOpInterface), but the loss depends on it");
  }
  SmallVector<Value> operandGrads;
  // The ops built from here to the end of this function are `op`'s
  // gradient: they run on its pipeline stage, for its micro-batch.
  Operation *before = builder.getInsertionPoint()->getPrevNode();
  llvm::scope_exit copyMarks(
      [&] { zerosbp::copyPipelineMarks(op, before, builder); });
  if (failed(differentiable.buildGradients(builder, resultGrads, operandGrads)))
    return failure();
  if (operandGrads.size() != op->getNumOperands())
    return op->emitOpError("built ")
           << operandGrads.size() << " operand gradients for "
           << op->getNumOperands() << " operands";
  for (auto [index, operand, grad] :
       llvm::enumerate(op->getOperands(), operandGrads)) {
    if (!grad)
      continue;
    if (!hasGradientType(grad, operand))
      return op->emitOpError("built a gradient of type ")
             << grad.getType() << " for operand #" << index << " of type "
             << operand.getType();
    grads.accumulate(operand, grad);
  }
  return success();
}

/// One `nn.gradient` per trainable parameter that reaches the loss, in
/// declaration order.
static void emitParameterGradients(ArrayRef<Operation *> forward,
                                   OpBuilder &builder, GradientMap &grads,
                                   bool overLoop) {
  for (Operation *op : forward) {
    auto variable = dyn_cast<nn::VariableOp>(op);
    if (!variable || variable.getRole() != sbp::Role::param ||
        variable.getFrozen())
      continue;
    if (Value grad = overLoop ? grads.lookupOverLoop(variable.getResult())
                              : grads.lookup(variable.getResult()))
      nn::GradientOp::create(builder, variable.getLoc(), variable.getName(),
                             grad);
  }
}

/// Erases the backward ops nothing consumes: interfaces build a gradient for
/// every operand, graph inputs and frozen parameters included.
static void eraseDeadBackwardOps(Operation *first, Operation *terminator) {
  SmallVector<Operation *> backward;
  for (Operation *op = first; op != terminator; op = op->getNextNode())
    backward.push_back(op);
  // Users come after their operands: erasing in reverse frees whole chains.
  for (Operation *op : llvm::reverse(backward))
    if (isOpTriviallyDead(op))
      op->erase();
}

namespace {
struct ZeroAutodiffPass
    : public zerosbp::impl::ZeroAutodiffBase<ZeroAutodiffPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("zero-autodiff: function '")
          << func.getSymName() << "' must have a single block";
      return signalPassFailure();
    }
    if (failed(differentiate(func)))
      signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp func) {
    FailureOr<Value> loss = getLoss(func);
    if (failed(loss))
      return failure();
    Block &body = func.getBody().front();
    if (!body.getOps<nn::GradientOp>().empty())
      return func.emitError("zero-autodiff: function '")
             << func.getSymName() << "' already has nn.gradient ops";

    SmallVector<Operation *> forward = llvm::map_to_vector(
        body.without_terminator(), [](Operation &op) { return &op; });
    Operation *terminator = body.getTerminator();
    OpBuilder builder(terminator);
    GradientMap grads(builder);
    auto lossType = cast<RankedTensorType>(loss->getType());
    // d loss / d loss = 1.
    Value seed =
        nn::FillOp::create(builder, loss->getLoc(),
                           RankedTensorType::get({}, lossType.getElementType()),
                           builder.getF64FloatAttr(1.0));
    // zero-amp finds the seed by this mark to apply the loss scale.
    seed.getDefiningOp()->setAttr(zerosbp::kLossSeedAttr,
                                  builder.getUnitAttr());
    grads.accumulate(*loss, seed);
    bool overLoop = func->hasAttr(zerosbp::kMicroBatchLoopAttr);
    for (Operation *op : llvm::reverse(forward)) {
      // A parameter's contributions stay apart until the loop sums them.
      if (overLoop && isa<nn::VariableOp>(op))
        continue;
      if (failed(backpropagate(op, builder, grads)))
        return failure();
    }
    emitParameterGradients(forward, builder, grads, overLoop);
    eraseDeadBackwardOps(seed.getDefiningOp(), terminator);
    return success();
  }
};

} // namespace
