//===- SbpInterfaces.td - legal SBP signatures of an op ----*- tablegen -*-===//

#ifndef ZEROSBP_DIALECTS_SBP_IR_SBPINTERFACES_TD
#define ZEROSBP_DIALECTS_SBP_IR_SBPINTERFACES_TD

include "mlir/IR/OpBase.td"

def Sbp_SbpOpInterface : OpInterface<"SbpOpInterface"> {
  let cppNamespace = "::mlir::sbp";
  let description = [{
    An op that computes on global tensors lists the SBP signatures it can
    execute without communication, for one hierarchy axis: the SBP of every
    operand and every result (OneFlow's `GetSbp`). On a 2-D hierarchy each
    axis picks one signature from the same list. When every operand and
    result type carries an `#sbp.global` encoding, the verifier checks that
    they share one placement and that each axis matches a listed signature;
    SBP propagation chooses among them by boxing cost.
  }];
  let methods = [
    InterfaceMethod<
      "Appends the op's legal 1-D SBP signatures to `signatures`.",
      "void", "getSbpSignatures",
      (ins "::llvm::SmallVectorImpl<::mlir::sbp::SbpSignature> &":$signatures)>,
    InterfaceMethod<[{
        The local-view hook: rewrites the attributes that refer to global
        sizes for the view of one rank. zero-partition calls it once the
        op's operands and results have their per-rank types;
        `globalTypeOf(value)` is the global type of any operand or result
        (docs/ir.md#the-local-view). Most ops have no such attribute, and
        the default does nothing.
      }],
      "void", "localizeAttrs",
      (ins "::llvm::function_ref<::mlir::RankedTensorType(::mlir::Value)>":$globalTypeOf,
           "::mlir::Builder &":$builder),
      [{}], [{
        return;
      }]>,
  ];
  // The signature rules read operand ranks and attributes (axes,
  // permutations, offsets), so they may only run once the op itself is known
  // to be well formed: with `verifyWithRegions` this check runs after the
  // op's invariants, its own verifier and the inferred-result-type check
  // (InferTypeOpInterface, listed before this interface on every nn op).
  let verify = [{
    return ::mlir::sbp::verifySbpSignature($_op);
  }];
  let verifyWithRegions = 1;
}

#endif // ZEROSBP_DIALECTS_SBP_IR_SBPINTERFACES_TD
