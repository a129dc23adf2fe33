//===- SbpTypes.td - sbp dialect types ---------------------*- tablegen -*-===//

#ifndef ZEROSBP_DIALECTS_SBP_IR_SBPTYPES_TD
#define ZEROSBP_DIALECTS_SBP_IR_SBPTYPES_TD

include "dialects/sbp/IR/SbpBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Sbp_FutureType : TypeDef<Sbp_Dialect, "Future"> {
  let mnemonic = "future";
  let summary = "the pending result of an async collective";
  let description = [{
    `!sbp.future<tensor<16x8xf32>>` is returned by `sbp.collective_start` and
    consumed by `sbp.collective_wait`, which yields the tensor. Compute
    scheduled between the two overlaps with the communication. A bucket
    (several tensors moved by one collective) has one value type per tensor:
    `!sbp.future<tensor<4xf32>, tensor<8xf32>>`.
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::RankedTensorType">:$valueTypes);
  let assemblyFormat = "`<` $valueTypes `>`";
  let genVerifyDecl = 1;
}

#endif // ZEROSBP_DIALECTS_SBP_IR_SBPTYPES_TD
