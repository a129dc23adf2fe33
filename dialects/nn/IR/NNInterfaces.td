//===- NNInterfaces.td - interfaces of nn ops --------------*- tablegen -*-===//

#ifndef ZEROSBP_DIALECTS_NN_IR_NNINTERFACES_TD
#define ZEROSBP_DIALECTS_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::nn";
  let description = [{
    A differentiable op builds its operands' gradients from its results'
    gradients; `zero-autodiff` calls it in reverse order from the loss.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands at the builder's insertion
        point. `resultGrads[i]` is the loss gradient of result i, or null
        when that result does not reach the loss. Appends exactly one value
        per operand to `operandGrads`: a gradient with the operand's shape
        and element type, or null when the operand has none (integer ids and
        labels, or no gradient reaches it).
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def NN_RecomputableOpInterface : OpInterface<"RecomputableOpInterface"> {
  let cppNamespace = "::mlir::nn";
  let description = [{
    An op some of whose results are cheaper to compute again than to keep:
    one pass over values of the same size (an activation, a normalization).
    `zero-recompute-cheap` recomputes such a result in the backward instead
    of keeping it from the forward, when every value it is computed from is
    kept for the backward anyway. The recomputation gives the forward's
    result bit for bit.
  }];
  let methods = [
    InterfaceMethod<[{
        The values `result` is computed from, or none when it is not cheap
        to recompute.
      }],
      "::llvm::SmallVector<::mlir::Value>", "getRecomputeInputs",
      (ins "::mlir::OpResult":$result)>,
    InterfaceMethod<[{
        Computes `result` again at the builder's insertion point from
        `inputs`, which equal the values getRecomputeInputs names (in that
        order) or are their own recomputations.
      }],
      "::mlir::Value", "buildRecompute",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::OpResult":$result,
           "::mlir::ValueRange":$inputs)>,
  ];
}

def NN_ViewOpInterface : OpInterface<"ViewOpInterface"> {
  let cppNamespace = "::mlir::nn";
  let description = [{
    An op whose result may be a contiguous piece of its first operand, in
    the same bytes: `zero-memory-plan` places such a result inside its
    operand's slot instead of giving it bytes of its own, and the exported
    plan has no instruction for it (docs/plan-format.md).
  }];
  let methods = [
    InterfaceMethod<[{
        Where the result starts in operand 0, in elements, when it is a
        contiguous piece of it; none when it is not (a strided slice).
      }],
      "::std::optional<int64_t>", "getViewElementOffset">,
  ];
}

def NN_OptimizerUpdateOpInterface : OpInterface<"OptimizerUpdateOpInterface"> {
  let cppNamespace = "::mlir::nn";
  let description = [{
    An optimizer update reads a parameter, its gradient and the optimizer
    states (in a fixed order) and yields the next value of the parameter and
    of each state; every result is one of these. Other operands (Adam's step)
    are only read. The passes find the roles here, never by position
    (docs/ir.md#optimizer-updates).
  }];
  let methods = [
    InterfaceMethod<
      "The operand of the parameter this op updates (default: `param`).",
      "::mlir::OpOperand &", "getParameterMutable", (ins), [{}], [{
        return $_op.getParamMutable();
      }]>,
    InterfaceMethod<
      "The operand of the parameter's gradient (default: `grad`).",
      "::mlir::OpOperand &", "getGradientMutable", (ins), [{}], [{
        return $_op.getGradMutable();
      }]>,
    InterfaceMethod<"The operands of the optimizer states, in order.",
      "::mlir::MutableOperandRange", "getStatesMutable">,
    InterfaceMethod<[{
        The result that is the parameter's next value (default:
        `new_param`).
      }],
      "::mlir::OpResult", "getUpdatedParameter", (ins), [{}], [{
        return ::llvm::cast<::mlir::OpResult>($_op.getNewParam());
      }]>,
    InterfaceMethod<
      "The results that are the states' next values, in the states' order.",
      "::mlir::ResultRange", "getUpdatedStates">,
    InterfaceMethod<[{
        The loss scale the gradient is divided by; null when unset, which
        means 1.
      }],
      "::mlir::FloatAttr", "getGradScaleAttr", (ins), [{}], [{
        return $_op.getGradScaleAttr();
      }]>,
    InterfaceMethod<"Sets the loss scale the gradient is divided by.",
      "void", "setGradScaleAttr", (ins "::mlir::FloatAttr":$scale), [{}], [{
        $_op.setGradScaleAttr(scale);
      }]>,
  ];
  let extraSharedClassDeclaration = [{
    ::mlir::Value getParameter() { return $_op.getParameterMutable().get(); }
    ::mlir::Value getGradient() { return $_op.getGradientMutable().get(); }
    ::mlir::OperandRange getStates() { return $_op.getStatesMutable(); }

    /// The operand `result` is the next value of: the parameter for the
    /// updated parameter, the matching state for an updated state.
    ::mlir::OpOperand &getUpdatedOperand(::mlir::OpResult result) {
      if (result == $_op.getUpdatedParameter())
        return $_op.getParameterMutable();
      for (auto [state, updated] : ::llvm::zip_equal(
               $_op.getStatesMutable(), $_op.getUpdatedStates()))
        if (updated == result)
          return state;
      llvm_unreachable("not a result of this optimizer update");
    }
  }];
  // The passes map every result back to the operand it replaces.
  let verify = [{
    auto update = ::llvm::cast<::mlir::nn::OptimizerUpdateOpInterface>($_op);
    ::mlir::ResultRange states = update.getUpdatedStates();
    if (update.getStatesMutable().size() != states.size() ||
        $_op->getNumResults() != states.size() + 1 ||
        ::llvm::is_contained(states, update.getUpdatedParameter()))
      return $_op->emitOpError(
          "must pair each optimizer state with one result and have no "
          "other results than the parameter's");
    return ::mlir::success();
  }];
}

#endif // ZEROSBP_DIALECTS_NN_IR_NNINTERFACES_TD
