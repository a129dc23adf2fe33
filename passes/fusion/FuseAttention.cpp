//===- FuseAttention.cpp - zero-fuse-attention ----------------------------===//
//
// The chain batch_matmul(q, k^T) -> scale -> softmax -> batch_matmul(., v)
// becomes one nn.attention. The unfused chain keeps a batch x heads x seq x
// seq tensor of probabilities from the forward to the backward; the fused op
// keeps each row's log-sum-exp and recomputes them per tile
// (docs/design.md#fusion).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"

#include <cmath>

namespace zerosbp {
#define GEN_PASS_DEF_ZEROFUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

/// The defining op of `value` when it is an OpTy and `value` has no other
/// reader than the chain: a tensor read elsewhere (returned, or a second
/// consumer) must exist, so the chain stays unfused.
template <typename OpTy> OpTy soleProducer(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  return value.getDefiningOp<OpTy>();
}

/// One attention chain, innermost first: `scores = q k^T`, any number of
/// scales, `probs = softmax(scores)` over the keys, `probs v`.
struct AttentionChain {
  nn::BatchMatmulOp scores;
  SmallVector<nn::ScaleOp> scales;
  nn::SoftmaxOp softmax;
  nn::BatchMatmulOp values;
  double scale = 1.0;
};

/// The chain that ends in `values`, if it is one the fused op computes.
std::optional<AttentionChain> matchChain(nn::BatchMatmulOp values) {
  if (values.getTransposeLhs() || values.getTransposeRhs())
    return std::nullopt;
  AttentionChain chain;
  chain.values = values;
  chain.softmax = soleProducer<nn::SoftmaxOp>(values.getLhs());
  if (!chain.softmax || chain.softmax.getNormalizedAxis() !=
                            chain.softmax.getInput().getType().getRank() - 1)
    return std::nullopt;
  Value scores = chain.softmax.getInput();
  while (auto scale = soleProducer<nn::ScaleOp>(scores)) {
    chain.scales.push_back(scale);
    chain.scale *= scale.getFactor().convertToDouble();
    scores = scale.getInput();
  }
  chain.scores = soleProducer<nn::BatchMatmulOp>(scores);
  if (!chain.scores || chain.scores.getTransposeLhs() ||
      !chain.scores.getTransposeRhs() || !std::isfinite(chain.scale))
    return std::nullopt;
  return chain;
}

struct ZeroFuseAttentionPass
    : public zerosbp::impl::ZeroFuseAttentionBase<ZeroFuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<AttentionChain> chains;
    getOperation().walk([&](nn::BatchMatmulOp op) {
      if (std::optional<AttentionChain> chain = matchChain(op))
        chains.push_back(std::move(*chain));
    });
    for (AttentionChain &chain : chains) {
      OpBuilder builder(chain.values);
      Value q = chain.scores.getLhs(), k = chain.scores.getRhs();
      Value v = chain.values.getRhs();
      // The ops' own verifiers accepted each step; the fused op's checks
      // the whole (for example v's key count against k's).
      auto fused = nn::AttentionOp::create(
          builder, chain.values.getLoc(), q, k, v,
          builder.getF64FloatAttr(chain.scale),
          chain.softmax.getCausal() ? builder.getUnitAttr() : nullptr);
      // Segment marks (activation checkpointing) and the like carry over.
      fused->setDiscardableAttrs(chain.values->getDiscardableAttrDictionary());
      chain.values.getResult().replaceAllUsesWith(fused.getResult());
      chain.values.erase();
      chain.softmax.erase();
      for (nn::ScaleOp scale : chain.scales)
        scale.erase();
      chain.scores.erase();
    }
  }
};

} // namespace
