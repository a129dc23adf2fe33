//===- NNOps.td - nn dialect ops ---------------------------*- tablegen -*-===//

#ifndef ZEROSBP_DIALECTS_NN_IR_NNOPS_TD
#define ZEROSBP_DIALECTS_NN_IR_NNOPS_TD

include "dialects/nn/IR/NNBase.td"
include "dialects/nn/IR/NNInterfaces.td"
include "dialects/sbp/IR/SbpAttrs.td"
include "dialects/sbp/IR/SbpInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints and op classes
//===----------------------------------------------------------------------===//

def NN_Float : AnyTypeOf<[F32, F16, BF16]>;
// Graphs are planned ahead of time (memory, buffers, partitions), so every
// tensor has a static shape.
def NN_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;
def NN_F32Tensor : StaticShapeTensorOf<[F32]>;
def NN_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def NN_StepTensor : 0DTensorOf<[I64]>;
def NN_CodeTensor : StaticShapeTensorOf<[I8]>;

// `sbpMethods` names the SbpOpInterface methods with a default that the op
// overrides, as NN_LocalView.
class NN_Op<string mnemonic, list<Trait> traits = [],
            list<string> sbpMethods = []>
    : Op<NN_Dialect, mnemonic,
         !listconcat(traits, [DeclareOpInterfaceMethods<Sbp_SbpOpInterface,
                                                         sbpMethods>])>;

// An op whose result types follow from its operands and attributes. The
// inferred types carry no SBP encoding; annotated results still verify.
class NN_InferredOp<string mnemonic, list<Trait> traits = [],
                    list<string> sbpMethods = []>
    : NN_Op<mnemonic, !listconcat(traits, [Pure,
          InferTypeOpAdaptorWithIsCompatible]), sbpMethods> {
  let extraClassDefinition = [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l,
                                            ::mlir::TypeRange r) {
      return ::mlir::nn::isCompatibleIgnoringSbp(l, r);
    }
  }];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// A differentiable op: implements GradientOpInterface (NNGradients.cpp).
defvar NN_Differentiable = DeclareOpInterfaceMethods<NN_GradientOpInterface>;

// An optimizer update: names its states for OptimizerUpdateOpInterface
// (NNOps.cpp); the parameter, gradient and result are $param, $grad and
// $new_param.
defvar NN_OptimizerUpdate =
    DeclareOpInterfaceMethods<NN_OptimizerUpdateOpInterface>;

// An op with attributes that refer to global sizes: rewrites them for the
// local view (NNLocalView.cpp, docs/ir.md#the-local-view).
defvar NN_LocalView = ["localizeAttrs"];

// An op whose result may be its operand's bytes (NNViews.cpp).
defvar NN_View = DeclareOpInterfaceMethods<NN_ViewOpInterface>;

// An op with results cheap to recompute in the backward (NNRecompute.cpp).
defvar NN_Recomputable =
    DeclareOpInterfaceMethods<NN_RecomputableOpInterface>;

class NN_UnaryOp<string mnemonic, string desc>
    : NN_InferredOp<mnemonic, [NN_Differentiable]> {
  let summary = desc;
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
}

