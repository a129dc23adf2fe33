//===- SbpBase.td - sbp dialect definition and enums -------*- tablegen -*-===//
//
// The sbp dialect carries where a global tensor lives (placement) and how it
// is laid out over the ranks (split / broadcast / partial per hierarchy axis).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_DIALECTS_SBP_IR_SBPBASE_TD
#define ZEROSBP_DIALECTS_SBP_IR_SBPBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Sbp_Dialect : Dialect {
  let name = "sbp";
  let cppNamespace = "::mlir::sbp";
  let summary = "Placement and split/broadcast/partial layouts of global tensors";
  let description = [{
    A global tensor has one logical shape and is stored over the ranks of a
    placement. On each axis of the placement's hierarchy it is either
    broadcast (`B`, every rank holds all of it), split along a tensor axis
    (`S(i)`, balanced: sizes differ by at most one), or partial (`P(sum)`,
    `P(max)`: every rank holds a full-size partial value, reduced on read).
    The layout lives in the tensor type's encoding (`#sbp.global`), so every
    value of a graph shows it. `sbp.cast` changes the layout (boxing); the
    async collective ops are what casts become in the per-rank view.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

def Sbp_DeviceKind : I32EnumAttr<"DeviceKind", "device kind of a placement", [
  I32EnumAttrCase<"cpu", 0>,
  I32EnumAttrCase<"cuda", 1>,
]> {
  let cppNamespace = "::mlir::sbp";
  let genSpecializedAttr = 0;
}

def Sbp_MemoryKind : I32EnumAttr<"MemoryKind",
    "the memory a placement's tensors live in", [
  I32EnumAttrCase<"device", 0>,
  I32EnumAttrCase<"host", 1>,
  I32EnumAttrCase<"nvme", 2>,
]> {
  let cppNamespace = "::mlir::sbp";
  let genSpecializedAttr = 0;
}

def Sbp_SbpKind : I32EnumAttr<"SbpKind", "split, broadcast or partial", [
  I32EnumAttrCase<"broadcast", 0, "B">,
  I32EnumAttrCase<"split", 1, "S">,
  I32EnumAttrCase<"partial", 2, "P">,
]> {
  let cppNamespace = "::mlir::sbp";
  let genSpecializedAttr = 0;
}

def Sbp_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of a partial value", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"max", 1>,
]> {
  let cppNamespace = "::mlir::sbp";
  let genSpecializedAttr = 0;
}

def Sbp_Role : I32EnumAttr<"Role", "what a tensor is to the training step", [
  I32EnumAttrCase<"param", 0>,
  I32EnumAttrCase<"grad", 1>,
  I32EnumAttrCase<"master", 2>,
  I32EnumAttrCase<"opt_state", 3>,
  I32EnumAttrCase<"activation", 4>,
  I32EnumAttrCase<"input", 5>,
]> {
  let cppNamespace = "::mlir::sbp";
  let genSpecializedAttr = 0;
}

// The global-view Role plus comm_buffer: a buffer of gathered parameters or
// a staging copy of a bucket holds no tensor of the global view.
def Sbp_BufferRole : I32EnumAttr<"BufferRole",
    "what a buffer of the memory plan holds", [
  I32EnumAttrCase<"param", 0>,
  I32EnumAttrCase<"grad", 1>,
  I32EnumAttrCase<"master", 2>,
  I32EnumAttrCase<"opt_state", 3>,
  I32EnumAttrCase<"activation", 4>,
  I32EnumAttrCase<"input", 5>,
  I32EnumAttrCase<"comm_buffer", 6>,
]> {
  let cppNamespace = "::mlir::sbp";
  let genSpecializedAttr = 0;
}

def Sbp_CollectiveKind : I32EnumAttr<"CollectiveKind", "collective operation", [
  I32EnumAttrCase<"all_reduce", 0>,
  I32EnumAttrCase<"reduce_scatter", 1>,
  I32EnumAttrCase<"all_gather", 2>,
  I32EnumAttrCase<"all_to_all", 3>,
]> {
  let cppNamespace = "::mlir::sbp";
  let genSpecializedAttr = 0;
}

#endif // ZEROSBP_DIALECTS_SBP_IR_SBPBASE_TD
