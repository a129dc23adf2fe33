//===- FuseAccumulation.cpp - zero-fuse-accumulation ----------------------===//
//
// A gradient's running total plus a weight-gradient product becomes one
// nn.matmul_add: the GEMM adds the product to the total as it writes it
// (cuBLAS's C with beta = 1; Megatron's gradient accumulation fusion), so
// the product is neither written nor read back (docs/design.md#fusion).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROFUSEACCUMULATION
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

/// `value`'s producer when it is a matmul that only `add` reads.
nn::MatmulOp soleProduct(Value value, nn::AddOp add) {
  auto matmul = value.getDefiningOp<nn::MatmulOp>();
  if (!matmul || !value.hasOneUse() ||
      matmul->getAttr(nn::kPipelineStageAttr) !=
          add->getAttr(nn::kPipelineStageAttr))
    return nullptr;
  return matmul;
}

/// Each op's place in the block as the pass found it; a fused op takes
/// its product's. (Read once: erasing ops would make isBeforeInBlock
/// renumber the block at every query.)
using Places = DenseMap<Operation *, int64_t>;

/// Whether `value` exists before `op` runs.
bool availableBefore(Value value, Operation *op, const Places &places) {
  Operation *producer = value.getDefiningOp();
  return !producer || places.lookup(producer) < places.lookup(op);
}

/// Folds the product that `add`, a gradient sum, adds to its running total
/// into one nn.matmul_add at the product's place; returns whether it did.
/// Where both operands are products (the first two contributions), the
/// later one takes the earlier as its addend, so the sum's order stays.
bool fuseSum(nn::AddOp add, Places &places) {
  Type type = add.getResult().getType();
  if (add.getLhs().getType() != type || add.getRhs().getType() != type)
    return false;
  for (auto [product, total] : {std::pair(add.getRhs(), add.getLhs()),
                                std::pair(add.getLhs(), add.getRhs())}) {
    nn::MatmulOp matmul = soleProduct(product, add);
    if (!matmul || !availableBefore(total, matmul, places))
      continue;
    OpBuilder builder(matmul);
    auto fused = nn::MatmulAddOp::create(
        builder, add.getLoc(), type, matmul.getLhs(), matmul.getRhs(), total,
        matmul.getTransposeLhsAttr(), matmul.getTransposeRhsAttr());
    // The sum's marks (a gradient sum, its stage and micro-batch).
    for (NamedAttribute attr : add->getDiscardableAttrs())
      fused->setAttr(attr.getName(), attr.getValue());
    places[fused] = places.lookup(matmul);
    add.getResult().replaceAllUsesWith(fused.getResult());
    add.erase();
    matmul.erase();
    return true;
  }
  return false;
}

struct ZeroFuseAccumulationPass
    : public zerosbp::impl::ZeroFuseAccumulationBase<ZeroFuseAccumulationPass> {
  void runOnOperation() override {
    SmallVector<nn::AddOp> sums;
    Places places;
    getOperation().walk([&](Operation *op) {
      places[op] = places.size();
      if (auto add = dyn_cast<nn::AddOp>(op);
          add && add->hasAttr(zerosbp::kGradSumAttr))
        sums.push_back(add);
    });
    for (nn::AddOp add : sums)
      fuseSum(add, places);
  }
};

} // namespace
