//===- GraphCapture.cpp - graph capture and compile for Python ------------===//

#include "python_api/capture/GraphCapture.h"

#include "compiler/builder/GraphBuilder.h"
#include "compiler/config/GraphConfig.h"
#include "compiler/driver/CompileDriver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <stdexcept>

using namespace mlir;

namespace zerosbp::python {

namespace {

[[noreturn]] void fail(const llvm::Twine &message) {
  throw std::runtime_error(message.str());
}

std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// One line per op: `%5 = nn.matmul(%0, %2) : tensor<...>`.
std::string summarize(func::FuncOp func) {
  std::string text;
  llvm::raw_string_ostream os(text);
  AsmState state(func);
  func.walk([&](Operation *op) {
    if (op == func.getOperation())
      return;
    os << "  ";
    for (auto [index, result] : llvm::enumerate(op->getResults())) {
      os << (index ? ", " : "");
      result.printAsOperand(os, state);
    }
    if (op->getNumResults())
      os << " = ";
    os << op->getName();
    if (auto name = op->getInherentAttr("name"))
      if (auto text = llvm::dyn_cast_or_null<StringAttr>(*name))
        os << " \"" << text.getValue() << "\"";
    os << "(";
    for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
      os << (index ? ", " : "");
      operand.printAsOperand(os, state);
    }
    os << ")";
    for (Type type : op->getResultTypes())
      os << " : " << typeName(type);
    os << "\n";
  });
  return text;
}

} // namespace

/// The config of `spec`, or the error it gives as a one-line exception.
ZeroConfig buildConfig(const ConfigSpec &spec, int64_t world) {
  auto config = buildGraphConfig(spec, world);
  if (!config)
    fail(llvm::toString(config.takeError()));
  return *config;
}

std::string checkConfig(const ConfigSpec &spec, int64_t world) {
  return buildConfig(spec, world).str();
}

/// Ranks 0..world-1 of `device`, laid out as `hierarchy` (empty: one axis).
static sbp::PlacementAttr placementOf(MLIRContext &context,
                                      sbp::DeviceKind device, int64_t world,
                                      llvm::ArrayRef<int64_t> hierarchy) {
  // Loads the dialects too.
  sbp::PlacementAttr flat = GraphBuilder::makePlacement(context, device, world);
  if (hierarchy.empty())
    return flat;
  return sbp::PlacementAttr::get(&context, device, flat.getRanks(), hierarchy);
}

struct GraphCapture::Impl {
  Impl(const std::string &name, int64_t world, int64_t pipelineStages,
       sbp::DeviceKind device, llvm::ArrayRef<int64_t> hierarchy)
      : world(world), pipelineStages(pipelineStages),
        hierarchy(
            hierarchy.empty()
                ? std::vector<int64_t>{world / pipelineStages}
                : std::vector<int64_t>(hierarchy.begin(), hierarchy.end())),
        builder(
            context, name,
            placementOf(context, device, world / pipelineStages, hierarchy)) {
    context.disableMultithreading();
  }

  /// Gives the freshly built source `value` the SBP list `sbp`: the
  /// builder lays sources out the same way on every axis.
  void setSbp(Value value, llvm::ArrayRef<sbp::SbpAttr> sbp) {
    auto type = llvm::cast<RankedTensorType>(value.getType());
    auto encoding = llvm::cast<sbp::GlobalTensorAttr>(type.getEncoding());
    value.setType(RankedTensorType::get(type.getShape(), type.getElementType(),
                                        encoding.withSbp(sbp)));
  }

  Value value(int handle) const {
    if (handle < 0 || handle >= static_cast<int>(values.size()))
      fail("value " + llvm::Twine(handle) + " does not belong to this graph");
    return values[handle];
  }

  int add(Value value) {
    if (!builder.ok() || !value)
      fail(builder.error().empty() ? "the graph could not be built"
                                   : builder.error());
    values.push_back(value);
    return static_cast<int>(values.size()) - 1;
  }

