//===- GraphBuilder.h - builds nn training graphs ---------------*- C++ -*-===//
//
// Captures a model as one `func.func` of `nn` ops on global tensors: inputs
// split along the batch on every rank (but a model axis), variables
// broadcast (or split on a model axis, tensor parallelism), intermediate
// values left for SBP propagation. Errors (a shape that does not fit, a
// repeated name) are recorded, not fatal: the first one is kept, later calls
// become no-ops, and finish() reports it.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_BUILDER_GRAPHBUILDER_H
#define ZEROSBP_COMPILER_BUILDER_GRAPHBUILDER_H

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>

namespace zerosbp {

class GraphBuilder {
public:
  /// Starts graph `name` (the function's name) on `placement`. Loads the
  /// dialects it needs into `context`.
  GraphBuilder(mlir::MLIRContext &context, llvm::StringRef name,
               mlir::sbp::PlacementAttr placement);

  /// A placement of `numRanks` CPU ranks 0..numRanks-1.
  static mlir::sbp::PlacementAttr cpuPlacement(mlir::MLIRContext &context,
                                               int64_t numRanks);
  /// A placement of ranks 0..numRanks-1 of device kind `kind`, laid out
  /// as `hierarchy` when given (its product is numRanks).
  static mlir::sbp::PlacementAttr
  makePlacement(mlir::MLIRContext &context, mlir::sbp::DeviceKind kind,
                int64_t numRanks, llvm::ArrayRef<int64_t> hierarchy = {});

  /// Makes hierarchy axis `axis` the model axis (tensor parallelism,
  /// docs/design.md#tensor-parallelism): inputs are whole on it (split on
  /// the batch over the other axes), and variables may be split on it.
  void setModelAxis(int64_t axis);

  mlir::MLIRContext &getContext() { return context; }

  /// Every op built from here to endCheckpoint() belongs to a new
  /// activation-checkpointing segment: its activations are recomputed in
  /// the backward instead of kept (zero-remat). Segments do not nest.
  void beginCheckpoint();
  void endCheckpoint();

  /// Every op built from here on, variables included, runs on pipeline
  /// stage `stage` (docs/design.md#pipeline-parallelism); inputs are placed
  /// where they are read. Stages do not decrease along the forward.
  void setPipelineStage(int64_t stage);
  mlir::Type f32() { return builder.getF32Type(); }
  mlir::Type i64() { return builder.getI64Type(); }

  //===--------------------------------------------------------------------===//
  // Sources
  //===--------------------------------------------------------------------===//

  /// A data input, split along axis 0 (the batch) on every hierarchy axis.
  mlir::Value input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    mlir::Type elementType);
  /// A named variable, broadcast on every rank; with `modelSplitDim`, split
  /// on that dim over the model axis and broadcast on the others.
  mlir::Value
  variable(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
           mlir::sbp::Role role = mlir::sbp::Role::param,
           mlir::nn::Initializer init = mlir::nn::Initializer::zeros,
           double initScale = 0.0,
           std::optional<int64_t> modelSplitDim = std::nullopt);
  /// Marks a variable as frozen: it gets no gradient and no update.
  void freeze(mlir::Value variable);
  mlir::Value fill(double value, llvm::ArrayRef<int64_t> shape,
                   mlir::Type elementType);
  /// The graph's step count (`nn.step`), created first in the graph on first
  /// use; the optimizer's updates read the same one.
  mlir::Value step();

  //===--------------------------------------------------------------------===//
  // Ops
  //===--------------------------------------------------------------------===//

