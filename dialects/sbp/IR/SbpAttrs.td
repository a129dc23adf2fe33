//===- SbpAttrs.td - placement, SBP and global tensor attrs -*- tablegen -*-===//

#ifndef ZEROSBP_DIALECTS_SBP_IR_SBPATTRS_TD
#define ZEROSBP_DIALECTS_SBP_IR_SBPATTRS_TD

include "dialects/sbp/IR/SbpBase.td"
include "mlir/IR/TensorEncoding.td"

class Sbp_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Sbp_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// An enum parameter that is `value` when omitted, and omitted when printed
// as `value`.
class Sbp_DefaultValuedEnumParameter<EnumInfo enumInfo, string value>
    : EnumParameter<enumInfo> {
  let defaultValue = value;
}

def Sbp_RoleAttr : EnumAttr<Sbp_Dialect, Sbp_Role, "role">;

def Sbp_CollectiveKindAttr
    : EnumAttr<Sbp_Dialect, Sbp_CollectiveKind, "collective">;

def Sbp_ReduceKindAttr : EnumAttr<Sbp_Dialect, Sbp_ReduceKind, "reduce">;

def Sbp_MemoryKindAttr : EnumAttr<Sbp_Dialect, Sbp_MemoryKind, "memory">;

def Sbp_PlacementAttr : Sbp_Attr<"Placement", "placement"> {
  let summary = "device kind, ranks, an optional 2-D rank hierarchy and "
                "the memory kind";
  let description = [{
    `#sbp.placement<cpu, [0, 1, 2, 3]>` places a tensor on four CPU ranks;
    `#sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>`
    arranges eight GPUs as 2 x 4 (row-major). Without a hierarchy the ranks
    form one axis. Ranks are distinct and non-negative; the hierarchy's
    product equals the rank count.

    `memory = host` or `memory = nvme` puts the tensors in each rank's host
    memory or in a file on its NVMe drive instead of the device's memory
    (the default, not printed): ZeRO-Offload and ZeRO-Infinity as
    placement. A tensor moves between memory kinds by `sbp.cast`, which
    becomes an asynchronous transfer (docs/ir.md#memory-kinds).
  }];
  let parameters = (ins
    EnumParameter<Sbp_DeviceKind>:$device,
    ArrayRefParameter<"int64_t", "ranks">:$ranks,
    OptionalArrayRefParameter<"int64_t", "hierarchy">:$hierarchy,
    DefaultValuedParameter<"MemoryKind", "MemoryKind::device">:$memory
  );
  let builders = [
    AttrBuilder<(ins "DeviceKind":$device, "::llvm::ArrayRef<int64_t>":$ranks,
                     "::llvm::ArrayRef<int64_t>":$hierarchy), [{
      return $_get($_ctxt, device, ranks, hierarchy, MemoryKind::device);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of ranks in the placement.
    int64_t getNumRanks() const { return getRanks().size(); }
    /// The hierarchy as used by SBP lists: `[numRanks]` when none was given.
    ::llvm::SmallVector<int64_t, 2> getHierarchyShape() const;
    /// Number of hierarchy axes (the length of an SBP list).
    int64_t getNumHierarchyAxes() const {
      return getHierarchy().empty() ? 1 : getHierarchy().size();
    }
    /// The same devices and ranks with tensors in `memory`.
    PlacementAttr withMemory(MemoryKind memory) const;
    /// The same placement in device memory: what the rank grid stands for.
    PlacementAttr onDevice() const { return withMemory(MemoryKind::device); }
  }];
}

def Sbp_SbpAttr : Sbp_Attr<"Sbp", "sbp"> {
  let summary = "the layout of a tensor over one hierarchy axis";
  let description = [{
    `B` (broadcast), `S(axis)` (split along a tensor axis), `P(sum)` or
    `P(max)` (partial value, reduced with sum or max). Printed as
    `#sbp.sbp<S(0)>` on its own and bare inside `#sbp.global`.
  }];
  let parameters = (ins
    EnumParameter<Sbp_SbpKind>:$kind,
    "int64_t":$axis,
    EnumParameter<Sbp_ReduceKind>:$reduce
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static SbpAttr getBroadcast(::mlir::MLIRContext *ctx);
    static SbpAttr getSplit(::mlir::MLIRContext *ctx, int64_t axis);
    static SbpAttr getPartial(::mlir::MLIRContext *ctx,
                              ReduceKind reduce = ReduceKind::sum);
    bool isBroadcast() const { return getKind() == SbpKind::broadcast; }
    bool isSplit() const { return getKind() == SbpKind::split; }
    bool isPartial() const { return getKind() == SbpKind::partial; }
    /// Parses `B`, `S(i)`, `P(sum)` or `P(max)`.
    static ::mlir::FailureOr<SbpAttr> parseBare(::mlir::AsmParser &parser);
    /// Prints `B`, `S(i)`, `P(sum)` or `P(max)`.
    void printBare(::llvm::raw_ostream &os) const;
    std::string str() const;
  }];
}

def Sbp_GlobalTensorAttr : Sbp_Attr<"GlobalTensor", "global",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "tensor encoding: SBP per hierarchy axis, placement and role";
  let description = [{
    The encoding of a global tensor type:
    `tensor<64x256xf32, #sbp.global<[S(0)], #sbp.placement<cpu, [0, 1]>>>`.
    One SBP entry per hierarchy axis of the placement. The optional role
    (`param`, `grad`, `master`, `opt_state`, `input`; `activation` when
    omitted) is what the ZeRO passes select on.
  }];
  let parameters = (ins
    ArrayRefParameter<"SbpAttr", "SBP per hierarchy axis">:$sbp,
    "PlacementAttr":$placement,
    EnumParameter<Sbp_Role>:$role
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The same encoding with another SBP list.
    GlobalTensorAttr withSbp(::llvm::ArrayRef<SbpAttr> sbp) const;
    /// The same encoding with another role.
    GlobalTensorAttr withRole(Role role) const;
  }];
}

