//===- OpCost.cpp - what an op costs to run -------------------------------===//

#include "passes/common/OpCost.h"

#include "dialects/nn/IR/NNOps.h"

using namespace mlir;

double zerosbp::matmulFlops(Operation *op) {
  auto flops = [](Value lhs, bool transposeLhs, Value result) {
    auto lhsType = cast<ShapedType>(lhs.getType());
    int64_t rank = lhsType.getRank();
    int64_t k = lhsType.getDimSize(transposeLhs ? rank - 2 : rank - 1);
    return 2.0 * static_cast<double>(k) *
           static_cast<double>(
               cast<ShapedType>(result.getType()).getNumElements());
  };
  if (auto matmul = dyn_cast<nn::MatmulOp>(op))
    return flops(matmul.getLhs(), matmul.getTransposeLhs(), matmul.getResult());
  if (auto matmul = dyn_cast<nn::MatmulBiasOp>(op))
    return flops(matmul.getLhs(), matmul.getTransposeLhs(), matmul.getResult());
  if (auto matmul = dyn_cast<nn::MatmulBiasGeluOp>(op))
    return flops(matmul.getLhs(), matmul.getTransposeLhs(), matmul.getResult());
  if (auto matmul = dyn_cast<nn::MatmulAddOp>(op))
    return flops(matmul.getLhs(), matmul.getTransposeLhs(), matmul.getResult());
  if (auto attention = dyn_cast<nn::AttentionOp>(op)) {
    // Its two products, q k^T and p v, as the unfused chain counts them.
    auto q = cast<ShapedType>(attention.getQ().getType());
    auto k = cast<ShapedType>(attention.getK().getType());
    auto v = cast<ShapedType>(attention.getV().getType());
    double pairs = static_cast<double>(q.getNumElements()) /
                   q.getShape().back() * k.getShape()[k.getRank() - 2];
    return 2.0 * pairs * (q.getShape().back() + v.getShape().back());
  }
  if (auto batched = dyn_cast<nn::BatchMatmulOp>(op))
    return flops(batched.getLhs(), batched.getTransposeLhs(),
                 batched.getResult());
  return 0.0;
}