  Type elementType(const std::string &name) {
    Builder b(&context);
    Type type = llvm::StringSwitch<Type>(name)
                    .Case("f32", b.getF32Type())
                    .Case("f16", b.getF16Type())
                    .Case("bf16", b.getBF16Type())
                    .Case("f64", b.getF64Type())
                    .Case("i64", b.getI64Type())
                    .Case("i32", b.getI32Type())
                    .Default(Type());
    if (!type)
      fail("unsupported dtype '" + name + "'");
    return type;
  }

  MLIRContext context;
  int64_t world;                  // Every stage's ranks.
  int64_t pipelineStages;         // 1: not pipelined.
  std::vector<int64_t> hierarchy; // One size per axis of a stage.
  GraphBuilder builder;
  std::vector<Value> values;
  bool finished = false;
};

GraphCapture::GraphCapture(const std::string &name, int64_t world,
                           const std::string &device,
                           const std::vector<int64_t> &hierarchy,
                           int64_t pipelineStages) {
  if (world < 1)
    fail("a placement needs at least one rank");
  if (device != "cpu" && device != "cuda")
    fail("unknown device '" + device + "' (expected cpu or cuda)");
  if (pipelineStages < 1 || world % pipelineStages != 0)
    fail("pipeline_parallel_size " + llvm::Twine(pipelineStages) +
         " does not divide the " + llvm::Twine(world) +
         " ranks into equal stages");
  // The graph is captured on the first stage's ranks.
  int64_t stageWorld = world / pipelineStages;
  if (!hierarchy.empty()) {
    // Checked before the attribute is built, whose verifier would abort.
    if (hierarchy.size() > 2)
      fail("a placement hierarchy has at most 2 axes, got " +
           llvm::Twine(hierarchy.size()));
    int64_t product = 1;
    for (int64_t size : hierarchy) {
      if (size < 1 || size > stageWorld)
        fail("placement hierarchy axis size " + llvm::Twine(size) +
             " is not in [1, " + llvm::Twine(stageWorld) + "]");
      product *= size;
    }
    if (product != stageWorld)
      fail("placement hierarchy holds " + llvm::Twine(product) +
           " ranks, not " + llvm::Twine(stageWorld));
  }
  impl = std::make_unique<Impl>(name, world, pipelineStages,
                                device == "cuda" ? sbp::DeviceKind::cuda
                                                 : sbp::DeviceKind::cpu,
                                hierarchy);
}

GraphCapture::~GraphCapture() = default;

int64_t GraphCapture::world() const { return impl->world; }

int GraphCapture::input(const std::string &name,
                        const std::vector<int64_t> &shape,
                        const std::string &dtype) {
  int handle =
      impl->add(impl->builder.input(name, shape, impl->elementType(dtype)));
  // The batch is split over the data axis alone: the other axes (the model
  // axis) hold the same rows.
  if (impl->hierarchy.size() > 1 && !shape.empty()) {
    SmallVector<sbp::SbpAttr> sbp(impl->hierarchy.size(),
                                  sbp::SbpAttr::getBroadcast(&impl->context));
    sbp[0] = sbp::SbpAttr::getSplit(&impl->context, 0);
    impl->setSbp(impl->values[handle], sbp);
  }
  return handle;
}

int GraphCapture::parameter(const std::string &name,
                            const std::vector<int64_t> &shape, bool trainable,
                            const std::vector<int64_t> &splits) {
  size_t axes = impl->hierarchy.size();
  if (!splits.empty() && splits.size() != axes)
    fail("parameter '" + name + "': " + llvm::Twine(splits.size()) +
         " SBP entries for a placement of " + llvm::Twine(axes) +
         " hierarchy axes");
  SmallVector<sbp::SbpAttr> sbp(axes,
                                sbp::SbpAttr::getBroadcast(&impl->context));
  std::vector<int64_t> parts = shape; // What each axis cuts.
  for (auto [axis, dim] : llvm::enumerate(splits)) {
    if (dim == -1)
      continue;
    if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
      fail("parameter '" + name + "': axis " + llvm::Twine(axis) +
           " splits dim " + llvm::Twine(dim) + " of a " +
           llvm::Twine(shape.size()) + "-D tensor");
    if (parts[dim] % impl->hierarchy[axis] != 0)
      fail("parameter '" + name + "': axis " + llvm::Twine(axis) +
           " cuts dim " + llvm::Twine(dim) + " (" + llvm::Twine(parts[dim]) +
           ") into " + llvm::Twine(impl->hierarchy[axis]) +
           " parts; it must divide evenly");
    parts[dim] /= impl->hierarchy[axis];
    sbp[axis] = sbp::SbpAttr::getSplit(&impl->context, dim);
  }
  int handle = impl->add(impl->builder.variable(name, shape));
  if (!splits.empty())
    impl->setSbp(impl->values[handle], sbp);
  if (!trainable)
    impl->builder.freeze(impl->values[handle]);
  return handle;
}

