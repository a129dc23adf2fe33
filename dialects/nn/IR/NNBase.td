//===- NNBase.td - nn dialect definition -------------------*- tablegen -*-===//
//
// The nn dialect holds a training graph on global tensors: variables and
// inputs, forward compute, loss, the gradient ops autodiff emits and the
// optimizer updates.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_DIALECTS_NN_IR_NNBASE_TD
#define ZEROSBP_DIALECTS_NN_IR_NNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::mlir::nn";
  let summary = "Training-graph ops on global tensors";
  let description = [{
    Ops follow PyTorch's definitions (docs/design.md#numerics): a linear weight
    is `(out, in)`, GELU is the tanh form, LayerNorm uses the biased
    variance, cross-entropy is the mean over every sample of the global
    batch, and Adam/AdamW are torch.optim's. Every op verifies shapes and
    element types, infers its result types where it can, and lists the SBP
    signatures it runs under (`SbpOpInterface`).
  }];
  let dependentDialects = ["::mlir::sbp::SbpDialect"];
  let useDefaultAttributePrinterParser = 1;
}

def NN_Initializer : I32EnumAttr<"Initializer", "initial value of a variable", [
  I32EnumAttrCase<"zeros", 0>,
  I32EnumAttrCase<"ones", 1>,
  I32EnumAttrCase<"normal", 2>,
  I32EnumAttrCase<"uniform", 3>,
  // Every element is the variable's init_scale.
  I32EnumAttrCase<"constant", 4>,
]> {
  let cppNamespace = "::mlir::nn";
  let genSpecializedAttr = 0;
}

def NN_InitializerAttr : EnumAttr<NN_Dialect, NN_Initializer, "init">;

#endif // ZEROSBP_DIALECTS_NN_IR_NNBASE_TD