class NN_BinaryOp<string mnemonic, string desc>
    : NN_InferredOp<mnemonic, [NN_Differentiable]> {
  let summary = desc;
  let description = [{
    Elementwise with NumPy broadcasting: shapes align from the last axis and
    an axis of size 1 (or a missing one) stretches. Both operands have the
    same element type.
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
}

// The gradient of an elementwise activation: `dx = dy * f'(saved)`.
class NN_ActivationGradOp<string mnemonic, string desc, string saved>
    : NN_InferredOp<mnemonic> {
  let summary = desc;
  let arguments = (ins NN_FloatTensor:$grad_output,
                       NN_FloatTensor:$saved);
  let results = (outs NN_FloatTensor:$result);
  let description = "`saved` is the forward op's " # saved # ".";
}

//===----------------------------------------------------------------------===//
// Sources: variables, inputs, constants
//===----------------------------------------------------------------------===//

def NN_VariableOp : NN_Op<"variable", [Pure]> {
  let summary = "a named, persistent tensor: parameter or optimizer state";
  let description = [{
    ```mlir
    %w = nn.variable "fc1.weight" param init = normal(0.02)
        : tensor<128x256xf32>
    ```
    Names are unique in a graph. The role says what the ZeRO passes do with
    it; an `#sbp.global` encoding on the result must carry the same role.
    A `frozen` parameter gets no gradient. A variable the ZeRO passes have
    flattened and padded for partitioning keeps its model shape in
    `logical_shape`. One that tensor parallelism also splits on a model
    axis names it and the split dim in `model_split = [axis, dim]`: row t
    of its `(parts, n)` global tensor is part t of the model tensor along
    `dim`, flattened and padded (docs/ir.md#variables-split-on-a-model-axis).
  }];
  let arguments = (ins
    StrAttr:$name,
    Sbp_RoleAttr:$role,
    DefaultValuedAttr<NN_InitializerAttr, "Initializer::zeros">:$init,
    DefaultValuedAttr<F64Attr, "0.0">:$init_scale,
    UnitAttr:$frozen,
    OptionalAttr<DenseI64ArrayAttr>:$logical_shape,
    OptionalAttr<DenseI64ArrayAttr>:$model_split
  );
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $name custom<RoleAndInit>($role, $init, $init_scale) attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

def NN_InputOp : NN_Op<"input", [Pure]> {
  let summary = "a named graph input fed by the data loader each step";
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_FillOp : NN_Op<"fill", [Pure]> {
  let summary = "a tensor with every element set to `value`";
  let arguments = (ins F64Attr:$value);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

// Ops that name a variable and produce nothing: they carry no SBP
// signature of their own.
class NN_VariableEffectOp<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits> {
  let arguments = (ins StrAttr:$name, AnyStaticShapeTensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def NN_GradientOp : NN_VariableEffectOp<"gradient"> {
  let summary = "marks the loss gradient of a named parameter";
  let description = [{
    Emitted by `zero-autodiff`, one per trainable parameter that reaches the
    loss, and consumed by `zero-optimizer`, which turns it into an update.

    ```mlir
    nn.gradient "fc1.weight", %g : tensor<128x256xf32>
    ```
  }];
}

def NN_AssignOp : NN_VariableEffectOp<"assign"> {
  let summary = "sets a variable's value for the next step";
  let description = [{
    Reads of the variable (`nn.variable`) in this step see the old value;
    the executor stores `value` when the step ends.

    ```mlir
    nn.assign "fc1.weight", %new : tensor<128x256xf32>
    ```
  }];
}

def NN_StepOp : NN_Op<"step", [Pure]> {
  let summary = "the 1-based index of the training step, from the executor";
  let description = [{
    Adam's bias corrections read it. The executor counts steps and saves the
    count in checkpoints.
  }];
  let results = (outs NN_StepTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def NN_MatmulOp : NN_InferredOp<"matmul", [NN_Differentiable]> {
  let summary = "2-D matrix product with optional transposes";
  let description = [{
    `result = op(lhs) x op(rhs)` where `op` transposes when the flag is set.
    A linear layer is `matmul %x, %w {transpose_rhs}` since its weight is
    `(out, in)`.
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs NN_FloatTensor:$result);
}

def NN_BatchMatmulOp : NN_InferredOp<"batch_matmul", [NN_Differentiable]> {
  let summary = "matrix product over the last two axes, batched over the rest";
  let description = [{
    Operands have the same rank (at least 3) and the same batch dims. The
    transpose flags swap each operand's last two axes.
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs NN_FloatTensor:$result);
}

// A 2-D matmul with its epilogue: the bias along the last axis, and GELU
// (tanh form) after it. zero-fuse-epilogues makes them from matmul, bias_add
// and gelu (docs/design.md#fusion).
class NN_MatmulEpilogueOp<string mnemonic, string desc,
                          list<Trait> traits = []>
    : NN_InferredOp<mnemonic, !listconcat([NN_Differentiable], traits)> {
  let summary = desc;
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       NN_FloatTensor:$bias, UnitAttr:$transpose_lhs,
                       UnitAttr:$transpose_rhs);
}

def NN_MatmulBiasOp : NN_MatmulEpilogueOp<"matmul_bias",
    "op(lhs) x op(rhs) + bias, fused"> {
  let description = [{
    `nn.matmul`'s product with its transpose flags, plus a 1-D `bias` of the
    result's last dim. A linear layer is `matmul_bias %x, %w, %b
    {transpose_rhs}`.
  }];
  let results = (outs NN_FloatTensor:$result);
}

def NN_MatmulBiasGeluOp : NN_MatmulEpilogueOp<"matmul_bias_gelu",
    "gelu(op(lhs) x op(rhs) + bias), fused, with the pre-activation",
    [NN_Recomputable]> {
  let description = [{
    As `nn.matmul_bias`, then GELU (tanh form). `pre_activation` is the
    value before GELU, which its gradient reads (cuBLASLt's GELU_AUX).
  }];
  let results = (outs NN_FloatTensor:$result,
                      NN_FloatTensor:$pre_activation);
}

def NN_MatmulAddOp : NN_InferredOp<"matmul_add"> {
  let summary = "op(lhs) x op(rhs) + addend, fused";
  let description = [{
    `nn.matmul`'s product with its transpose flags, plus `addend` of the
    result's shape and type: the GEMM's C operand with beta = 1 (Megatron's
    gradient accumulation fusion). zero-fuse-accumulation makes it from a
    gradient's running total and the weight-gradient product added to it,
    after autodiff, so it has no gradient. The result may be written over
    the addend.
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       NN_FloatTensor:$addend, UnitAttr:$transpose_lhs,
                       UnitAttr:$transpose_rhs);
  let results = (outs NN_FloatTensor:$result);
}

def NN_AttentionOp : NN_InferredOp<"attention", [NN_Differentiable]> {
  let summary = "softmax(scale q k^T) v, fused, keeping each row's log-sum-exp";
  let description = [{
    `q` is `(..., Sq, D)`, `k` `(..., Sk, D)` and `v` `(..., Sk, Dv)` with the
    same batch dims. With `causal`, Sq equals Sk and key `j > i` is excluded
    for query `i`. `lse` is the natural log of each query row's sum of
    `exp(scale q k^T)` over its visible keys, always f32: the backward
    recomputes the probabilities from it, so no `Sq x Sk` tensor is kept
    (flash attention). zero-fuse-attention makes this op from the unfused
    chain (docs/design.md#fusion).
  }];
  let arguments = (ins NN_FloatTensor:$q, NN_FloatTensor:$k,
                       NN_FloatTensor:$v, F64Attr:$scale, UnitAttr:$causal);
  let results = (outs NN_FloatTensor:$result, NN_F32Tensor:$lse);
}

def NN_AttentionGradOp : NN_InferredOp<"attention_grad"> {
  let summary = "gradients of attention: q, k and v";
  let description = [{
    From the forward's operands, its `result` and `lse`, and the result's
    gradient; the probabilities are recomputed per tile.
  }];
  let arguments = (ins NN_FloatTensor:$grad_output, NN_FloatTensor:$q,
                       NN_FloatTensor:$k, NN_FloatTensor:$v,
                       NN_FloatTensor:$result, NN_F32Tensor:$lse,
                       F64Attr:$scale, UnitAttr:$causal);
  let results = (outs NN_FloatTensor:$grad_q, NN_FloatTensor:$grad_k,
                      NN_FloatTensor:$grad_v);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def NN_AddOp : NN_BinaryOp<"add", "elementwise sum">;
def NN_SubOp : NN_BinaryOp<"sub", "elementwise difference">;
def NN_MulOp : NN_BinaryOp<"mul", "elementwise product">;
def NN_DivOp : NN_BinaryOp<"div", "elementwise quotient">;

def NN_BiasAddOp : NN_InferredOp<"bias_add", [NN_Differentiable]> {
  let summary = "adds a 1-D bias along the last axis";
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$bias);
  let results = (outs NN_FloatTensor:$result);
}

def NN_ReluOp : NN_UnaryOp<"relu", "max(x, 0)">;
def NN_GeluOp : NN_InferredOp<"gelu", [NN_Differentiable, NN_Recomputable]> {
  let summary =
      "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), PyTorch's tanh form";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
}
def NN_TanhOp : NN_UnaryOp<"tanh", "hyperbolic tangent">;

def NN_ScaleOp : NN_InferredOp<"scale", [NN_Differentiable]> {
  let summary = "multiplies every element by a constant";
  let arguments = (ins NN_FloatTensor:$input, F64Attr:$factor);
  let results = (outs NN_FloatTensor:$result);
}

def NN_DropoutOp : NN_InferredOp<"dropout", [NN_Differentiable],
                                 NN_LocalView> {
  let summary = "zeroes elements with probability p, scales the rest by 1/(1-p)";
  let description = [{
    The mask is a counter-based random function (Philox4x32-10) of `seed`,
    the step count `step` (the value of `nn.step`), `stream`, `micro_batch`
    and each element's linear index in the op's global shape
    (docs/compiler.md, "Dropout"), so it is the same at every ZeRO stage and
    world size and nothing is stored for the backward: the gradient is this
    op, with the same attributes, on the result gradient.

    `stream` tells the dropout ops of a graph apart. `micro_batch` (default
    0) is set by zero-accumulate on each micro-batch's copy. zero-partition
    sets `global_shape` and `split_dims` (per hierarchy axis, the dim an
    `S(d)` splits, -1 for B and P) so the runtime finds the global index of
    each local element.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_StepTensor:$step, F64Attr:$p,
                       I64Attr:$seed, I64Attr:$stream,
                       OptionalAttr<I64Attr>:$micro_batch,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$split_dims);
  let results = (outs NN_FloatTensor:$result);
}

def NN_CastOp : NN_Op<"cast", [Pure, NN_Differentiable]> {
  let summary = "converts between f32, f16 and bf16 (round to nearest even)";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NN_QuantizeOp : NN_InferredOp<"quantize"> {
  let summary = "block-wise symmetric quantization to 8- or 4-bit codes";
  let description = [{
    ZeRO++'s block quantization (runtime/kernels/BlockQuantize.h): the
    input's elements, row-major, are cut into blocks of `block_size`, the
    last one possibly shorter. Block b keeps one f32 scale amax_b / L, with
    amax_b its largest magnitude and L = 2^(bits-1) - 1, and each element
    becomes the code rint(x * L / amax_b) in [-L, L] (round half to even).
    `codes` is 1-D i8: one code per byte at 8 bits, two at 4 (element 2k in
    the low nibble of byte k; `block_size` must then be even, so that no
    byte holds two blocks). `scales` is 1-D f32, one per block. Precision is
    lost here, and only here: `nn.dequantize` gives every element back
    within scale_b / 2.

    A 1-D input split `S(0)` gives codes and scales split `S(0)`: each rank
    quantizes its own part, which are the global op's blocks when every
    part is a whole number of blocks (the pass that inserts the op pads the
    parts so).
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$block_size,
                       DefaultValuedAttr<I64Attr, "8">:$bits);
  let results = (outs NN_CodeTensor:$codes, NN_F32Tensor:$scales);
}

def NN_DequantizeOp : NN_InferredOp<"dequantize", [], NN_LocalView> {
  let summary = "the float values of nn.quantize's codes and scales";
  let description = [{
    Element i is code_i * scale_b, b = i / `block_size`, computed in f32
    and rounded once to `dtype`; `shape` is the result's shape, whose
    element count the codes and scales must be made for. A block whose
    scale is not finite gives NaN. In the local view `shape` is the
    rank's part.
  }];
  let arguments = (ins NN_CodeTensor:$codes, NN_F32Tensor:$scales,
                       I64Attr:$block_size,
                       DefaultValuedAttr<I64Attr, "8">:$bits,
                       DenseI64ArrayAttr:$shape, TypeAttr:$dtype);
  let results = (outs NN_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, loss
//===----------------------------------------------------------------------===//

def NN_LayerNormOp : NN_InferredOp<"layer_norm",
                                   [NN_Differentiable, NN_Recomputable]> {
  let summary = "layer norm over the last axis, biased variance";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta` over the last axis;
    `gamma` and `beta` are 1-D with that axis' size.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$gamma,
                       NN_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
}

def NN_SoftmaxOp : NN_InferredOp<"softmax", [NN_Differentiable]> {
  let summary = "softmax along an axis, with an optional causal mask";
  let description = [{
    With `causal`, the axis is the last one, the last two dims are equal
    (query x key) and key `j > i` is excluded for query `i`.
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       UnitAttr:$causal);
  let results = (outs NN_FloatTensor:$result);
  let extraClassDeclaration = [{
    /// The softmax axis, counted from the front.
    int64_t getNormalizedAxis();
  }];
}

def NN_EmbeddingOp : NN_InferredOp<"embedding", [NN_Differentiable],
                                   NN_LocalView> {
  let summary = "looks up rows of a (vocab, dim) table by integer ids";
  let description = [{
    The result has the ids' shape plus the embedding dim. Ids outside
    `[0, vocab)` are an error at run time. A table split by vocabulary
    (tensor parallelism) gives partial sums: each rank looks up the ids its
    rows hold and gives zeros for the others. zero-partition then sets
    `global_shape` and `split_dims` (the table's, as nn.dropout's), from
    which the runtime finds the rank's rows.
  }];
  let arguments = (ins NN_FloatTensor:$table, NN_IndexTensor:$ids,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$split_dims);
  let results = (outs NN_FloatTensor:$result);
}

def NN_CrossEntropyOp : NN_InferredOp<"cross_entropy", [NN_Differentiable],
                                      NN_LocalView> {
  let summary = "softmax cross-entropy, mean over every sample";
  let description = [{
    `logits` is `(..., classes)`, `labels` the leading dims. The result is a
    0-D tensor: the mean over all samples of the global batch.

    `count`: the number of elements the mean divides by; defaults to the
    local count; zero-partition sets it to the global count.
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$count);
  let results = (outs NN_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def NN_ReshapeOp : NN_Op<"reshape",
                         [Pure, NN_Differentiable, NN_Recomputable, NN_View]> {
  let summary = "same elements in row-major order, another shape";
  let arguments = (ins AnyStaticShapeTensor:$input);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NN_PadOp : NN_InferredOp<"pad", [NN_Differentiable]> {
  let summary = "zero padding: `low[i]` zeros before and `high[i]` after axis i";
  let arguments = (ins AnyStaticShapeTensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high);
  let results = (outs AnyStaticShapeTensor:$result);
}

def NN_TransposeOp : NN_InferredOp<"transpose",
                                   [NN_Differentiable, NN_Recomputable]> {
  let summary = "permutes axes: result dim i is input dim permutation[i]";
  let arguments = (ins AnyStaticShapeTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs AnyStaticShapeTensor:$result);
}

def NN_SliceOp : NN_InferredOp<"slice", [NN_Differentiable, NN_View],
                               NN_LocalView> {
  let summary = "a static strided window: result dim i has sizes[i] elements";
  let arguments = (ins AnyStaticShapeTensor:$input,
                       DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs AnyStaticShapeTensor:$result);
}

def NN_SplitOp : NN_InferredOp<"split", [NN_Differentiable, NN_Recomputable]> {
  let summary = "cuts a tensor along an axis into pieces of the given sizes";
  let arguments = (ins AnyStaticShapeTensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
}

def NN_ConcatOp : NN_InferredOp<"concat", [NN_Differentiable]> {
  let summary = "joins tensors along an axis";
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyStaticShapeTensor:$result);
}

def NN_ReduceSumOp : NN_InferredOp<"reduce_sum", [NN_Differentiable]> {
  let summary = "sum over the given axes";
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdim);
  let results = (outs NN_FloatTensor:$result);
}

def NN_ReduceMeanOp : NN_InferredOp<"reduce_mean", [NN_Differentiable],
                                    NN_LocalView> {
  let summary = "mean over the given axes (divides by the global count)";
  let description = [{
    `count`: the number of elements the mean divides by; defaults to the
    local count; zero-partition sets it to the global count.
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdim, OptionalAttr<I64Attr>:$count);
  let results = (outs NN_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def NN_ReluGradOp : NN_ActivationGradOp<"relu_grad",
    "dy where the input was positive, else 0", "input">;
def NN_GeluGradOp : NN_ActivationGradOp<"gelu_grad",
    "dy times the derivative of the tanh-form GELU", "input">;
def NN_TanhGradOp : NN_ActivationGradOp<"tanh_grad",
    "dy (1 - y^2)", "result y">;

def NN_LayerNormGradOp : NN_InferredOp<"layer_norm_grad"> {
  let summary = "gradients of layer_norm: input, gamma and beta";
  let arguments = (ins NN_FloatTensor:$grad_output, NN_FloatTensor:$input,
                       NN_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$grad_input, NN_FloatTensor:$grad_gamma,
                      NN_FloatTensor:$grad_beta);
}

def NN_SoftmaxGradOp : NN_InferredOp<"softmax_grad"> {
  let summary = "y (dy - sum(dy y)) along the softmax axis";
  let arguments = (ins NN_FloatTensor:$grad_output, NN_FloatTensor:$output,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       UnitAttr:$causal);
  let results = (outs NN_FloatTensor:$result);
  let extraClassDeclaration = [{
    int64_t getNormalizedAxis();
  }];
}

def NN_CrossEntropyGradOp : NN_InferredOp<"cross_entropy_grad", [],
                                          NN_LocalView> {
  let summary = "d loss / d logits: dloss (softmax(logits) - onehot) / count";
  let description = [{
    `count`: the number of elements the mean divides by; defaults to the
    local count; zero-partition sets it to the global count.
  }];
  let arguments = (ins NN_FloatTensor:$grad_loss, NN_FloatTensor:$logits,
                       NN_IndexTensor:$labels, OptionalAttr<I64Attr>:$count);
  let results = (outs NN_FloatTensor:$result);
}

// A cross entropy on logits split by class (tensor parallelism's
// vocabulary-parallel loss): zero-sbp-propagation computes it where the
// logits lie, from each row's max, its sum of exponentials and its label's
// logit, each a partial result over the ranks that split the classes
// (docs/design.md#tensor-parallelism).

def NN_CrossEntropyMaxOp : NN_InferredOp<"cross_entropy_max"> {
  let summary = "each row's largest logit, in f32";
  let description = [{
    `logits` is `(..., classes)`; the result has the leading dims. On logits
    split by class each rank gives the max of its classes: a `P(max)`.
  }];
  let arguments = (ins NN_FloatTensor:$logits);
  let results = (outs NN_F32Tensor:$result);
}

def NN_CrossEntropySumsOp : NN_InferredOp<"cross_entropy_sums", [],
                                          NN_LocalView> {
  let summary = "each row's sum of exp(logit - max), and its label's logit";
  let description = [{
    `max` is each row's max over every class. On logits split by class each
    rank sums its classes and gives its label's logit where it holds the
    label, zero elsewhere: both are `P(sum)`. zero-partition then sets
    `global_shape` and `split_dims` (the logits', as nn.embedding's table),
    from which the runtime finds the rank's first class.
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_F32Tensor:$max,
                       NN_IndexTensor:$labels,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$split_dims);
  let results = (outs NN_F32Tensor:$sumexp, NN_F32Tensor:$label_logit);
}

def NN_CrossEntropyLossOp : NN_InferredOp<"cross_entropy_loss", [],
                                          NN_LocalView> {
  let summary = "sum of log(sumexp) + max - label_logit over rows, / count";
  let description = [{
    The loss of nn.cross_entropy from its parts, each whole per row.
    `count`: the number of rows the mean divides by; defaults to the local
    count; zero-partition sets it to the global count.
  }];
  let arguments = (ins NN_F32Tensor:$max, NN_F32Tensor:$sumexp,
                       NN_F32Tensor:$label_logit, OptionalAttr<I64Attr>:$count);
  let results = (outs NN_F32Tensor:$result);
}

def NN_CrossEntropySplitGradOp : NN_InferredOp<"cross_entropy_split_grad", [],
                                               NN_LocalView> {
  let summary = "d loss / d logits from each row's max and sumexp";
  let description = [{
    `grad_loss (exp(logits - max) / sumexp - onehot(labels)) / count`, with
    `max` and `sumexp` over every class. On logits split by class each rank
    gives its classes' columns; zero-partition sets `global_shape`,
    `split_dims` and `split_of = "result"` (they describe the result, which
    is split as the logits are).
  }];
  let arguments = (ins NN_F32Tensor:$grad_loss, NN_FloatTensor:$logits,
                       NN_F32Tensor:$max, NN_F32Tensor:$sumexp,
                       NN_IndexTensor:$labels, OptionalAttr<I64Attr>:$count,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$split_dims,
                       OptionalAttr<StrAttr>:$split_of);
  let results = (outs NN_FloatTensor:$result);
}

def NN_EmbeddingGradOp : NN_InferredOp<"embedding_grad", [], NN_LocalView> {
  let summary = "scatters dy rows into a zero (vocab, dim) table by id";
  let description = [{
    `vocab_size` is the rows of the result. A result split by vocabulary
    holds the rows of the rank's part: zero-partition sets `vocab_size` to
    the local rows, `global_shape` and `split_dims` to the whole table's,
    and `split_of = "result"` (they describe the result, not operand 0);
    ids of other ranks' rows add nothing.
  }];
  let arguments = (ins NN_FloatTensor:$grad_output, NN_IndexTensor:$ids,
                       I64Attr:$vocab_size,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$split_dims,
                       OptionalAttr<StrAttr>:$split_of);
  let results = (outs NN_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Optimizer updates (torch.optim definitions)
//===----------------------------------------------------------------------===//

def NN_NonfiniteCountOp : NN_InferredOp<"nonfinite_count"> {
  let summary = "the number of inf and NaN elements, as a 0-D f32";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs 0DTensorOf<[F32]>:$result);
}

def NN_SelectOp : NN_InferredOp<"select"> {
  let summary = "`on_true` where the 0-D `predicate` is non-zero, else `on_false`";
  let arguments = (ins 0DTensorOf<[F32]>:$predicate,
                       NN_FloatTensor:$on_true, NN_FloatTensor:$on_false);
  let results = (outs NN_FloatTensor:$result);
}

def NN_LossScaleUpdateOp : NN_InferredOp<"loss_scale_update"> {
  let summary = "DeepSpeed's dynamic loss scaler, one step";
  let description = [{
    From the scale, the count of steps since the last overflow, the
    remaining hysteresis and this step's overflow count (all 0-D f32):
    on overflow the hysteresis drops by one, and once it is spent the scale
    halves (not below `min_scale`); the step count restarts. Otherwise the
    count grows, and every `window` clean steps the scale doubles and the
    hysteresis is restored to `hysteresis`.
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$scale, 0DTensorOf<[F32]>:$good_steps,
                       0DTensorOf<[F32]>:$hysteresis_left,
                       0DTensorOf<[F32]>:$overflow,
                       I64Attr:$window, F64Attr:$min_scale, I64Attr:$hysteresis);
  let results = (outs 0DTensorOf<[F32]>:$new_scale,
                      0DTensorOf<[F32]>:$new_good_steps,
                      0DTensorOf<[F32]>:$new_hysteresis_left);
}

def NN_ClipCoefficientOp : NN_InferredOp<"clip_coefficient"> {
  let summary = "the factor that clips gradients to a global norm";
  let description = [{
    From the sum of squares of all gradients (0-D):
    `norm = sqrt(sum_squares) / grad_scale`,
    `result = min(1, max_norm / (norm + 1e-6))`, as
    torch.nn.utils.clip_grad_norm_. `grad_scale` undoes a loss scale.
  }];
  let arguments = (ins NN_FloatTensor:$sum_squares, F64Attr:$max_norm,
                       DefaultValuedAttr<F64Attr, "1.0">:$grad_scale);
  let results = (outs NN_FloatTensor:$result);
}

def NN_SgdOp : NN_InferredOp<"sgd", [NN_OptimizerUpdate]> {
  let summary = "param - lr * grad / grad_scale";
  let description = [{
    Under mixed precision the gradient may be fp16/bf16 while the parameter
    is the fp32 master: the gradient is widened to the parameter's type and
    divided by `grad_scale` (the loss scale) before use.
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "1.0">:$grad_scale);
  let results = (outs NN_FloatTensor:$new_param);
}

class NN_AdamBase<string mnemonic, string desc>
    : NN_InferredOp<mnemonic, [NN_OptimizerUpdate]> {
  let summary = desc;
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       NN_FloatTensor:$exp_avg, NN_FloatTensor:$exp_avg_sq,
                       NN_StepTensor:$step,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$grad_scale);
  let results = (outs NN_FloatTensor:$new_param, NN_FloatTensor:$new_exp_avg,
                      NN_FloatTensor:$new_exp_avg_sq);
}

def NN_AdamOp : NN_AdamBase<"adam",
    "torch.optim.Adam step (weight_decay adds wd * param to the gradient)"> {
  let description = [{
    The gradient is first widened to the parameter's type and divided by
    `grad_scale` (the loss scale under mixed precision). Then
    `g += wd p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)`
    with the bias corrections in double.
  }];
}

def NN_AdamWOp : NN_AdamBase<"adamw",
    "torch.optim.AdamW step (decoupled weight decay)"> {
  let description = [{
    `p *= 1 - lr wd`, then Adam's update without weight decay.
  }];
}

#endif // ZEROSBP_DIALECTS_NN_IR_NNOPS_TD
