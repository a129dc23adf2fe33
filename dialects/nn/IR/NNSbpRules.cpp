//===- NNSbpRules.cpp - legal SBP signatures of nn ops --------------------===//
//
// Each op lists the 1-D SBP signatures under which it computes the exact
// global result with no communication (OneFlow's GetSbp). "P" is P(sum)
// unless stated; P(max) passes only through pure data movement.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::nn;
using sbp::SbpAttr;
using sbp::SbpSignature;

namespace {
class Signatures {
public:
  Signatures(Operation *op, SmallVectorImpl<SbpSignature> &out)
      : ctx(op->getContext()), out(out) {}

  SbpAttr b() const { return SbpAttr::getBroadcast(ctx); }
  SbpAttr s(int64_t axis) const { return SbpAttr::getSplit(ctx, axis); }
  SbpAttr p() const { return SbpAttr::getPartial(ctx, sbp::ReduceKind::sum); }
  SbpAttr pmax() const {
    return SbpAttr::getPartial(ctx, sbp::ReduceKind::max);
  }

  void add(ArrayRef<SbpAttr> operands, ArrayRef<SbpAttr> results) {
    SbpSignature sig;
    sig.operands.assign(operands.begin(), operands.end());
    sig.results.assign(results.begin(), results.end());
    if (!llvm::is_contained(out, sig))
      out.push_back(std::move(sig));
  }

  /// Every operand and result has `value`.
  void uniform(SbpAttr value, unsigned numOperands, unsigned numResults) {
    add(SmallVector<SbpAttr>(numOperands, value),
        SmallVector<SbpAttr>(numResults, value));
  }

  /// A source op (no operands) may produce B or S on any axis.
  void source(int64_t rank) {
    add({}, {b()});
    for (int64_t i = 0; i < rank; ++i)
      add({}, {s(i)});
  }

  /// Pure data movement: B, P(sum) and P(max) pass through unchanged.
  void passThrough(unsigned numOperands, unsigned numResults) {
    uniform(b(), numOperands, numResults);
    uniform(p(), numOperands, numResults);
    uniform(pmax(), numOperands, numResults);
  }

private:
  MLIRContext *ctx;
  SmallVectorImpl<SbpSignature> &out;
};
} // namespace

static int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

void VariableOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures(*this, out).source(rankOf(getResult()));
}

void InputOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures(*this, out).source(rankOf(getResult()));
}

void FillOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures(*this, out).source(rankOf(getResult()));
}

void StepOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  sig.add({}, {sig.b()});
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// Row, column and contraction splits of a (batched) matmul whose matrix
/// axes are the last two of `rank`.
static void matmulSignatures(Signatures &sig, int64_t rank, bool transposeLhs,
                             bool transposeRhs) {
  int64_t rowAxis = rank - 2, colAxis = rank - 1;
  int64_t lhsRows = transposeLhs ? colAxis : rowAxis;
  int64_t lhsK = transposeLhs ? rowAxis : colAxis;
  int64_t rhsK = transposeRhs ? colAxis : rowAxis;
  int64_t rhsCols = transposeRhs ? rowAxis : colAxis;
  for (int64_t i = 0; i < rank - 2; ++i)
    sig.add({sig.s(i), sig.s(i)}, {sig.s(i)});
  sig.add({sig.s(lhsRows), sig.b()}, {sig.s(rowAxis)});
  sig.add({sig.b(), sig.s(rhsCols)}, {sig.s(colAxis)});
  sig.add({sig.s(lhsK), sig.s(rhsK)}, {sig.p()});
  sig.add({sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.b()}, {sig.p()});
  sig.add({sig.b(), sig.p()}, {sig.p()});
}

void MatmulOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  matmulSignatures(sig, 2, getTransposeLhs(), getTransposeRhs());
}

