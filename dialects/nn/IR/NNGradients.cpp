//===- NNGradients.cpp - gradients of nn ops ------------------------------===//
//
// GradientOpInterface implementations: each op builds its operands'
// gradients from its results' gradients, following PyTorch's definitions.
// In the formulas `dy` is the loss gradient of the result and `dx` that of
// operand `x`. Gradients are plain tensors: SBP propagation gives them their
// layouts later, so no `#sbp.global` encoding is copied from the forward.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::nn;

#include "dialects/nn/IR/NNInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// An op whose result does not reach the loss gives its operands none.
static LogicalResult noGradients(Operation *op,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append(op->getNumOperands(), Value());
  return success();
}

namespace {
/// Creates backward ops at the builder's insertion point, located at the
/// forward op they differentiate.
class GradientBuilder {
public:
  GradientBuilder(OpBuilder &builder, Operation *forward)
      : builder(builder), loc(forward->getLoc()) {}

  template <typename OpTy, typename... Args> OpTy create(Args &&...args) {
    return OpTy::create(builder, loc, std::forward<Args>(args)...);
  }

  Value fill(ArrayRef<int64_t> shape, Type elementType, double value) {
    return create<FillOp>(RankedTensorType::get(shape, elementType),
                          builder.getF64FloatAttr(value));
  }

  Value scale(Value value, double factor) {
    return create<ScaleOp>(value, builder.getF64FloatAttr(factor));
  }

  /// `value` with `shape`; no op when it already has it.
  Value reshape(Value value, ArrayRef<int64_t> shape) {
    RankedTensorType type = typeOf(value);
    if (type.getShape() == shape)
      return value;
    return create<ReshapeOp>(
        RankedTensorType::get(shape, type.getElementType()), value);
  }

  /// Undoes NumPy broadcasting: sums `grad` over the axes along which
  /// `operand` was stretched (missing leading axes, and size-1 axes that
  /// became larger), then restores the operand's shape.
  Value sumToShapeOf(Value grad, Value operand) {
    ArrayRef<int64_t> from = typeOf(grad).getShape();
    ArrayRef<int64_t> to = typeOf(operand).getShape();
    int64_t leading = from.size() - to.size();
    SmallVector<int64_t> axes;
    for (int64_t i = 0, e = from.size(); i < e; ++i)
      if (i < leading || (to[i - leading] == 1 && from[i] != 1))
        axes.push_back(i);
    if (!axes.empty())
      grad = create<ReduceSumOp>(grad, axes, /*keepdim=*/false);
    return reshape(grad, to);
  }

  /// The inverse of a reduction over `axes`: puts the reduced axes back as
  /// size 1, then broadcasts onto zeros of `input`'s shape.
  Value expandReduced(Value grad, ArrayRef<int64_t> axes, Value input) {
    RankedTensorType inputType = typeOf(input);
    SmallVector<int64_t> kept(inputType.getShape());
    for (int64_t axis : axes)
      kept[axis] = 1;
    grad = reshape(grad, kept);
    if (ArrayRef<int64_t>(kept) == inputType.getShape())
      return grad;
    return create<AddOp>(grad, fill(inputType.getShape(),
                                    inputType.getElementType(), /*value=*/0.0));
  }

private:
  OpBuilder &builder;
  Location loc;
};
} // namespace

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// `y = op(a) op(b)`, where op transposes (the last two axes for
/// batch_matmul) when its flag is set. The gradients of op(a) and op(b) are
/// `dy op(b)^T` and `op(a)^T dy`; a transposed operand takes their transpose:
///   da = dy op(b)^T,  or op(b) dy^T with transpose_lhs
///   db = op(a)^T dy,  or dy^T op(a) with transpose_rhs
/// Each is one matmul with transpose flags: a linear layer `y = x W^T` gets
/// `dx = dy W` and `dW = dy^T x`.
template <typename MatmulOpTy>
static std::pair<Value, Value> productGradients(GradientBuilder &grads,
                                                Value dy, Value a, Value b,
                                                bool ta, bool tb) {
  Value da = ta ? grads.create<MatmulOpTy>(b, dy, /*transpose_lhs=*/tb,
                                           /*transpose_rhs=*/true)
                : grads.create<MatmulOpTy>(dy, b, /*transpose_lhs=*/false,
                                           /*transpose_rhs=*/!tb);
  Value db = tb ? grads.create<MatmulOpTy>(dy, a, /*transpose_lhs=*/true,
                                           /*transpose_rhs=*/ta)
                : grads.create<MatmulOpTy>(a, dy, /*transpose_lhs=*/!ta,
                                           /*transpose_rhs=*/false);
  return {da, db};
}

