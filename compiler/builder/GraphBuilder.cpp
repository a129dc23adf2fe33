//===- GraphBuilder.cpp - builds nn training graphs -----------------------===//

#include "compiler/builder/GraphBuilder.h"

#include "compiler/registration/InitAllDialects.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace zerosbp;

GraphBuilder::GraphBuilder(MLIRContext &context, StringRef name,
                           sbp::PlacementAttr placement)
    : context(context), builder(&context), placement(placement) {
  loadAllDialects(context);
  module = ModuleOp::create(UnknownLoc::get(&context));
  builder.setInsertionPointToEnd(module->getBody());
  func =
      func::FuncOp::create(builder, NameLoc::get(builder.getStringAttr(name)),
                           name, builder.getFunctionType({}, {}));
  builder.setInsertionPointToEnd(func.addEntryBlock());
  builder.setListener(&checkpoints);
}

void GraphBuilder::CheckpointMarker::notifyOperationInserted(
    Operation *op, OpBuilder::InsertPoint) {
  auto i64 = IntegerType::get(op->getContext(), 64);
  // An input is read on another stage than the one open when it is made
  // (the labels by the loss); zero-pipeline-stages places it by its users.
  if (pipelineStage >= 0 && !isa<nn::InputOp>(op))
    op->setAttr(nn::kPipelineStageAttr, IntegerAttr::get(i64, pipelineStage));
  // Sources are not recomputed: a parameter first used inside the segment
  // stays a variable of the graph.
  if (segment < 0 || isa<nn::VariableOp, nn::InputOp, nn::StepOp>(op))
    return;
  op->setAttr(nn::kCheckpointAttr, IntegerAttr::get(i64, segment));
}

void GraphBuilder::beginCheckpoint() {
  if (checkpoints.segment >= 0)
    return fail("checkpoint segments do not nest: a checkpointed module is "
                "called inside another");
  checkpoints.segment = nextSegment++;
}

void GraphBuilder::endCheckpoint() { checkpoints.segment = -1; }

void GraphBuilder::setPipelineStage(int64_t stage) {
  if (stage < checkpoints.pipelineStage)
    return fail("pipeline stages do not decrease along the forward: stage " +
                llvm::Twine(stage) + " after stage " +
                llvm::Twine(checkpoints.pipelineStage));
  checkpoints.pipelineStage = stage;
}

sbp::PlacementAttr GraphBuilder::cpuPlacement(MLIRContext &context,
                                              int64_t numRanks) {
  return makePlacement(context, sbp::DeviceKind::cpu, numRanks);
}

sbp::PlacementAttr GraphBuilder::makePlacement(MLIRContext &context,
                                               sbp::DeviceKind kind,
                                               int64_t numRanks,
                                               ArrayRef<int64_t> hierarchy) {
  loadAllDialects(context);
  SmallVector<int64_t> ranks;
  for (int64_t r = 0; r < numRanks; ++r)
    ranks.push_back(r);
  return sbp::PlacementAttr::get(&context, kind, ranks, hierarchy);
}

void GraphBuilder::setModelAxis(int64_t axis) {
  if (axis < 0 || axis >= placement.getNumHierarchyAxes())
    return fail("model axis " + Twine(axis) + " is not an axis of the " +
                Twine(placement.getNumHierarchyAxes()) + "-D placement");
  modelAxis = axis;
}

Location GraphBuilder::loc() { return func.getLoc(); }

void GraphBuilder::fail(const Twine &message) {
  if (firstError.empty())
    firstError = message.str();
}

bool GraphBuilder::usable(ValueRange values) {
  if (!ok())
    return false;
  for (Value value : values)
    if (!value) {
      fail("an operand comes from a failed step");
      return false;
    }
  return true;
}

ArrayRef<int64_t> GraphBuilder::shapeOf(Value value) {
  if (!value)
    return {};
  return llvm::cast<RankedTensorType>(value.getType()).getShape();
}

RankedTensorType GraphBuilder::globalType(ArrayRef<int64_t> shape,
                                          Type elementType, sbp::SbpAttr sbp,
                                          sbp::Role role,
                                          sbp::SbpAttr onModelAxis) {
  SmallVector<sbp::SbpAttr> perAxis(placement.getNumHierarchyAxes(), sbp);
  if (modelAxis >= 0 && onModelAxis)
    perAxis[modelAxis] = onModelAxis;
  auto encoding =
      sbp::GlobalTensorAttr::get(&context, perAxis, placement, role);
  return RankedTensorType::get(shape, elementType, encoding);
}

