//===- FoldTransposes.cpp - zero-fold-transposes --------------------------===//
//
// A transpose that only swaps the two matrix axes of a matmul operand is the
// matmul's transpose flag. Folding it means the graph never materializes the
// transposed copy, which autodiff would otherwise keep live from the forward
// to the backward (docs/design.md#the-pass-pipeline).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "llvm/ADT/SetVector.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROFOLDTRANSPOSES
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;

namespace {

/// The input of `value` when it is an nn.transpose that swaps the last two
/// axes and keeps every other axis in place; else null.
Value matrixTransposeInput(Value value) {
  auto transpose = value.getDefiningOp<nn::TransposeOp>();
  if (!transpose)
    return nullptr;
  ArrayRef<int64_t> permutation = transpose.getPermutation();
  int64_t rank = permutation.size();
  if (rank < 2)
    return nullptr;
  for (int64_t axis = 0; axis < rank - 2; ++axis)
    if (permutation[axis] != axis)
      return nullptr;
  if (permutation[rank - 2] != rank - 1 || permutation[rank - 1] != rank - 2)
    return nullptr;
  return transpose.getInput();
}

/// Folds the transposes of `op`'s operands into its flags; returns the
/// transposes it stopped reading.
template <typename MatmulOpTy>
void foldOperands(MatmulOpTy op, llvm::SetVector<Operation *> &unread) {
  if (Value input = matrixTransposeInput(op.getLhs())) {
    unread.insert(op.getLhs().getDefiningOp());
    op.getLhsMutable().assign(input);
    op.setTransposeLhs(!op.getTransposeLhs());
  }
  if (Value input = matrixTransposeInput(op.getRhs())) {
    unread.insert(op.getRhs().getDefiningOp());
    op.getRhsMutable().assign(input);
    op.setTransposeRhs(!op.getTransposeRhs());
  }
}

struct ZeroFoldTransposesPass
    : public zerosbp::impl::ZeroFoldTransposesBase<ZeroFoldTransposesPass> {
  void runOnOperation() override {
    llvm::SetVector<Operation *> unread;
    getOperation().walk([&](Operation *op) {
      if (auto matmul = dyn_cast<nn::MatmulOp>(op))
        foldOperands(matmul, unread);
      else if (auto batched = dyn_cast<nn::BatchMatmulOp>(op))
        foldOperands(batched, unread);
    });
    // Only the transposes this pass made unused: other dead ops stay as the
    // user wrote them.
    for (Operation *transpose : unread)
      if (transpose->use_empty())
        transpose->erase();
  }
};

} // namespace