template <typename MatmulOpTy>
static LogicalResult
buildMatmulGradients(MatmulOpTy op, OpBuilder &builder, ValueRange resultGrads,
                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(op, operandGrads);
  GradientBuilder grads(builder, op);
  auto [da, db] =
      productGradients<MatmulOpTy>(grads, dy, op.getLhs(), op.getRhs(),
                                   op.getTransposeLhs(), op.getTransposeRhs());
  operandGrads.append({da, db});
  return success();
}

LogicalResult MatmulOp::buildGradients(OpBuilder &builder,
                                       ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  return buildMatmulGradients(*this, builder, resultGrads, operandGrads);
}

LogicalResult
BatchMatmulOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return buildMatmulGradients(*this, builder, resultGrads, operandGrads);
}

/// y = op(a) op(b) + bias: the matmul's gradients from dz = dy, and dbias =
/// dz summed over the rows.
static LogicalResult
buildMatmulEpilogueGradients(Operation *op, OpBuilder &builder, Value dz,
                             Value a, Value b, bool ta, bool tb, Value bias,
                             SmallVectorImpl<Value> &operandGrads) {
  if (!dz)
    return noGradients(op, operandGrads);
  GradientBuilder grads(builder, op);
  // In the unfused chain's order (bias first), so that gradients reach
  // their buckets as they did.
  Value dbias = grads.sumToShapeOf(dz, bias);
  auto [da, db] = productGradients<MatmulOp>(grads, dz, a, b, ta, tb);
  operandGrads.append({da, db, dbias});
  return success();
}

LogicalResult
MatmulBiasOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  return buildMatmulEpilogueGradients(
      *this, builder, resultGrads[0], getLhs(), getRhs(), getTransposeLhs(),
      getTransposeRhs(), getBias(), operandGrads);
}

/// y = gelu(z), z = op(a) op(b) + bias: dz = gelu_grad(dy, z), then as
/// matmul_bias. The pre-activation is a value the backward reads.
LogicalResult
MatmulBiasGeluOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[1])
    return emitOpError("the gradient of pre_activation is not defined");
  Value dz;
  if (Value dy = resultGrads[0])
    dz = GradientBuilder(builder, *this)
             .create<GeluGradOp>(dy, getPreActivation());
  return buildMatmulEpilogueGradients(*this, builder, dz, getLhs(), getRhs(),
                                      getTransposeLhs(), getTransposeRhs(),
                                      getBias(), operandGrads);
}

/// y = softmax(scale q k^T) v with lse the log-sum-exp of each row: dq, dk
/// and dv in one attention_grad, which recomputes the probabilities from
/// q, k and lse (FlashAttention-2's backward). The log-sum-exp is a value
/// the backward reads; a loss that reads it is not differentiated.
LogicalResult
AttentionOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[1])
    return emitOpError("the gradient of lse is not defined");
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  auto grad =
      grads.create<AttentionGradOp>(dy, getQ(), getK(), getV(), getResult(),
                                    getLse(), getScaleAttr(), getCausalAttr());
  operandGrads.append({grad.getGradQ(), grad.getGradK(), grad.getGradV()});
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Binary ops broadcast their operands, so each operand's gradient is summed
// back to its shape (`sum_to`).

/// y = a + b: da = sum_to(dy), db = sum_to(dy).
LogicalResult AddOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(grads.sumToShapeOf(dy, getLhs()));
  operandGrads.push_back(grads.sumToShapeOf(dy, getRhs()));
  return success();
}

/// y = a - b: da = sum_to(dy), db = -sum_to(dy).
LogicalResult SubOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(grads.sumToShapeOf(dy, getLhs()));
  operandGrads.push_back(grads.scale(grads.sumToShapeOf(dy, getRhs()), -1.0));
  return success();
}

/// y = a * b: da = sum_to(dy * b), db = sum_to(dy * a).
LogicalResult MulOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  Value a = getLhs(), b = getRhs();
  operandGrads.push_back(grads.sumToShapeOf(grads.create<MulOp>(dy, b), a));
  operandGrads.push_back(grads.sumToShapeOf(grads.create<MulOp>(dy, a), b));
  return success();
}

/// y = a / b: da = sum_to(dy / b), db = -sum_to(dy * y / b), using
/// y / b = a / b^2 as PyTorch does.
LogicalResult DivOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  Value a = getLhs(), b = getRhs(), y = getResult();
  operandGrads.push_back(grads.sumToShapeOf(grads.create<DivOp>(dy, b), a));
  Value dyTimesY = grads.create<MulOp>(dy, y);
  Value db = grads.sumToShapeOf(grads.create<DivOp>(dyTimesY, b), b);
  operandGrads.push_back(grads.scale(db, -1.0));
  return success();
}