int GraphCapture::apply(const std::string &op, const std::vector<int> &operands,
                        const OpAttrs &attrs) {
  if (impl->finished)
    fail("the graph is already compiled");
  GraphBuilder &b = impl->builder;
  std::vector<Value> in;
  for (int handle : operands)
    in.push_back(impl->value(handle));
  auto need = [&](size_t count) {
    if (in.size() != count)
      fail(op + " takes " + llvm::Twine(count) + " operands, got " +
           llvm::Twine(in.size()));
  };
  Value result;
  if (op == "matmul" || op == "batch_matmul") {
    need(2);
    result = op == "matmul" ? b.matmul(in[0], in[1], attrs.transposeLhs,
                                       attrs.transposeRhs)
                            : b.batchMatmul(in[0], in[1], attrs.transposeLhs,
                                            attrs.transposeRhs);
  } else if (op == "add" || op == "sub" || op == "mul" || op == "div" ||
             op == "bias_add" || op == "embedding" || op == "cross_entropy") {
    need(2);
    if (op == "add")
      result = b.add(in[0], in[1]);
    else if (op == "sub")
      result = b.sub(in[0], in[1]);
    else if (op == "mul")
      result = b.mul(in[0], in[1]);
    else if (op == "div")
      result = b.div(in[0], in[1]);
    else if (op == "bias_add")
      result = b.biasAdd(in[0], in[1]);
    else if (op == "embedding")
      result = b.embedding(in[0], in[1]);
    else
      result = b.crossEntropy(in[0], in[1]);
  } else if (op == "relu" || op == "gelu" || op == "tanh") {
    need(1);
    result = op == "relu"   ? b.relu(in[0])
             : op == "gelu" ? b.gelu(in[0])
                            : b.tanh(in[0]);
  } else if (op == "scale") {
    need(1);
    result = b.scale(in[0], attrs.scalar);
  } else if (op == "dropout") {
    // ints = [low 32 bits of the seed, high 32 bits, stream]: a seed up to
    // 2^64 - 1 does not fit one int64.
    need(1);
    if (attrs.ints.size() != 3)
      fail("dropout takes ints = [seed_lo, seed_hi, stream]");
    auto half = [](int64_t word) {
      if (word < 0 || word > 0xffffffffLL)
        fail("dropout: seed halves must lie in [0, 2^32)");
      return static_cast<uint64_t>(word);
    };
    uint64_t seed = half(attrs.ints[0]) | half(attrs.ints[1]) << 32;
    result = b.dropout(in[0], attrs.scalar, seed, attrs.ints[2]);
  } else if (op == "cast") {
    need(1);
    result = b.cast(in[0], impl->elementType(attrs.dtype));
  } else if (op == "layer_norm") {
    need(3);
    result = b.layerNorm(in[0], in[1], in[2], attrs.scalar);
  } else if (op == "softmax") {
    need(1);
    result = b.softmax(in[0], attrs.axis, attrs.causal);
  } else if (op == "reshape") {
    need(1);
    result = b.reshape(in[0], attrs.ints);
  } else if (op == "transpose") {
    need(1);
    result = b.transpose(in[0], attrs.ints);
  } else if (op == "slice") {
    need(1);
    result = b.slice(in[0], attrs.ints, attrs.ints2);
  } else if (op == "concat") {
    result = b.concat(in, attrs.axis);
  } else if (op == "reduce_sum" || op == "reduce_mean") {
    need(1);
    result = op == "reduce_sum"
                 ? b.reduceSum(in[0], attrs.ints, attrs.keepdim)
                 : b.reduceMean(in[0], attrs.ints, attrs.keepdim);
  } else if (op == "fill") {
    need(0);
    result = b.fill(attrs.scalar, attrs.ints, impl->elementType(attrs.dtype));
  } else {
    fail("unknown op '" + op + "'");
  }
  return impl->add(result);
}