template <typename OpTy>
Operation *GraphBuilder::createInferred(ValueRange operands,
                                        ArrayRef<NamedAttribute> attrs) {
  if (!usable(operands))
    return nullptr;
  OperationState state(loc(), OpTy::getOperationName());
  state.addOperands(operands);
  state.addAttributes(attrs);
  // Inference reads inherent attributes from properties.
  OpaqueProperties properties =
      &state.getOrAddProperties<typename OpTy::Properties>();
  DictionaryAttr dictionary = state.attributes.getDictionary(&context);
  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diagnostics.empty())
        diagnostics = diag.str();
      return success();
    });
    auto emitError = [&]() { return mlir::emitError(loc()); };
    if (!attrs.empty() &&
        failed(state.name.getRegisteredInfo()->setOpPropertiesFromAttribute(
            state.name, properties, dictionary, emitError))) {
      fail(Twine("bad attributes for ") + OpTy::getOperationName());
      return nullptr;
    }
    SmallVector<Type> types;
    if (failed(OpTy::inferReturnTypes(&context, loc(), operands, dictionary,
                                      properties, {}, types))) {
      fail(diagnostics.empty() ? Twine("cannot infer result types of ") +
                                     OpTy::getOperationName()
                               : Twine(diagnostics));
      return nullptr;
    }
    state.addTypes(types);
  }
  return builder.create(state);
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

Value GraphBuilder::input(StringRef name, ArrayRef<int64_t> shape,
                          Type elementType) {
  if (!usable({}))
    return {};
  if (!names.insert(name).second) {
    fail("name '" + name + "' is already used in graph");
    return {};
  }
  // The batch is split over the data axes; a model axis holds it whole.
  auto type =
      globalType(shape, elementType, sbp::SbpAttr::getSplit(&context, 0),
                 sbp::Role::input, sbp::SbpAttr::getBroadcast(&context));
  if (shape.empty())
    type = globalType(shape, elementType, sbp::SbpAttr::getBroadcast(&context),
                      sbp::Role::input);
  return nn::InputOp::create(builder, loc(), type, name);
}

Value GraphBuilder::variable(StringRef name, ArrayRef<int64_t> shape,
                             sbp::Role role, nn::Initializer init,
                             double initScale,
                             std::optional<int64_t> modelSplitDim) {
  if (!usable({}))
    return {};
  if (!names.insert(name).second) {
    fail("name '" + name + "' is already used in graph");
    return {};
  }
  sbp::SbpAttr onModelAxis;
  if (modelSplitDim) {
    if (modelAxis < 0 || *modelSplitDim < 0 ||
        *modelSplitDim >= (int64_t)shape.size()) {
      fail("variable '" + name + "' is split on dim " + Twine(*modelSplitDim) +
           " over the model axis, but there is no such dim or axis");
      return {};
    }
    onModelAxis = sbp::SbpAttr::getSplit(&context, *modelSplitDim);
  }
  auto type =
      globalType(shape, builder.getF32Type(),
                 sbp::SbpAttr::getBroadcast(&context), role, onModelAxis);
  return nn::VariableOp::create(
      builder, loc(), type, builder.getStringAttr(name),
      sbp::RoleAttr::get(&context, role),
      nn::InitializerAttr::get(&context, init),
      builder.getF64FloatAttr(initScale),
      /*frozen=*/nullptr, /*logical_shape=*/nullptr, /*model_split=*/nullptr);
}

void GraphBuilder::freeze(Value variable) {
  if (!usable({variable}))
    return;
  auto op = variable.getDefiningOp<nn::VariableOp>();
  if (!op) {
    fail("freeze() takes a value made by variable()");
    return;
  }
  op.setFrozen(true);
}