/// y = x + bias (along the last axis): dx = dy, dbias = dy summed over every
/// axis but the last.
LogicalResult BiasAddOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(dy);
  operandGrads.push_back(grads.sumToShapeOf(dy, getBias()));
  return success();
}

/// An elementwise activation: dx = GradOp(dy, saved), where `saved` is the
/// forward value its derivative is computed from.
template <typename GradOp>
static LogicalResult activationGradients(Operation *op, OpBuilder &builder,
                                         Value dy, Value saved,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!dy)
    return noGradients(op, operandGrads);
  GradientBuilder grads(builder, op);
  operandGrads.push_back(grads.create<GradOp>(dy, saved));
  return success();
}

/// y = max(x, 0): dx = dy where x > 0, else 0 (relu_grad).
LogicalResult ReluOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return activationGradients<ReluGradOp>(*this, builder, resultGrads[0],
                                         getInput(), operandGrads);
}

/// y = gelu(x), tanh form: dx = dy gelu'(x) (gelu_grad, from the input).
LogicalResult GeluOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return activationGradients<GeluGradOp>(*this, builder, resultGrads[0],
                                         getInput(), operandGrads);
}

/// y = tanh(x): dx = dy (1 - y^2) (tanh_grad, from the result).
LogicalResult TanhOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return activationGradients<TanhGradOp>(*this, builder, resultGrads[0],
                                         getResult(), operandGrads);
}

/// y = c x: dx = c dy.
LogicalResult ScaleOp::buildGradients(OpBuilder &builder,
                                      ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(grads.create<ScaleOp>(dy, getFactorAttr()));
  return success();
}

/// y = mask x / (1 - p): dx = mask dy / (1 - p), the same op on dy. The
/// mask is recomputed from the same seed, step, stream and micro-batch
/// (docs/compiler.md, "Dropout"); the step gets no gradient.
LogicalResult DropoutOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  auto dx = grads.create<DropoutOp>(dy, getStep(), getPAttr(), getSeedAttr(),
                                    getStreamAttr(), getMicroBatchAttr(),
                                    /*global_shape=*/nullptr,
                                    /*split_dims=*/nullptr);
  operandGrads.append({dx, Value()});
  return success();
}

/// y = cast(x): dx = dy cast back to x's element type.
LogicalResult CastOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  Type elementType = getInput().getType().getElementType();
  RankedTensorType dyType = typeOf(dy);
  if (dyType.getElementType() == elementType) {
    operandGrads.push_back(dy);
    return success();
  }
  operandGrads.push_back(grads.create<CastOp>(
      RankedTensorType::get(dyType.getShape(), elementType), dy));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, loss
//===----------------------------------------------------------------------===//

/// y = (x - mean) / sqrt(var + eps) gamma + beta, biased variance over the
/// last axis. With xhat = (x - mean) / sqrt(var + eps) and g = dy gamma:
///   dx = (g - mean(g) - xhat mean(g xhat)) / sqrt(var + eps)
///   dgamma = sum(dy xhat), dbeta = sum(dy) over every axis but the last
/// (all three from layer_norm_grad).
LogicalResult
LayerNormOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  auto grad = grads.create<LayerNormGradOp>(dy, getInput(), getGamma(),
                                            getEpsilonAttr());
  operandGrads.append(
      {grad.getGradInput(), grad.getGradGamma(), grad.getGradBeta()});
  return success();
}

/// y = softmax(x) along the axis: dx = y (dy - sum(dy y)) along it
/// (softmax_grad with the same axis and mask; masked entries have y = 0, so
/// their dx is 0).
LogicalResult SoftmaxOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(grads.create<SoftmaxGradOp>(
      dy, getResult(), getAxisAttr(), getCausalAttr()));
  return success();
}

/// y[..., :] = table[ids[...], :]: dtable[v] = sum of dy rows whose id is v
/// (embedding_grad); ids are integers and get none.
LogicalResult
EmbeddingOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  int64_t vocabSize = getTable().getType().getDimSize(0);
  operandGrads.push_back(grads.create<EmbeddingGradOp>(
      dy, getIds(), builder.getI64IntegerAttr(vocabSize),
      /*global_shape=*/nullptr, /*split_dims=*/nullptr, /*split_of=*/nullptr));
  operandGrads.push_back(Value());
  return success();
}