std::vector<int> GraphCapture::split(int value, int64_t axis,
                                     const std::vector<int64_t> &sizes) {
  std::vector<int> handles;
  for (Value part : impl->builder.split(impl->value(value), axis, sizes))
    handles.push_back(impl->add(part));
  if (handles.size() != sizes.size())
    impl->add(Value()); // Reports the builder's error.
  return handles;
}

void GraphCapture::beginCheckpoint() {
  impl->builder.beginCheckpoint();
  if (!impl->builder.ok())
    fail(impl->builder.error());
}

void GraphCapture::endCheckpoint() { impl->builder.endCheckpoint(); }

void GraphCapture::setPipelineStage(int64_t stage) {
  if (stage < 0 || stage >= impl->pipelineStages)
    fail("pipeline stage " + llvm::Twine(stage) +
         " is out of range for pipeline_parallel_size " +
         llvm::Twine(impl->pipelineStages));
  impl->builder.setPipelineStage(stage);
  if (!impl->builder.ok())
    fail(impl->builder.error());
}

std::vector<int64_t> GraphCapture::shape(int value) const {
  llvm::ArrayRef<int64_t> shape = GraphBuilder::shapeOf(impl->value(value));
  return {shape.begin(), shape.end()};
}

std::string GraphCapture::dtype(int value) const {
  Type type = llvm::cast<RankedTensorType>(impl->value(value).getType())
                  .getElementType();
  return typeName(type);
}

CompiledGraph GraphCapture::compile(int loss, const ConfigSpec &spec,
                                    const std::string &planFile, bool keepIr) {
  if (impl->finished)
    fail("the graph is already compiled");
  Value lossValue = impl->value(loss);
  if (!GraphBuilder::shapeOf(lossValue).empty())
    fail("the loss must be a scalar, got a tensor of type " +
         typeName(lossValue.getType()));
  return compileGraph({loss}, spec, planFile, keepIr, /*inference=*/false);
}

CompiledGraph GraphCapture::compileInference(const std::vector<int> &outputs,
                                             const ConfigSpec &spec,
                                             const std::string &planFile,
                                             bool keepIr) {
  if (impl->finished)
    fail("the graph is already compiled");
  if (outputs.empty())
    fail("an inference graph returns at least one output");
  return compileGraph(outputs, spec, planFile, keepIr, /*inference=*/true);
}

CompiledGraph GraphCapture::compileGraph(const std::vector<int> &results,
                                         const ConfigSpec &spec,
                                         const std::string &planFile,
                                         bool keepIr, bool inference) {
  ZeroConfig config = buildConfig(spec, impl->world);
  if (config.pipelineParallelSize != impl->pipelineStages)
    fail("the graph was captured for " + llvm::Twine(impl->pipelineStages) +
         " pipeline stages but its config has pipeline-parallel-size " +
         llvm::Twine(config.pipelineParallelSize));
  SmallVector<Value> values;
  for (int handle : results)
    values.push_back(impl->value(handle));
  impl->finished = true;
  auto module = impl->builder.finish(values);
  if (failed(module))
    fail(impl->builder.error());

  CompiledGraph compiled;
  compiled.config = config.str();
  CompileOptions options;
  options.kind = inference ? GraphKind::Inference : GraphKind::Training;
  options.activationBudget = spec.activationMemoryBudget;
  options.planFile = planFile;
  auto print = [&](llvm::StringRef pass, ModuleOp op) {
    std::string text;
    llvm::raw_string_ostream os(text);
    op.print(os);
    compiled.passIr.emplace_back(pass.str(), std::move(text));
  };
  if (keepIr)
    options.afterPass = print;
  auto describe = [&](func::FuncOp func) {
    compiled.summary = summarize(func);
  };
  options.onGlobalView = describe;
  auto report = zerosbp::compileGraph(**module, config, options);
  if (!report)
    fail(llvm::toString(report.takeError()));
  llvm::raw_string_ostream os(compiled.reportJson);
  os << llvm::json::Value(std::move(*report));
  return compiled;
}

} // namespace zerosbp::python
