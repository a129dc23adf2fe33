//===- FuseEpilogues.cpp - zero-fuse-epilogues ----------------------------===//
//
// A 2-D matmul whose only reader adds a bias becomes nn.matmul_bias, and one
// whose biased result only feeds a GELU becomes nn.matmul_bias_gelu: the
// GEMM's epilogue adds the bias and applies GELU as it writes the result, so
// the product is written once instead of three times (docs/design.md#fusion).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROFUSEEPILOGUES
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

/// The sole reader of `value` when it is an OpTy; else null.
template <typename OpTy> OpTy soleReader(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  return dyn_cast<OpTy>(*value.getUsers().begin());
}

/// Whether `a` and `b` run on one pipeline stage: an epilogue does not fuse
/// across a stage boundary.
bool sameStage(Operation *a, Operation *b) {
  return a->getAttr(nn::kPipelineStageAttr) ==
         b->getAttr(nn::kPipelineStageAttr);
}

/// Fuses the epilogue of `matmul`, if it has one; returns whether it did.
bool fuseEpilogue(nn::MatmulOp matmul) {
  auto biasAdd = soleReader<nn::BiasAddOp>(matmul.getResult());
  if (!biasAdd || biasAdd.getInput() != matmul.getResult() ||
      !sameStage(matmul, biasAdd))
    return false;
  // The bias must exist where the fused op goes, at the bias_add.
  OpBuilder builder(biasAdd);
  Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
  Value bias = biasAdd.getBias();
  UnitAttr ta = matmul.getTransposeLhsAttr(), tb = matmul.getTransposeRhsAttr();
  auto gelu = soleReader<nn::GeluOp>(biasAdd.getResult());
  if (gelu && !sameStage(biasAdd, gelu))
    gelu = nullptr;
  Operation *last = gelu ? gelu.getOperation() : biasAdd.getOperation();
  builder.setInsertionPoint(last);
  Operation *fused;
  if (gelu) {
    auto op = nn::MatmulBiasGeluOp::create(builder, last->getLoc(), lhs, rhs,
                                           bias, ta, tb);
    gelu.getResult().replaceAllUsesWith(op.getResult());
    fused = op;
  } else {
    auto op = nn::MatmulBiasOp::create(builder, last->getLoc(), lhs, rhs, bias,
                                       ta, tb);
    biasAdd.getResult().replaceAllUsesWith(op.getResult());
    fused = op;
  }
  // Segment marks (activation checkpointing) and the like carry over.
  fused->setDiscardableAttrs(last->getDiscardableAttrDictionary());
  if (gelu)
    gelu.erase();
  biasAdd.erase();
  matmul.erase();
  return true;
}

struct ZeroFuseEpiloguesPass
    : public zerosbp::impl::ZeroFuseEpiloguesBase<ZeroFuseEpiloguesPass> {
  void runOnOperation() override {
    SmallVector<nn::MatmulOp> matmuls;
    getOperation().walk([&](nn::MatmulOp op) { matmuls.push_back(op); });
    for (nn::MatmulOp matmul : matmuls)
      fuseEpilogue(matmul);
  }
};

} // namespace