/// loss = mean over the n samples of -log softmax(logits)[label]:
/// dlogits = dloss (softmax(logits) - onehot(labels)) / n
/// (cross_entropy_grad); labels are integers and get none.
LogicalResult
CrossEntropyOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dloss = resultGrads[0];
  if (!dloss)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  // The gradient divides by the loss's count.
  operandGrads.push_back(grads.create<CrossEntropyGradOp>(
      dloss, getLogits(), getLabels(), getCountAttr()));
  operandGrads.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

/// Same elements, another shape: dx = reshape(dy) to x's shape.
LogicalResult ReshapeOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(grads.reshape(dy, getInput().getType().getShape()));
  return success();
}

/// y = pad(x, low, high): dx = the window of dy at `low` with x's shape.
LogicalResult PadOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(grads.create<SliceOp>(
      dy, getLow(), getInput().getType().getShape(), DenseI64ArrayAttr()));
  return success();
}

/// Result axis i is input axis perm[i]: dx = transpose(dy, inverse(perm)),
/// where inverse[perm[i]] = i.
LogicalResult
TransposeOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  ArrayRef<int64_t> permutation = getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [i, axis] : llvm::enumerate(permutation))
    inverse[axis] = i;
  operandGrads.push_back(grads.create<TransposeOp>(dy, inverse));
  return success();
}

/// y = x[offset : offset + size] per axis, unit strides: dx = dy padded with
/// zeros, `offset` before and `dim - offset - size` after. A strided slice
/// would need a scatter, which no op expresses.
LogicalResult SliceOp::buildGradients(OpBuilder &builder,
                                      ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  if (std::optional<ArrayRef<int64_t>> strides = getStrides())
    if (llvm::any_of(*strides, [](int64_t stride) { return stride != 1; }))
      return emitOpError("has no gradient: strides other than 1 are not "
                         "supported");
  GradientBuilder grads(builder, *this);
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  ArrayRef<int64_t> offsets = getOffsets(), sizes = getSizes();
  SmallVector<int64_t> high;
  for (auto [dim, offset, size] : llvm::zip_equal(shape, offsets, sizes))
    high.push_back(dim - offset - size);
  operandGrads.push_back(grads.create<PadOp>(dy, offsets, high));
  return success();
}

/// x cut along the axis into y_0, ..., y_n: dx = concat(dy_0, ..., dy_n),
/// with zeros standing in for a piece that does not reach the loss.
LogicalResult SplitOp::buildGradients(OpBuilder &builder,
                                      ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  if (llvm::all_of(resultGrads, [](Value grad) { return !grad; }))
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  SmallVector<Value> pieces;
  for (auto [result, grad] : llvm::zip_equal(getResults(), resultGrads)) {
    RankedTensorType type = typeOf(result);
    pieces.push_back(grad ? grad
                          : grads.fill(type.getShape(), type.getElementType(),
                                       /*value=*/0.0));
  }
  operandGrads.push_back(grads.create<ConcatOp>(
      pieces, builder.getI64IntegerAttr(static_cast<int64_t>(getAxis()))));
  return success();
}

/// y = concat(x_0, ..., x_n) along the axis: dx_i = the slice of dy that
/// x_i filled.
LogicalResult ConcatOp::buildGradients(OpBuilder &builder,
                                       ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  int64_t axis = getAxis();
  SmallVector<int64_t> offsets(typeOf(dy).getRank(), 0);
  for (Value input : getInputs()) {
    ArrayRef<int64_t> shape = typeOf(input).getShape();
    operandGrads.push_back(
        grads.create<SliceOp>(dy, offsets, shape, DenseI64ArrayAttr()));
    offsets[axis] += shape[axis];
  }
  return success();
}

/// y = sum of x over the axes: every x element feeds its sum once, so
/// dx = dy broadcast back over the reduced axes.
LogicalResult
ReduceSumOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  operandGrads.push_back(grads.expandReduced(dy, getAxes(), getInput()));
  return success();
}

/// y = sum of x over the axes / n, n the product of the reduced (global)
/// dims: dx = dy / n broadcast back over the reduced axes.
LogicalResult
ReduceMeanOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(*this, operandGrads);
  GradientBuilder grads(builder, *this);
  double count = 1;
  for (int64_t axis : getAxes())
    count *= getInput().getType().getDimSize(axis);
  // An empty input has an empty gradient; no division by zero.
  if (count > 0)
    dy = grads.scale(dy, 1.0 / count);
  operandGrads.push_back(grads.expandReduced(dy, getAxes(), getInput()));
  return success();
}