  mlir::Value matmul(mlir::Value lhs, mlir::Value rhs,
                     bool transposeLhs = false, bool transposeRhs = false);
  mlir::Value batchMatmul(mlir::Value lhs, mlir::Value rhs,
                          bool transposeLhs = false, bool transposeRhs = false);
  mlir::Value add(mlir::Value lhs, mlir::Value rhs);
  mlir::Value sub(mlir::Value lhs, mlir::Value rhs);
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs);
  mlir::Value div(mlir::Value lhs, mlir::Value rhs);
  mlir::Value biasAdd(mlir::Value input, mlir::Value bias);
  mlir::Value relu(mlir::Value input);
  mlir::Value gelu(mlir::Value input);
  mlir::Value tanh(mlir::Value input);
  mlir::Value scale(mlir::Value input, double factor);
  /// Zeroes elements with probability `p` by a mask keyed by `seed` (all 64
  /// bits), `stream` (one per dropout of the graph) and the step
  /// (docs/compiler.md, "Dropout").
  mlir::Value dropout(mlir::Value input, double p, uint64_t seed,
                      int64_t stream);
  mlir::Value cast(mlir::Value input, mlir::Type elementType);
  mlir::Value layerNorm(mlir::Value input, mlir::Value gamma, mlir::Value beta,
                        double epsilon = 1e-5);
  mlir::Value softmax(mlir::Value input, int64_t axis = -1,
                      bool causal = false);
  mlir::Value embedding(mlir::Value table, mlir::Value ids);
  mlir::Value crossEntropy(mlir::Value logits, mlir::Value labels);
  mlir::Value reshape(mlir::Value input, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value input, llvm::ArrayRef<int64_t> permutation);
  mlir::Value slice(mlir::Value input, llvm::ArrayRef<int64_t> offsets,
                    llvm::ArrayRef<int64_t> sizes);
  llvm::SmallVector<mlir::Value> split(mlir::Value input, int64_t axis,
                                       llvm::ArrayRef<int64_t> sizes);
  mlir::Value concat(mlir::ValueRange inputs, int64_t axis);
  mlir::Value reduceSum(mlir::Value input, llvm::ArrayRef<int64_t> axes,
                        bool keepdim = false);
  mlir::Value reduceMean(mlir::Value input, llvm::ArrayRef<int64_t> axes,
                         bool keepdim = false);

  //===--------------------------------------------------------------------===//
  // Layers (PyTorch parameter layouts and names)
  //===--------------------------------------------------------------------===//

  /// How a linear layer lays out over the model axis: Megatron's
  /// column-parallel (weight and bias split on the output dim) and
  /// row-parallel (weight split on the input dim, bias replicated).
  enum class Parallel { none, column, row };

  /// `x W^T + b` over the last axis of a 2-D `x`; creates `<prefix>.weight`
  /// (out, in) and `<prefix>.bias` (out) like torch.nn.Linear.
  mlir::Value linear(llvm::StringRef prefix, mlir::Value x, int64_t out,
                     bool bias = true, Parallel parallel = Parallel::none);
  /// torch.nn.LayerNorm over the last axis: `<prefix>.weight`, `.bias`.
  mlir::Value layerNormLayer(llvm::StringRef prefix, mlir::Value x);

  //===--------------------------------------------------------------------===//
  // Result
  //===--------------------------------------------------------------------===//

  /// Returns `results` from the graph, verifies it and hands over the
  /// module; fails with error() set when any step failed.
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
  finish(mlir::ValueRange results);

  /// The first error, empty when there was none.
  const std::string &error() const { return firstError; }
  bool ok() const { return firstError.empty(); }

  /// The shape of a built value (empty for a null value).
  static llvm::ArrayRef<int64_t> shapeOf(mlir::Value value);

private:
  /// Creates an op whose result types are inferred; records the inference
  /// error instead of aborting.
  template <typename OpTy>
  mlir::Operation *createInferred(mlir::ValueRange operands,
                                  llvm::ArrayRef<mlir::NamedAttribute> attrs);
  mlir::Value createInferredValue(mlir::Operation *op) {
    return op ? op->getResult(0) : mlir::Value();
  }
  bool usable(mlir::ValueRange values);
  void fail(const llvm::Twine &message);
  mlir::RankedTensorType globalType(llvm::ArrayRef<int64_t> shape,
                                    mlir::Type elementType,
                                    mlir::sbp::SbpAttr sbp,
                                    mlir::sbp::Role role,
                                    mlir::sbp::SbpAttr onModelAxis = {});
  mlir::Location loc();

  /// Marks each op inserted while a segment is open, and with the current
  /// pipeline stage.
  struct CheckpointMarker : mlir::OpBuilder::Listener {
    void notifyOperationInserted(mlir::Operation *op,
                                 mlir::OpBuilder::InsertPoint) override;
    int64_t segment = -1;       // -1: none open.
    int64_t pipelineStage = -1; // -1: not pipelined.
  };

  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  CheckpointMarker checkpoints;
  int64_t nextSegment = 0;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  mlir::sbp::PlacementAttr placement;
  /// The model axis; -1: none.
  int64_t modelAxis = -1;
  llvm::StringSet<> names;
  std::string firstError;
};

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_BUILDER_GRAPHBUILDER_H
