//===- SbpOps.td - boxing and async collective ops ---------*- tablegen -*-===//

#ifndef ZEROSBP_DIALECTS_SBP_IR_SBPOPS_TD
#define ZEROSBP_DIALECTS_SBP_IR_SBPOPS_TD

include "dialects/sbp/IR/SbpAttrs.td"
include "dialects/sbp/IR/SbpTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class Sbp_Op<string mnemonic, list<Trait> traits = []>
    : Op<Sbp_Dialect, mnemonic, traits>;

def Sbp_CastOp : Sbp_Op<"cast", [Pure]> {
  let summary = "changes the SBP of a global tensor (boxing)";
  let description = [{
    Same logical value, same placement, same role, another SBP. Partitioning
    lowers each hierarchy axis that changes to one collective:
    `P -> B` all-reduce, `P -> S` reduce-scatter, `S -> B` all-gather,
    `S(i) -> S(j)` all-to-all, `B -> S` a local slice, `B -> P` rank 0 keeps
    the value and the others hold zeros.

    ```mlir
    %1 = sbp.cast %0 : tensor<8x4xf32, #sbp.global<[P(sum)], #p>>
                    to tensor<8x4xf32, #sbp.global<[S(0)], #p>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    GlobalTensorAttr getSourceEncoding();
    GlobalTensorAttr getTargetEncoding();
    /// The collective this cast needs on hierarchy axis `axis`, if any.
    std::optional<CollectiveKind> getCollectiveOnAxis(int64_t axis);
  }];
}

def Sbp_CollectiveStartOp : Sbp_Op<"collective_start", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "starts an async collective on per-rank tensors";
  let description = [{
    Starts a collective over one hierarchy axis of `placement` and returns a
    future; `sbp.collective_wait` completes it. The collective runs on the
    communication stream: compute placed between the start and the wait
    overlaps with it, and a start directly followed by its wait is a
    synchronous collective. Shapes are per rank:
    - `all_reduce`: result shape equals the operand's;
    - `all_gather`: result dim `gather_axis` is n times the operand's;
    - `reduce_scatter`: operand dim `scatter_axis` is n times the result's;
    - `all_to_all`: dim `scatter_axis` shrinks n times, dim `gather_axis`
      grows n times;
    where n is the size of the hierarchy axis. `reduce` applies to
    `all_reduce` and `reduce_scatter`.

    Several operands make a bucket (`zero-bucketing`): one collective over
    the operands laid end to end in a flat buffer, each operand its own
    segment with the rule above (so a reduce-scatter hands every rank its
    shard of each segment). `bucket` numbers the buckets of a function in
    the order every rank issues them.

    ```mlir
    %f = sbp.collective_start all_gather %x on #p axis 0 {gather_axis = 0}
        : tensor<4x8xf32> -> !sbp.future<tensor<16x8xf32>>
    %g = sbp.collective_start reduce_scatter %a, %b on #p axis 0
        {scatter_axis = 0, bucket = 3}
        : tensor<16xf32>, tensor<8xf32>
        -> !sbp.future<tensor<4xf32>, tensor<2xf32>>
    ```
  }];
  let arguments = (ins
    Sbp_CollectiveKindAttr:$kind,
    Variadic<AnyRankedTensor>:$inputs,
    Sbp_PlacementAttr:$placement,
    DefaultValuedAttr<I64Attr, "0">:$hierarchy_axis,
    OptionalAttr<I64Attr>:$gather_axis,
    OptionalAttr<I64Attr>:$scatter_axis,
    DefaultValuedAttr<Sbp_ReduceKindAttr, "ReduceKind::sum">:$reduce,
    OptionalAttr<I64Attr>:$bucket
  );
  let results = (outs Sbp_FutureType:$future);
  let assemblyFormat = [{
    custom<CollectiveKind>($kind) $inputs `on` $placement `axis` $hierarchy_axis
    attr-dict `:`
    type($inputs) `->` qualified(type($future))
  }];
  let hasVerifier = 1;
}

def Sbp_CollectiveWaitOp : Sbp_Op<"collective_wait", [
    MemoryEffects<[MemRead, MemWrite]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "waits for an async collective and yields its tensors";
  let description = [{
    Completes the collective that produced `future` and yields one tensor
    per value type of the future, in order.
  }];
  let arguments = (ins Sbp_FutureType:$future);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$future attr-dict `:` qualified(type($future))";
}

def Sbp_TransferStartOp : Sbp_Op<"transfer_start", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "starts an async copy of a per-rank tensor to another memory";
  let description = [{
    Copies the rank's tensor from memory kind `from` to memory kind `to`
    (device, host, nvme) and returns a future; `sbp.transfer_wait`
    completes it. Transfers run on the rank's copy engine (a host thread
    for NVMe files), so compute and collectives placed between the start
    and the wait overlap with it. `zero-partition` makes one from each
    `sbp.cast` that changes only the memory kind.

    ```mlir
    %f = sbp.transfer_start %m from nvme to host
        : tensor<1024xf32> -> !sbp.future<tensor<1024xf32>>
    %h = sbp.transfer_wait %f : !sbp.future<tensor<1024xf32>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       Sbp_MemoryKindAttr:$from,
                       Sbp_MemoryKindAttr:$to);
  let results = (outs Sbp_FutureType:$future);
  let assemblyFormat = [{
    $input `from` custom<MemoryKind>($from) `to` custom<MemoryKind>($to)
    attr-dict `:` type($input) `->` qualified(type($future))
  }];
  let hasVerifier = 1;
}

def Sbp_TransferWaitOp : Sbp_Op<"transfer_wait", [
    MemoryEffects<[MemRead, MemWrite]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "waits for an async transfer and yields the copied tensor";
  let arguments = (ins Sbp_FutureType:$future);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$future attr-dict `:` qualified(type($future))";
  let extraClassDeclaration = [{
    TransferStartOp getStart() {
      return getFuture().getDefiningOp<TransferStartOp>();
    }
  }];
}

def Sbp_ToPartialOp : Sbp_Op<"to_partial", [Pure]> {
  let summary = "this rank's share of a partial sum over one hierarchy axis";
  let description = [{
    The SPMD lowering of a cast to `P(sum)` on hierarchy axis `grid_axis`
    of the graph's placement, per rank:
    - without `split_axis` (from `B`): the rank at coordinate 0 of the axis
      holds the value and the others zeros, so the sum over the axis is
      the value once;
    - with `split_axis` d (from `S(d)`): the full-size tensor of zeros with
      the rank's part at its block of dim d (balanced parts, larger first).

    ```mlir
    %p = sbp.to_partial %b on axis 1 : tensor<4xf32> -> tensor<4xf32>
    %q = sbp.to_partial %s on axis 0 split 1 : tensor<8x2xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$grid_axis,
                       OptionalAttr<I64Attr>:$split_axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` `axis` $grid_axis (`split` $split_axis^)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Sbp_SendOp : Sbp_Op<"send", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "sends a per-rank tensor to another pipeline stage";
  let description = [{
    The sending half of a cast between two pipeline stages' placements
    (docs/design.md#pipeline-parallelism): the rank of stage `source_stage`
    sends its tensor to the rank at the same place of stage
    `target_stage`'s grid and goes on at once; the future is the message,
    which `sbp.recv` on the target stage takes.

    ```mlir
    %m = sbp.send %x from stage 0 to stage 1
        : tensor<8x64xf32> -> !sbp.future<tensor<8x64xf32>>
    %y = sbp.recv %m : !sbp.future<tensor<8x64xf32>>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$source_stage,
                       I64Attr:$target_stage);
  let results = (outs Sbp_FutureType:$message);
  let assemblyFormat = [{
    $input `from` `stage` $source_stage `to` `stage` $target_stage attr-dict
    `:` type($input) `->` qualified(type($message))
  }];
  let hasVerifier = 1;
}

def Sbp_RecvOp : Sbp_Op<"recv", [
    MemoryEffects<[MemRead, MemWrite]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "receives a tensor another pipeline stage sent";
  let description = [{
    The receiving half of `sbp.send`: the rank of the target stage waits
    for the message and yields the tensor. Messages between two stages are
    received in the order they were sent.
  }];
  let arguments = (ins Sbp_FutureType:$message);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$message attr-dict `:` qualified(type($message))";
  let extraClassDeclaration = [{
    /// The send whose message this receives.
    SendOp getSend();
  }];
}

#endif // ZEROSBP_DIALECTS_SBP_IR_SBPOPS_TD