/// A matmul's row and column splits, the bias split with the columns; no
/// contraction split, whose partial sums would add the bias once per rank
/// (and GELU does not distribute over a sum).
static void matmulEpilogueSignatures(Signatures &sig, bool transposeLhs,
                                     bool transposeRhs) {
  int64_t lhsRows = transposeLhs ? 1 : 0;
  int64_t rhsCols = transposeRhs ? 0 : 1;
  sig.add({sig.s(lhsRows), sig.b(), sig.b()}, {sig.s(0)});
  sig.add({sig.b(), sig.s(rhsCols), sig.s(0)}, {sig.s(1)});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b()});
}

/// Without GELU the sum distributes: a contraction split gives partial
/// products, and the bias, as P(sum), is added once over the ranks (the
/// row-parallel layer of docs/design.md#tensor-parallelism).
void MatmulBiasOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  matmulEpilogueSignatures(sig, getTransposeLhs(), getTransposeRhs());
  int64_t lhsK = getTransposeLhs() ? 0 : 1;
  int64_t rhsK = getTransposeRhs() ? 1 : 0;
  sig.add({sig.s(lhsK), sig.s(rhsK), sig.p()}, {sig.p()});
  sig.add({sig.p(), sig.b(), sig.p()}, {sig.p()});
}

void MatmulBiasGeluOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  // Each signature of matmul_bias, with the pre-activation laid out as the
  // result.
  SmallVector<SbpSignature> single;
  Signatures sig(*this, single);
  matmulEpilogueSignatures(sig, getTransposeLhs(), getTransposeRhs());
  for (SbpSignature &signature : single) {
    signature.results.push_back(signature.results.front());
    out.push_back(std::move(signature));
  }
}

/// Each signature of the product, with the addend laid out as the result.
void MatmulAddOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  SmallVector<SbpSignature> product;
  Signatures sig(*this, product);
  matmulSignatures(sig, 2, getTransposeLhs(), getTransposeRhs());
  for (SbpSignature &signature : product) {
    signature.operands.push_back(signature.results.front());
    out.push_back(std::move(signature));
  }
}

void BatchMatmulOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  matmulSignatures(sig, rankOf(getLhs()), getTransposeLhs(), getTransposeRhs());
}

/// Attention is independent per batch index (batch and heads in GPT-2), so
/// every batch dim splits all operands and results alike. Without a causal
/// mask, whose positions are global, queries may split too: each rank's
/// queries read all keys and values.
void AttentionOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getQ());
  for (int64_t i = 0; i + 2 < rank; ++i)
    sig.add({sig.s(i), sig.s(i), sig.s(i)}, {sig.s(i), sig.s(i)});
  if (!getCausal())
    sig.add({sig.s(rank - 2), sig.b(), sig.b()},
            {sig.s(rank - 2), sig.s(rank - 2)});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b(), sig.b()});
}

/// As the forward's splits; dq, dk and dv are linear in the result's
/// gradient, so a partial one gives partial gradients.
void AttentionGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getQ());
  for (int64_t i = 0; i + 2 < rank; ++i)
    sig.uniform(sig.s(i), 6, 3);
  if (!getCausal()) {
    SbpAttr rows = sig.s(rank - 2);
    sig.add({rows, rows, sig.b(), sig.b(), rows, rows},
            {rows, sig.p(), sig.p()});
  }
  sig.uniform(sig.b(), 6, 3);
  sig.add({sig.p(), sig.b(), sig.b(), sig.b(), sig.b(), sig.b()},
          {sig.p(), sig.p(), sig.p()});
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Splits of a broadcasting binary op: result axis i splits each operand
/// along its matching axis, or needs it broadcast where it stretches.
static void broadcastSplits(Signatures &sig, Value lhs, Value rhs,
                            Value result) {
  auto out = cast<RankedTensorType>(result.getType());
  int64_t rank = out.getRank();
  auto operandSbp = [&](Value operand, int64_t axis) {
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t local = axis - (rank - type.getRank());
    if (local < 0 || type.getDimSize(local) != out.getDimSize(axis))
      return sig.b();
    return sig.s(local);
  };
  for (int64_t i = 0; i < rank; ++i)
    sig.add({operandSbp(lhs, i), operandSbp(rhs, i)}, {sig.s(i)});
  sig.add({sig.b(), sig.b()}, {sig.b()});
}

void AddOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  broadcastSplits(sig, getLhs(), getRhs(), getResult());
  sig.add({sig.p(), sig.p()}, {sig.p()});
}

void SubOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  broadcastSplits(sig, getLhs(), getRhs(), getResult());
  sig.add({sig.p(), sig.p()}, {sig.p()});
}

void MulOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  broadcastSplits(sig, getLhs(), getRhs(), getResult());
  sig.add({sig.p(), sig.b()}, {sig.p()});
  sig.add({sig.b(), sig.p()}, {sig.p()});
}

void DivOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  broadcastSplits(sig, getLhs(), getRhs(), getResult());
  sig.add({sig.p(), sig.b()}, {sig.p()});
}

void BiasAddOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getInput());
  for (int64_t i = 0; i + 1 < rank; ++i)
    sig.add({sig.s(i), sig.b()}, {sig.s(i)});
  sig.add({sig.s(rank - 1), sig.s(0)}, {sig.s(rank - 1)});
  sig.add({sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.p()}, {sig.p()});
}

/// Elementwise on one tensor: any split or broadcast passes through.
static void unarySplits(Signatures &sig, int64_t rank) {
  for (int64_t i = 0; i < rank; ++i)
    sig.add({sig.s(i)}, {sig.s(i)});
  sig.add({sig.b()}, {sig.b()});
}

void ReluOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  unarySplits(sig, rankOf(getInput()));
}

void GeluOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  unarySplits(sig, rankOf(getInput()));
}

void TanhOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  unarySplits(sig, rankOf(getInput()));
}

void ScaleOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  unarySplits(sig, rankOf(getInput()));
  sig.add({sig.p()}, {sig.p()});
}

/// The mask is a function of the global index, so every split keeps it and
/// a partial sum is masked the same on every rank (the mask is linear).
/// The step is replicated.
void DropoutOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  for (int64_t i = 0; i < rankOf(getInput()); ++i)
    sig.add({sig.s(i), sig.b()}, {sig.s(i)});
  sig.add({sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.b()}, {sig.p()});
}

void CastOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  unarySplits(sig, rankOf(getInput()));
  sig.passThrough(1, 1);
}

/// Every rank quantizes its own part of a 1-D split: the global op's blocks
/// when the parts are whole blocks, which the inserting pass arranges.
void QuantizeOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  sig.add({sig.b()}, {sig.b(), sig.b()});
  if (rankOf(getInput()) == 1)
    sig.add({sig.s(0)}, {sig.s(0), sig.s(0)});
}

/// A 1-D result from split codes and scales, as nn.quantize made them.
void DequantizeOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  sig.add({sig.b(), sig.b()}, {sig.b()});
  if (getShape().size() == 1)
    sig.add({sig.s(0), sig.s(0)}, {sig.s(0)});
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, loss
//===----------------------------------------------------------------------===//

void LayerNormOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getInput());
  for (int64_t i = 0; i + 1 < rank; ++i)
    sig.add({sig.s(i), sig.b(), sig.b()}, {sig.s(i)});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b()});
}

/// Axes a softmax may be split on: not its own axis, and with a causal mask
/// not the (query, key) axes, whose mask depends on global positions.
static bool isSoftmaxSplittable(int64_t axis, int64_t softmaxAxis, int64_t rank,
                                bool causal) {
  return axis != softmaxAxis && !(causal && axis >= rank - 2);
}

void SoftmaxOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getInput());
  for (int64_t i = 0; i < rank; ++i)
    if (isSoftmaxSplittable(i, getNormalizedAxis(), rank, getCausal()))
      sig.add({sig.s(i)}, {sig.s(i)});
  sig.add({sig.b()}, {sig.b()});
}

void EmbeddingOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t idsRank = rankOf(getIds());
  for (int64_t i = 0; i < idsRank; ++i)
    sig.add({sig.b(), sig.s(i)}, {sig.s(i)});
  sig.add({sig.s(1), sig.b()}, {sig.s(idsRank)});
  // Vocab-parallel: each rank looks up its rows and zeros the others.
  sig.add({sig.s(0), sig.b()}, {sig.p()});
  sig.add({sig.b(), sig.b()}, {sig.b()});
}

void CrossEntropyOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  // Each rank divides its loss sum by the global sample count, so the
  // per-rank values add up to the global mean.
  int64_t rank = rankOf(getLogits());
  for (int64_t i = 0; i + 1 < rank; ++i)
    sig.add({sig.s(i), sig.s(i)}, {sig.p()});
  sig.add({sig.b(), sig.b()}, {sig.b()});
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

void ReshapeOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> res = getResult().getType().getShape();
  // S(i) -> S(j) when axis i survives as axis j with the same row-major
  // position: the same elements land on the same rank.
  // The verifier bounds the element count, but with a zero dim further on
  // a prefix product can still overflow; such a prefix matches nothing.
  auto prefixProduct = [](ArrayRef<int64_t> shape) -> std::optional<int64_t> {
    int64_t product = 1;
    for (int64_t dim : shape) {
      std::optional<int64_t> next = llvm::checkedMul(product, dim);
      if (!next)
        return std::nullopt;
      product = *next;
    }
    return product;
  };
  // Axis i of the input and axis j of the result that start at the same
  // row-major position (equal prefix products) cover the same elements per
  // index of the dims before them; cutting both into n equal parts gives
  // every rank the same elements in the same order, whatever the dims after
  // them are. Unequal sizes need both to divide by n, the parts the split
  // makes: the product of the hierarchy axes that split input dim i or
  // result dim j (nested splits of one dim multiply; an axis that splits
  // another dim cuts the box elsewhere), or every rank where no axis does
  // yet (a split propagation may add).
  auto inputEncoding = sbp::getGlobalEncoding(getInput().getType());
  auto resultEncoding = sbp::getGlobalEncoding(getResult().getType());
  SmallVector<int64_t, 2> hierarchy;
  if (inputEncoding)
    hierarchy = inputEncoding.getPlacement().getHierarchyShape();
  auto splitsDim = [](sbp::GlobalTensorAttr encoding, size_t axis,
                      int64_t dim) {
    return encoding && axis < encoding.getSbp().size() &&
           encoding.getSbp()[axis].isSplit() &&
           encoding.getSbp()[axis].getAxis() == dim;
  };
  // 0 without an encoding: only equal sizes keep a split.
  auto partsOf = [&](int64_t i, int64_t j) -> int64_t {
    if (!inputEncoding)
      return 0;
    int64_t parts = 1;
    bool splits = false;
    for (size_t axis = 0; axis < hierarchy.size(); ++axis)
      if (splitsDim(inputEncoding, axis, i) ||
          splitsDim(resultEncoding, axis, j)) {
        parts *= hierarchy[axis];
        splits = true;
      }
    return splits ? parts : inputEncoding.getPlacement().getNumRanks();
  };
  for (int64_t i = 0; i < (int64_t)in.size(); ++i) {
    std::optional<int64_t> before = prefixProduct(in.take_front(i));
    if (!before)
      break;
    for (int64_t j = 0; j < (int64_t)res.size(); ++j) {
      std::optional<int64_t> prefix = prefixProduct(res.take_front(j));
      if (!prefix)
        break;
      if (*prefix != *before || in[i] < 1 || res[j] < 1)
        continue;
      int64_t parts = partsOf(i, j);
      bool same = res[j] == in[i];
      bool evenParts = parts > 0 && in[i] % parts == 0 && res[j] % parts == 0;
      if (same || evenParts) {
        sig.add({sig.s(i)}, {sig.s(j)});
        break;
      }
    }
  }
  sig.passThrough(1, 1);
}

void PadOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  for (int64_t i = 0; i < rankOf(getInput()); ++i)
    if (getLow()[i] == 0 && getHigh()[i] == 0)
      sig.add({sig.s(i)}, {sig.s(i)});
  // Zeros are neutral for a sum, so a partial sum pads rank by rank.
  sig.add({sig.b()}, {sig.b()});
  sig.add({sig.p()}, {sig.p()});
}

void TransposeOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  for (auto [resultAxis, inputAxis] : llvm::enumerate(getPermutation()))
    sig.add({sig.s(inputAxis)}, {sig.s(resultAxis)});
  sig.passThrough(1, 1);
}

void SliceOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  RankedTensorType input = getInput().getType();
  std::optional<ArrayRef<int64_t>> strides = getStrides();
  for (int64_t i = 0; i < input.getRank(); ++i) {
    bool whole = getOffsets()[i] == 0 && getSizes()[i] == input.getDimSize(i) &&
                 (!strides || (*strides)[i] == 1);
    if (whole)
      sig.add({sig.s(i)}, {sig.s(i)});
  }
  sig.passThrough(1, 1);
}

void SplitOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  unsigned numResults = getNumResults();
  for (int64_t i = 0; i < rankOf(getInput()); ++i)
    if (i != getAxis())
      sig.add({sig.s(i)}, SmallVector<SbpAttr>(numResults, sig.s(i)));
  sig.passThrough(1, numResults);
}

void ConcatOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  unsigned numInputs = getInputs().size();
  for (int64_t i = 0; i < rankOf(getResult()); ++i)
    if (i != getAxis())
      sig.uniform(sig.s(i), numInputs, 1);
  sig.passThrough(numInputs, 1);
}

/// A reduction turns a split of a reduced axis into a partial sum and keeps
/// other splits, renumbered when the reduced axes are dropped.
static void reduceSignatures(Signatures &sig, int64_t rank,
                             ArrayRef<int64_t> axes, bool keepdim) {
  int64_t removed = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(axes, i)) {
      sig.add({sig.s(i)}, {sig.p()});
      ++removed;
      continue;
    }
    sig.add({sig.s(i)}, {sig.s(keepdim ? i : i - removed)});
  }
  sig.add({sig.b()}, {sig.b()});
  sig.add({sig.p()}, {sig.p()});
}

void ReduceSumOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  reduceSignatures(sig, rankOf(getInput()), getAxes(), getKeepdim());
}

void ReduceMeanOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  reduceSignatures(sig, rankOf(getInput()), getAxes(), getKeepdim());
}

//===----------------------------------------------------------------------===//
// Gradients: linear in the incoming gradient, so a partial dy gives a
// partial result.
//===----------------------------------------------------------------------===//

static void activationGradSignatures(Signatures &sig, int64_t rank) {
  for (int64_t i = 0; i < rank; ++i)
    sig.add({sig.s(i), sig.s(i)}, {sig.s(i)});
  sig.add({sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.b()}, {sig.p()});
}

void ReluGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  activationGradSignatures(sig, rankOf(getGradOutput()));
}

void GeluGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  activationGradSignatures(sig, rankOf(getGradOutput()));
}

void TanhGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  activationGradSignatures(sig, rankOf(getGradOutput()));
}

void LayerNormGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getInput());
  for (int64_t i = 0; i + 1 < rank; ++i)
    sig.add({sig.s(i), sig.s(i), sig.b()}, {sig.s(i), sig.p(), sig.p()});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b(), sig.b(), sig.b()});
  sig.add({sig.p(), sig.b(), sig.b()}, {sig.p(), sig.p(), sig.p()});
}

void SoftmaxGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getOutput());
  for (int64_t i = 0; i < rank; ++i)
    if (isSoftmaxSplittable(i, getNormalizedAxis(), rank, getCausal()))
      sig.add({sig.s(i), sig.s(i)}, {sig.s(i)});
  sig.add({sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.b()}, {sig.p()});
}

// The vocabulary-parallel loss: split by row as nn.cross_entropy, or by class
// with partial results over the ranks that split the classes.

void CrossEntropyMaxOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t classes = rankOf(getLogits()) - 1;
  for (int64_t i = 0; i < classes; ++i)
    sig.add({sig.s(i)}, {sig.s(i)});
  sig.add({sig.s(classes)}, {sig.pmax()});
  sig.add({sig.b()}, {sig.b()});
}

void CrossEntropySumsOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t classes = rankOf(getLogits()) - 1;
  for (int64_t i = 0; i < classes; ++i)
    sig.add({sig.s(i), sig.s(i), sig.s(i)}, {sig.s(i), sig.s(i)});
  sig.add({sig.s(classes), sig.b(), sig.b()}, {sig.p(), sig.p()});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b(), sig.b()});
}

void CrossEntropyLossOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  // As nn.cross_entropy: each rank divides by the global row count.
  for (int64_t i = 0; i < rankOf(getMax()); ++i)
    sig.add({sig.s(i), sig.s(i), sig.s(i)}, {sig.p()});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b()});
}

void CrossEntropySplitGradOp::getSbpSignatures(
    SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t classes = rankOf(getLogits()) - 1;
  for (int64_t i = 0; i < classes; ++i)
    sig.add({sig.b(), sig.s(i), sig.s(i), sig.s(i), sig.s(i)}, {sig.s(i)});
  sig.add({sig.b(), sig.s(classes), sig.b(), sig.b(), sig.b()},
          {sig.s(classes)});
  sig.add({sig.b(), sig.b(), sig.b(), sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.b(), sig.b(), sig.b(), sig.b()}, {sig.p()});
}

void CrossEntropyGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t rank = rankOf(getLogits());
  for (int64_t i = 0; i + 1 < rank; ++i)
    sig.add({sig.b(), sig.s(i), sig.s(i)}, {sig.s(i)});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.b(), sig.b()}, {sig.p()});
}

void EmbeddingGradOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  int64_t idsRank = rankOf(getIds());
  for (int64_t i = 0; i < idsRank; ++i)
    sig.add({sig.s(i), sig.s(i)}, {sig.p()});
  sig.add({sig.s(idsRank), sig.b()}, {sig.s(1)});
  // Vocab-parallel: each rank scatters into its rows only.
  sig.add({sig.b(), sig.b()}, {sig.s(0)});
  sig.add({sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.p(), sig.b()}, {sig.p()});
}

//===----------------------------------------------------------------------===//
// Optimizer updates: elementwise over param, grad and state; the gradient
// must be reduced (not partial) and the step is replicated.
//===----------------------------------------------------------------------===//

void NonfiniteCountOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  // Counts add up over shards; a partial value is checked once reduced.
  Signatures sig(*this, out);
  for (int64_t i = 0; i < rankOf(getInput()); ++i)
    sig.add({sig.s(i)}, {sig.p()});
  sig.add({sig.b()}, {sig.b()});
}

void SelectOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  for (int64_t i = 0; i < rankOf(getOnTrue()); ++i)
    sig.add({sig.b(), sig.s(i), sig.s(i)}, {sig.s(i)});
  sig.add({sig.b(), sig.b(), sig.b()}, {sig.b()});
  sig.add({sig.b(), sig.p(), sig.p()}, {sig.p()});
}

void LossScaleUpdateOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  sig.uniform(sig.b(), 4, 3);
}

void ClipCoefficientOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  // The norm needs the whole sum: reduce a partial sum first.
  Signatures sig(*this, out);
  sig.add({sig.b()}, {sig.b()});
}

void SgdOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  for (int64_t i = 0; i < rankOf(getParam()); ++i)
    sig.uniform(sig.s(i), 2, 1);
  sig.uniform(sig.b(), 2, 1);
}

static void adamSignatures(Signatures &sig, int64_t rank) {
  for (int64_t i = 0; i < rank; ++i)
    sig.add({sig.s(i), sig.s(i), sig.s(i), sig.s(i), sig.b()},
            {sig.s(i), sig.s(i), sig.s(i)});
  sig.uniform(sig.b(), 5, 3);
}

void AdamOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  adamSignatures(sig, rankOf(getParam()));
}

void AdamWOp::getSbpSignatures(SmallVectorImpl<SbpSignature> &out) {
  Signatures sig(*this, out);
  adamSignatures(sig, rankOf(getParam()));
}
