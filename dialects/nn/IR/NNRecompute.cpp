//===- NNRecompute.cpp - results cheaper to recompute than to keep --------===//
//
// RecomputableOpInterface implementations. zero-recompute-cheap rebuilds
// these results in the backward from values the backward keeps anyway, so
// the forward's copy dies early (docs/design.md#fusion).
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

using namespace mlir;
using namespace mlir::nn;

/// gelu(x) from x.
SmallVector<Value> GeluOp::getRecomputeInputs(OpResult) { return {getInput()}; }

Value GeluOp::buildRecompute(OpBuilder &builder, OpResult, ValueRange inputs) {
  return GeluOp::create(builder, getLoc(), inputs[0]);
}

/// The normalized value from the input, gamma and beta (layer_norm_grad
/// reads the first two; beta is a variable).
SmallVector<Value> LayerNormOp::getRecomputeInputs(OpResult) {
  return {getInput(), getGamma(), getBeta()};
}

Value LayerNormOp::buildRecompute(OpBuilder &builder, OpResult,
                                  ValueRange inputs) {
  return LayerNormOp::create(builder, getLoc(), inputs[0], inputs[1], inputs[2],
                             getEpsilonAttr());
}

/// gelu(z) from the pre-activation z. The kernels apply GELU to the product
/// before it is rounded to the storage type, so only in f32 does GELU of
/// the stored z give the same bits.
SmallVector<Value> MatmulBiasGeluOp::getRecomputeInputs(OpResult result) {
  if (result != getResult() || !getResult().getType().getElementType().isF32())
    return {};
  return {getPreActivation()};
}

Value MatmulBiasGeluOp::buildRecompute(OpBuilder &builder, OpResult,
                                       ValueRange inputs) {
  return GeluOp::create(builder, getLoc(), inputs[0]);
}

/// A permutation of the input (one copy).
SmallVector<Value> TransposeOp::getRecomputeInputs(OpResult) {
  return {getInput()};
}

Value TransposeOp::buildRecompute(OpBuilder &builder, OpResult,
                                  ValueRange inputs) {
  return TransposeOp::create(builder, getLoc(), inputs[0],
                             getPermutationAttr());
}

/// One piece of the input (one copy).
SmallVector<Value> SplitOp::getRecomputeInputs(OpResult) {
  return {getInput()};
}

Value SplitOp::buildRecompute(OpBuilder &builder, OpResult result,
                              ValueRange inputs) {
  auto again = SplitOp::create(builder, getLoc(), getResultTypes(), inputs[0],
                               getAxisAttr(), getSizesAttr());
  return again.getResult(result.getResultNumber());
}

/// A view of the input: free.
SmallVector<Value> ReshapeOp::getRecomputeInputs(OpResult) {
  return {getInput()};
}

Value ReshapeOp::buildRecompute(OpBuilder &builder, OpResult,
                                ValueRange inputs) {
  return ReshapeOp::create(builder, getLoc(), getResult().getType(), inputs[0]);
}