Value GraphBuilder::fill(double value, ArrayRef<int64_t> shape,
                         Type elementType) {
  if (!usable({}))
    return {};
  return nn::FillOp::create(builder, loc(),
                            RankedTensorType::get(shape, elementType),
                            builder.getF64FloatAttr(value));
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

/// Optional unit attributes for the transpose flags.
static SmallVector<NamedAttribute> transposeFlags(OpBuilder &builder, bool lhs,
                                                  bool rhs) {
  SmallVector<NamedAttribute> attrs;
  if (lhs)
    attrs.push_back(
        builder.getNamedAttr("transpose_lhs", builder.getUnitAttr()));
  if (rhs)
    attrs.push_back(
        builder.getNamedAttr("transpose_rhs", builder.getUnitAttr()));
  return attrs;
}

Value GraphBuilder::matmul(Value lhs, Value rhs, bool transposeLhs,
                           bool transposeRhs) {
  return createInferredValue(createInferred<nn::MatmulOp>(
      {lhs, rhs}, transposeFlags(builder, transposeLhs, transposeRhs)));
}

Value GraphBuilder::batchMatmul(Value lhs, Value rhs, bool transposeLhs,
                                bool transposeRhs) {
  return createInferredValue(createInferred<nn::BatchMatmulOp>(
      {lhs, rhs}, transposeFlags(builder, transposeLhs, transposeRhs)));
}

Value GraphBuilder::add(Value lhs, Value rhs) {
  return createInferredValue(createInferred<nn::AddOp>({lhs, rhs}, {}));
}
Value GraphBuilder::sub(Value lhs, Value rhs) {
  return createInferredValue(createInferred<nn::SubOp>({lhs, rhs}, {}));
}
Value GraphBuilder::mul(Value lhs, Value rhs) {
  return createInferredValue(createInferred<nn::MulOp>({lhs, rhs}, {}));
}
Value GraphBuilder::div(Value lhs, Value rhs) {
  return createInferredValue(createInferred<nn::DivOp>({lhs, rhs}, {}));
}
Value GraphBuilder::biasAdd(Value input, Value bias) {
  return createInferredValue(createInferred<nn::BiasAddOp>({input, bias}, {}));
}
Value GraphBuilder::relu(Value input) {
  return createInferredValue(createInferred<nn::ReluOp>({input}, {}));
}
Value GraphBuilder::gelu(Value input) {
  return createInferredValue(createInferred<nn::GeluOp>({input}, {}));
}
Value GraphBuilder::tanh(Value input) {
  return createInferredValue(createInferred<nn::TanhOp>({input}, {}));
}

Value GraphBuilder::step() {
  if (!usable({}))
    return {};
  Block &body = func.getBody().front();
  auto steps = body.getOps<nn::StepOp>();
  if (!steps.empty())
    return (*steps.begin()).getResult();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&body);
  return nn::StepOp::create(builder, loc(),
                            RankedTensorType::get({}, builder.getI64Type()));
}

Value GraphBuilder::dropout(Value input, double p, uint64_t seed,
                            int64_t stream) {
  Value count = step();
  return createInferredValue(createInferred<nn::DropoutOp>(
      {input, count},
      {builder.getNamedAttr("p", builder.getF64FloatAttr(p)),
       builder.getNamedAttr(
           "seed", builder.getI64IntegerAttr(static_cast<int64_t>(seed))),
       builder.getNamedAttr("stream", builder.getI64IntegerAttr(stream))}));
}

Value GraphBuilder::scale(Value input, double factor) {
  return createInferredValue(createInferred<nn::ScaleOp>(
      {input},
      {builder.getNamedAttr("factor", builder.getF64FloatAttr(factor))}));
}

Value GraphBuilder::cast(Value input, Type elementType) {
  if (!usable({input}))
    return {};
  auto type = RankedTensorType::get(shapeOf(input), elementType);
  return nn::CastOp::create(builder, loc(), type, input);
}

Value GraphBuilder::layerNorm(Value input, Value gamma, Value beta,
                              double epsilon) {
  return createInferredValue(createInferred<nn::LayerNormOp>(
      {input, gamma, beta},
      {builder.getNamedAttr("epsilon", builder.getF64FloatAttr(epsilon))}));
}

Value GraphBuilder::softmax(Value input, int64_t axis, bool causal) {
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis))};
  if (causal)
    attrs.push_back(builder.getNamedAttr("causal", builder.getUnitAttr()));
  return createInferredValue(createInferred<nn::SoftmaxOp>({input}, attrs));
}

Value GraphBuilder::embedding(Value table, Value ids) {
  return createInferredValue(createInferred<nn::EmbeddingOp>({table, ids}, {}));
}

Value GraphBuilder::crossEntropy(Value logits, Value labels) {
  return createInferredValue(
      createInferred<nn::CrossEntropyOp>({logits, labels}, {}));
}

Value GraphBuilder::reshape(Value input, ArrayRef<int64_t> shape) {
  if (!usable({input}))
    return {};
  auto inputType = llvm::cast<RankedTensorType>(input.getType());
  auto type = RankedTensorType::get(shape, inputType.getElementType());
  if (type.getNumElements() != inputType.getNumElements()) {
    std::string message;
    llvm::raw_string_ostream os(message);
    os << "'nn.reshape' op cannot reshape " << inputType << " to " << type
       << ": element counts differ";
    fail(message);
    return {};
  }
  return nn::ReshapeOp::create(builder, loc(), type, input);
}