def Sbp_BufferAttr : Sbp_Attr<"Buffer", "buffer"> {
  let summary = "one buffer of a rank's memory plan";
  let description = [{
    `#sbp.buffer<offset = 0, bytes = 16, live = [0, 2], role = activation>`
    is a buffer of `bytes` bytes at `offset` in its memory's arena, live
    from op `first` to op `last` of the function (both included), holding
    tensors of `role`. `memory = host` or `memory = nvme` puts it in that
    memory's arena; device memory is the default and not printed.
    zero-memory-plan writes one per buffer in the function's `zero.buffers`
    (docs/ir.md#the-memory-plan).

    Offsets and sizes are non-negative and the buffer ends at most 2^53
    bytes into its arena (kMaxPlanBytes), the most a plan addresses; live
    op indices are non-negative and `first <= last`.

    `stage = k` (pipeline parallelism) gives the buffer to the ranks of
    pipeline stage k only: buffers of different stages share the arena's
    bytes freely (docs/design.md#pipeline-parallelism). Without it every
    rank holds the buffer.
  }];
  let parameters = (ins
    "int64_t":$offset,
    "int64_t":$bytes,
    "int64_t":$first,
    "int64_t":$last,
    EnumParameter<Sbp_BufferRole>:$role,
    Sbp_DefaultValuedEnumParameter<Sbp_MemoryKind,
        "::mlir::sbp::MemoryKind::device">:$memory,
    DefaultValuedParameter<"int64_t", "-1">:$stage
  );
  let assemblyFormat = [{
    `<` `offset` `=` $offset `,` `bytes` `=` $bytes `,`
        `live` `=` `[` $first `,` $last `]` `,` `role` `=` $role
        (`,` `memory` `=` $memory^)? (`,` `stage` `=` $stage^)? `>`
  }];
  let genVerifyDecl = 1;
}

#endif // ZEROSBP_DIALECTS_SBP_IR_SBPATTRS_TD
