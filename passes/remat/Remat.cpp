//===- Remat.cpp - zero-remat ---------------------------------------------===//
//
// Activation checkpointing by recomputation (docs/design.md#activation-
// checkpointing). The forward ops of a checkpointed segment carry
// `zero.checkpoint = N`. Values a segment produces that only the backward
// reads (not a later forward op) are recomputed right before the first
// backward op that reads them, by copies of the segment's ops; the backward
// then reads the copies. The forward values die after their last forward
// use, so a segment keeps only its inputs and outputs between the forward
// and the backward. The copies compute the same ops on the same inputs
// (dropout with the same step and attributes), so the results are the same
// bit for bit.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/OpCost.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROREMAT
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

/// The ops of one recomputed unit: a segment's ops that are connected by
/// their values. zero-accumulate copies a segment once per micro-batch;
/// each copy is its own unit, recomputed where its own backward needs it.
using Unit = SmallVector<Operation *>;

/// Marks the copies, so that their own reads are not redirected.
constexpr llvm::StringLiteral kRecomputedAttr = "zero.recomputed";

SmallVector<Unit> unitsOf(ArrayRef<Operation *> forward) {
  llvm::MapVector<int64_t, SmallVector<Operation *>> segments;
  for (Operation *op : forward)
    if (auto id = op->getAttrOfType<IntegerAttr>(nn::kCheckpointAttr))
      segments[id.getInt()].push_back(op);
  SmallVector<Unit> units;
  for (auto &[id, ops] : segments) {
    llvm::EquivalenceClasses<Operation *> classes;
    llvm::SmallPtrSet<Operation *, 32> members(ops.begin(), ops.end());
    for (Operation *op : ops) {
      classes.insert(op);
      for (Value operand : op->getOperands())
        if (Operation *producer = operand.getDefiningOp();
            producer && members.contains(producer))
          classes.unionSets(op, producer);
    }
    llvm::MapVector<Operation *, Unit> byLeader;
    for (Operation *op : ops)
      byLeader[classes.getLeaderValue(op)].push_back(op);
    for (auto &[leader, unit] : byLeader)
      units.push_back(std::move(unit));
  }
  return units;
}

struct ZeroRematPass : public zerosbp::impl::ZeroRematBase<ZeroRematPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    // The forward ends at the seed of the backward.
    Operation *seed = nullptr;
    for (Operation &op : body)
      if (op.hasAttr(zerosbp::kLossSeedAttr)) {
        seed = &op;
        break;
      }
    SmallVector<Operation *> forward;
    for (Operation &op : body) {
      if (&op == seed)
        break;
      forward.push_back(&op);
    }
    if (seed)
      for (Unit &unit : unitsOf(forward))
        recompute(unit, seed);
    // What the recomputation costs, for the compile report.
    double flops = 0;
    body.walk([&](Operation *op) {
      if (op->hasAttr(kRecomputedAttr))
        flops += zerosbp::matmulFlops(op);
    });
    func->setAttr(zerosbp::kRecomputeFlopsAttr,
                  FloatAttr::get(Float64Type::get(func.getContext()), flops));
    // The marks have done their job; copies and originals alike.
    body.walk([](Operation *op) {
      op->removeAttr(nn::kCheckpointAttr);
      op->removeAttr(kRecomputedAttr);
    });
  }

  /// Recomputes what the backward (the ops after `seed`) reads of `unit`'s
  /// values.
  void recompute(const Unit &unit, Operation *seed) {
    llvm::SmallPtrSet<Operation *, 32> members(unit.begin(), unit.end());
    auto isBackward = [&](Operation *user) {
      return seed->isBeforeInBlock(user);
    };
    // A value that a later forward op outside the unit reads is the unit's
    // output, kept anyway; the others the backward reads are recomputed.
    auto isOutput = [&](Value value) {
      return llvm::any_of(value.getUsers(), [&](Operation *user) {
        return !isBackward(user) && !members.contains(user);
      });
    };
    llvm::SetVector<Value> recomputed;
    for (Operation *op : unit)
      for (Value result : op->getResults())
        if (!isOutput(result) && llvm::any_of(result.getUsers(), isBackward))
          recomputed.insert(result);
    if (recomputed.empty())
      return;
    // The ops that recompute them: their producers within the unit, back to
    // the unit's inputs and outputs.
    llvm::SmallPtrSet<Operation *, 32> needed;
    SmallVector<Value> work(recomputed.begin(), recomputed.end());
    while (!work.empty()) {
      Operation *producer = work.pop_back_val().getDefiningOp();
      if (!producer || !members.contains(producer) ||
          !needed.insert(producer).second)
        continue;
      for (Value operand : producer->getOperands())
        if (!isOutput(operand))
          work.push_back(operand);
    }
    // Right before the first backward op that reads one of them.
    Operation *first = nullptr;
    for (Value value : recomputed)
      for (Operation *user : value.getUsers())
        if (isBackward(user) && (!first || user->isBeforeInBlock(first)))
          first = user;
    OpBuilder builder(first);
    IRMapping mapping;
    for (Operation *op : unit)
      if (needed.contains(op))
        builder.clone(*op, mapping)
            ->setAttr(kRecomputedAttr, builder.getUnitAttr());
    for (Value value : recomputed)
      value.replaceUsesWithIf(mapping.lookup(value), [&](OpOperand &use) {
        return isBackward(use.getOwner()) &&
               !use.getOwner()->hasAttr(kRecomputedAttr);
      });
  }
};

} // namespace