Value GraphBuilder::transpose(Value input, ArrayRef<int64_t> permutation) {
  return createInferredValue(createInferred<nn::TransposeOp>(
      {input}, {builder.getNamedAttr(
                   "permutation", builder.getDenseI64ArrayAttr(permutation))}));
}

Value GraphBuilder::slice(Value input, ArrayRef<int64_t> offsets,
                          ArrayRef<int64_t> sizes) {
  return createInferredValue(createInferred<nn::SliceOp>(
      {input},
      {builder.getNamedAttr("offsets", builder.getDenseI64ArrayAttr(offsets)),
       builder.getNamedAttr("sizes", builder.getDenseI64ArrayAttr(sizes))}));
}

SmallVector<Value> GraphBuilder::split(Value input, int64_t axis,
                                       ArrayRef<int64_t> sizes) {
  Operation *op = createInferred<nn::SplitOp>(
      {input},
      {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis)),
       builder.getNamedAttr("sizes", builder.getDenseI64ArrayAttr(sizes))});
  if (!op)
    return SmallVector<Value>(sizes.size(), Value());
  return SmallVector<Value>(op->getResults());
}

Value GraphBuilder::concat(ValueRange inputs, int64_t axis) {
  return createInferredValue(createInferred<nn::ConcatOp>(
      inputs, {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis))}));
}

/// Attributes of reduce_sum and reduce_mean.
static SmallVector<NamedAttribute>
reduceAttrs(OpBuilder &builder, ArrayRef<int64_t> axes, bool keepdim) {
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("axes", builder.getDenseI64ArrayAttr(axes))};
  if (keepdim)
    attrs.push_back(builder.getNamedAttr("keepdim", builder.getUnitAttr()));
  return attrs;
}

Value GraphBuilder::reduceSum(Value input, ArrayRef<int64_t> axes,
                              bool keepdim) {
  return createInferredValue(createInferred<nn::ReduceSumOp>(
      {input}, reduceAttrs(builder, axes, keepdim)));
}

Value GraphBuilder::reduceMean(Value input, ArrayRef<int64_t> axes,
                               bool keepdim) {
  return createInferredValue(createInferred<nn::ReduceMeanOp>(
      {input}, reduceAttrs(builder, axes, keepdim)));
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

Value GraphBuilder::linear(StringRef prefix, Value x, int64_t out, bool bias,
                           Parallel parallel) {
  if (!usable({x}))
    return {};
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() != 2) {
    fail("linear layer '" + prefix + "' needs a 2-D input");
    return {};
  }
  int64_t in = shape.back();
  // torch.nn.Linear's default init: U(-1/sqrt(in), 1/sqrt(in)).
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  std::optional<int64_t> weightSplit, biasSplit;
  if (parallel == Parallel::column)
    weightSplit = biasSplit = 0;
  else if (parallel == Parallel::row)
    weightSplit = 1;
  Value weight =
      variable((prefix + ".weight").str(), {out, in}, sbp::Role::param,
               nn::Initializer::uniform, bound, weightSplit);
  Value y = matmul(x, weight, /*transposeLhs=*/false, /*transposeRhs=*/true);
  if (!bias)
    return y;
  Value b = variable((prefix + ".bias").str(), {out}, sbp::Role::param,
                     nn::Initializer::uniform, bound, biasSplit);
  return biasAdd(y, b);
}

Value GraphBuilder::layerNormLayer(StringRef prefix, Value x) {
  if (!usable({x}))
    return {};
  int64_t dim = shapeOf(x).back();
  Value gamma = variable((prefix + ".weight").str(), {dim}, sbp::Role::param,
                         nn::Initializer::ones);
  Value beta = variable((prefix + ".bias").str(), {dim}, sbp::Role::param,
                        nn::Initializer::zeros);
  return layerNorm(x, gamma, beta);
}

//===----------------------------------------------------------------------===//
// Result
//===----------------------------------------------------------------------===//

FailureOr<OwningOpRef<ModuleOp>> GraphBuilder::finish(ValueRange results) {
  if (!usable(results))
    return failure();
  func::ReturnOp::create(builder, loc(), results);
  func.setFunctionType(
      builder.getFunctionType({}, TypeRange(ValueRange(results))));
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diagnostics.empty())
      diagnostics = diag.str();
    return success();
  });
  if (failed(verify(*module))) {
    fail("graph does not verify: " + diagnostics);
    return failure();
  }
  return std::move(module);
}
