//===- RecomputeCheap.cpp - zero-recompute-cheap --------------------------===//
//
// A forward value the backward reads is kept from the forward to the
// backward. When it is one pass over values the backward keeps anyway (GELU
// of a pre-activation, a layer norm of its input, a transpose), computing it
// again right before its first backward read costs that pass and frees its
// bytes for the whole time between (docs/design.md#fusion).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZERORECOMPUTECHEAP
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

/// How deep a chain of recomputations may go (a reshape of a transpose).
constexpr int kMaxDepth = 3;

struct ZeroRecomputeCheapPass
    : public zerosbp::impl::ZeroRecomputeCheapBase<ZeroRecomputeCheapPass> {
  using ZeroRecomputeCheapBase::ZeroRecomputeCheapBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    // The forward ends at the seed of the backward; an inference graph has
    // none.
    seed = nullptr;
    for (Operation &op : body)
      if (op.hasAttr(zerosbp::kLossSeedAttr)) {
        seed = &op;
        break;
      }
    if (!seed)
      return;
    SmallVector<OpResult> candidates;
    for (Operation &op : body) {
      if (&op == seed)
        break;
      if (isa<nn::RecomputableOpInterface>(op))
        for (OpResult result : op.getResults())
          candidates.push_back(result);
    }
    for (OpResult result : candidates) {
      if (!kept(result) || !recomputable(result, 0))
        continue;
      Operation *first = nullptr;
      for (Operation *user : result.getUsers())
        if (isBackward(user) && (!first || user->isBeforeInBlock(first)))
          first = user;
      // A value the backward reads on another pipeline stage is sent there
      // once; computing it again there would need its inputs sent too.
      Attribute stage = result.getOwner()->getAttr(nn::kPipelineStageAttr);
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return isBackward(user) &&
                   user->getAttr(nn::kPipelineStageAttr) != stage;
          }))
        continue;
      OpBuilder builder(first);
      Value again = build(builder, result);
      result.replaceUsesWithIf(again, [&](OpOperand &use) {
        return isBackward(use.getOwner()) &&
               !use.getOwner()->isBeforeInBlock(first);
      });
    }
  }

private:
  bool isBackward(Operation *op) const { return seed->isBeforeInBlock(op); }

  /// Whole variables persist through the step; other values are kept when
  /// the backward reads them.
  bool kept(Value value) const {
    return (variablesPersist && value.getDefiningOp<nn::VariableOp>()) ||
           llvm::any_of(value.getUsers(),
                        [&](Operation *user) { return isBackward(user); });
  }

  /// Whether `result` can be computed from kept values by cheap ops only.
  bool recomputable(OpResult result, int depth) const {
    auto op = dyn_cast<nn::RecomputableOpInterface>(result.getOwner());
    if (!op || depth >= kMaxDepth)
      return false;
    SmallVector<Value> inputs = op.getRecomputeInputs(result);
    return !inputs.empty() && llvm::all_of(inputs, [&](Value input) {
      auto produced = dyn_cast<OpResult>(input);
      return kept(input) || (produced && recomputable(produced, depth + 1));
    });
  }

  /// Builds `result` again from kept values at the builder's point.
  Value build(OpBuilder &builder, OpResult result) const {
    auto op = cast<nn::RecomputableOpInterface>(result.getOwner());
    SmallVector<Value> inputs;
    for (Value input : op.getRecomputeInputs(result))
      inputs.push_back(kept(input) ? input
                                   : build(builder, cast<OpResult>(input)));
    Operation *before = builder.getInsertionPoint()->getPrevNode();
    Value again = op.buildRecompute(builder, result, inputs);
    // The copy runs on the original's pipeline stage, for its micro-batch.
    zerosbp::copyPipelineMarks(op, before, builder);
    return again;
  }

  Operation *seed = nullptr;
};

} // namespace
