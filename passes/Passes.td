//===- Passes.td - ZeroSBP passes --------------------------*- tablegen -*-===//

#ifndef ZEROSBP_PASSES_PASSES_TD
#define ZEROSBP_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def ZeroAutodiff : Pass<"zero-autodiff", "::mlir::func::FuncOp"> {
  let summary = "Builds the backward graph from the loss";
  let description = [{
    The function returns a 0-D floating loss. Walking its ops in reverse,
    each op's `GradientOpInterface` turns the gradients of its results into
    gradients of its operands; a value used several times (a tied embedding
    and LM head) sums its gradients. Every trainable parameter (role
    `param`, not `frozen`) that reaches the loss gets one `nn.gradient`.
  }];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroFoldTransposes : Pass<"zero-fold-transposes", "::mlir::func::FuncOp"> {
  let summary = "Folds transposes into the matmuls that read them";
  let description = [{
    Runs first on a captured graph. An `nn.matmul` operand produced by an
    `nn.transpose` of its two axes (an `nn.batch_matmul` operand by a
    transpose of its last two axes, the others fixed) reads the transpose's
    input instead, with its `transpose_lhs` / `transpose_rhs` flag flipped,
    and a transpose left without users is erased. So `x @ w.T` (a tied LM
    head) keeps no transposed copy of `w` from the forward to the backward,
    and the backward's weight gradient comes out in `w`'s layout rather
    than through a second transpose. The matmul kernels compute the same
    product either way.
  }];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroFuseAttention : Pass<"zero-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "Fuses scores, scale, softmax and values into nn.attention";
  let description = [{
    Runs on the global view before autodiff. The chain
    `nn.batch_matmul %q, %k {transpose_rhs}`, any number of `nn.scale`,
    `nn.softmax` over the last axis (causal or not) and `nn.batch_matmul`
    of the probabilities with `%v` becomes one `nn.attention %q, %k, %v`
    with the product of the scales and the softmax's mask. Autodiff then
    gives it one `nn.attention_grad`, which recomputes the probabilities from
    the log-sum-exp the forward keeps, so no `Sq x Sk` tensor lives in the
    plan (flash attention). A chain whose scores, scaled scores or
    probabilities have another reader (returned, or used twice), a
    transposed `q` or `v`, or a softmax over another axis stays as it is.
    Discardable attributes of the last matmul (a checkpoint segment) carry
    over. Turned off by the pipeline option `fuse-attention=false`.
  }];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroFuseEpilogues : Pass<"zero-fuse-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Folds bias and GELU into the matmul that produces them";
  let description = [{
    Runs on the global view before autodiff. An `nn.matmul` whose only
    reader is an `nn.bias_add` of it becomes `nn.matmul_bias`; when the
    biased value's only reader is an `nn.gelu`, the three become
    `nn.matmul_bias_gelu`, which also returns the pre-activation that the
    GELU's gradient reads. The GEMM's epilogue (cuBLASLt's BIAS and
    GELU_AUX_BIAS) adds the bias and applies GELU as it writes the result.
    Autodiff gives the fused ops the unfused ops' gradients. A matmul or
    bias_add read elsewhere stays as it is. Discardable attributes of the
    last fused op (a checkpoint segment) carry over. Turned off by the
    pipeline option `fuse-epilogues=false`.
  }];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroFuseAccumulation
    : Pass<"zero-fuse-accumulation", "::mlir::func::FuncOp"> {
  let summary = "Folds each gradient-accumulation sum into the weight-gradient "
                "product it adds";
  let description = [{
    Runs on the local view, right after zero-partition. A gradient sum
    (`nn.add` marked `zero.grad_sum` by zero-autodiff: a gradient's running
    total over micro-batches or over a tied weight's uses) whose operand is
    an `nn.matmul` that nothing else reads becomes one `nn.matmul_add` at
    the product's place, when the running total exists there: the GEMM adds
    its product to the total as it writes it (cuBLAS's C with beta = 1;
    Megatron's gradient accumulation fusion). The sums keep their order;
    with the first two contributions both products, the later one adds to
    the earlier. zero-memory-plan writes the result over the total. Turned
    off by the pipeline option `fuse-accumulation=false`.
  }];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroRecomputeCheap : Pass<"zero-recompute-cheap", "::mlir::func::FuncOp"> {
  let summary = "Recomputes cheap forward values in the backward instead of keeping them";
  let description = [{
    Runs after autodiff (and zero-remat). A forward result that a backward
    op reads, of an op implementing `RecomputableOpInterface` (GELU, layer
    norm, the GELU of `nn.matmul_bias_gelu` in f32), is computed again right
    before its first backward reader when every value it is computed from
    is read by the backward anyway; the backward reads the new value. So the
    forward's copy dies at its last forward use, and what lives from the
    forward to the backward is only what must (a min-cut of the cheap ops,
    as torch.compile's partitioner makes). The recomputation gives the same
    bits, so losses do not change. Turned off by the pipeline option
    `recompute-cheap=false`.

    A variable counts as kept when `variables-persist` is set (stages 0-2,
    where each rank holds every parameter); at stage 3 reading a parameter
    in the backward would gather it again, so only what the backward reads
    already counts.
  }];
  let options = [
    Option<"variablesPersist", "variables-persist", "bool",
           /*default=*/"true",
           "variables stay whole on every rank (stages 0-2)">,
  ];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroInference : Pass<"zero-inference", "::mlir::func::FuncOp"> {
  let summary = "Makes a captured forward graph an inference graph";
  let description = [{
    Runs on a graph compiled for prediction or evaluation (a build
    that returns outputs without calling backward): dropout becomes the
    identity, and ops that belong to training (`nn.gradient`, `nn.assign`,
    optimizer updates) are refused. The function is marked
    `zero.inference`, so that zero-export-plan writes an inference plan
    (`"mode": "eval"`, docs/plan-format.md) that the runtime runs without
    gradients or updates. Every result is handed back whole to the host.
  }];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroAccumulate : Pass<"zero-accumulate", "::mlir::func::FuncOp"> {
  let summary = "Gradient accumulation: k micro-batches inside one step";
  let description = [{
    Runs on the forward graph, before zero-autodiff, as OneFlow's nn.Graph
    does it: the step takes the whole batch, each rank cuts its share into
    `steps` micro-batches, the forward is repeated per micro-batch (ops that
    read no input are shared), and the loss is the mean of the micro-batch
    losses. Autodiff then sums each parameter's gradient over the
    micro-batches and the optimizer runs once. Each micro-batch's backward
    depends on its own forward only, so a scheduler can run them one after
    the other and hold one micro-batch's activations at a time. Each copy
    of an `nn.dropout` gets its micro-batch index as `micro_batch`, so
    micro-batches draw different masks (docs/compiler.md, "Dropout").

    With `loop`, the graph keeps one micro-batch's forward instead of
    `steps` copies and is marked `zero.micro_batch_loop`: its input slice
    takes the micro-batch's index along `zero.micro_batch_dim`, and the
    loss is a running total (`zero.loop_carried`) that zero-pipeline-stages
    and the plan run once per micro-batch
    (docs/design.md#the-micro-batch-loop). The step computes the same sums
    in the same order, and the graph does not grow with `steps`.
  }];
  let options = [
    Option<"steps", "steps", "int64_t", "1", "micro-batches per step">,
    Option<"loop", "loop", "bool", "false",
           "keep one micro-batch's graph, run as a loop of `steps`">,
    Option<"world", "world", "int64_t", "0",
           "data-parallel ranks (0: from the inputs' placement)">,
  ];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroRemat : Pass<"zero-remat", "::mlir::func::FuncOp"> {
  let summary = "Activation checkpointing: recomputes checkpointed segments";
  let description = [{
    Runs right after zero-autodiff. The forward ops of a checkpointed
    segment carry `zero.checkpoint = N` (the graph builder sets it around a
    checkpointed module or GPT-2 block). A value of a segment that only the
    backward reads is recomputed, by copies of the segment's ops placed
    right before the first backward op that reads it; the backward reads
    the copies. The forward's values then die after their last forward use,
    and the segment keeps only its inputs and outputs from the forward to
    the backward. Copies of a segment made by zero-accumulate are
    recomputed each where its own backward needs it. The copies compute the
    same ops on the same values, so losses and parameters are the same bit
    for bit (docs/design.md#activation-checkpointing). Without marks it does
    nothing.
  }];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroPipelineStages : Pass<"zero-pipeline-stages", "::mlir::func::FuncOp"> {
  let summary = "Pipeline parallelism: stages on a pipeline axis, send/recv "
                "between them, and the micro-batch schedule";
  let description = [{
    Runs last on the global view, on a graph laid out on the first stage's
    ranks (docs/design.md#pipeline-parallelism). Every op goes to a
    pipeline stage: the builder's `zero.pipeline_stage` marks (zero-autodiff
    copies them onto the gradients); an unmarked op goes where its operands
    are, else where its users are, else to the earliest stage of its
    operands. Stage k's values move to stage k's placement: the first
    stage's ranks shifted by k times their count, the same grid. A value
    read on another stage crosses once per stage by an `sbp.cast` between
    the placements (zero-partition makes it `sbp.send` and `sbp.recv`); an
    op without operands (a fill, the step) is copied instead. The loss goes to the
    first stage, whose rank 0 reports it. A gradient summed over
    micro-batches is summed per stage in micro-batch order, then across
    stages.

    The ops are then ordered as the schedule runs them: each stage runs its
    micro-batches' forwards F(m) and backwards B(m) as GPipe (every F, then
    every B) or 1F1B (stage s runs P - 1 - s forwards ahead, then one
    backward per forward), and the rest (casts of parameters, the
    optimizer) as soon as what they read is there. With `virtual-stages` V,
    the marks count P V virtual stages, virtual stage v runs on stage
    v mod P, and 1F1B is Megatron's interleaved order over each stage's V
    model chunks, which shrinks the bubble V times. `zero.pipeline` records
    the stages, micro-batches, schedule and the bubble planned from the
    matmul FLOPs of each F(m) and B(m): the share of the stages' time that
    they wait.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1", "pipeline stages (1: none)">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "micro-batches per step (zero-accumulate's steps)">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "1f1b or gpipe">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "model chunks per stage: marks count virtual stages, virtual "
           "stage v runs on stage v mod `stages`, and 1F1B interleaves them "
           "(Megatron's virtual pipeline stages)">,
  ];
  let dependentDialects = ["::mlir::sbp::SbpDialect",
                           "::mlir::nn::NNDialect"];
}

def ZeroOffload : Pass<"zero-offload", "::mlir::func::FuncOp"> {
  let summary = "ZeRO-Offload and ZeRO-Infinity: optimizer states off the device";
  let description = [{
    Runs last on the global view, after zero-stage has split the optimizer
    states. Every `opt_state` and `master` variable moves to host memory
    (`optimizer-device=cpu`) or to NVMe files (`nvme`): its placement gets
    `memory = host` or `memory = nvme`. Each optimizer update then runs on
    the host: operands in another memory (the gradient shard, the parameter
    shard, the step; states on NVMe) are cast to host memory before it, its
    results are in host memory, the new parameter is cast back to the
    device for its consumers, and new states on NVMe are cast back there
    before their assignment. With `param-device` (offload_param) the
    partitioned parameters of stage 3 move too: each device reader (a
    gather, an update left on the device) reads a copy made right before
    it, and the new value goes back to the parameter's memory before its
    assignment. Between NVMe and the device a copy passes through host
    memory. zero-partition makes each of these casts an asynchronous
    transfer (docs/design.md#offload).

    With `delayed-update` (ZeRO-Offload's one-step delayed parameter
    update) each offloaded update applies the gradient of the step before:
    a variable `<parameter>.delayed_grad` (role grad, in the states'
    memory, zeros before the first step) holds it, the update reads it, and
    the step's own gradient is assigned to it. The update then depends on
    nothing of the step, and zero-schedule runs it from the step's start.
  }];
  let options = [
    Option<"device", "optimizer-device", "::zerosbp::OffloadDevice",
           "::zerosbp::OffloadDevice::None", "none, cpu or nvme",
           [{::llvm::cl::values(
               clEnumValN(::zerosbp::OffloadDevice::None, "none",
                          "states stay on the device"),
               clEnumValN(::zerosbp::OffloadDevice::Cpu, "cpu",
                          "states in host memory"),
               clEnumValN(::zerosbp::OffloadDevice::Nvme, "nvme",
                          "states in NVMe files"))}]>,
    Option<"paramDevice", "param-device", "::zerosbp::OffloadDevice",
           "::zerosbp::OffloadDevice::None",
           "stage-3 parameter shards: none, cpu or nvme",
           [{::llvm::cl::values(
               clEnumValN(::zerosbp::OffloadDevice::None, "none",
                          "shards stay on the device"),
               clEnumValN(::zerosbp::OffloadDevice::Cpu, "cpu",
                          "shards in host memory"),
               clEnumValN(::zerosbp::OffloadDevice::Nvme, "nvme",
                          "shards in NVMe files"))}]>,
    Option<"delayedUpdate", "delayed-update", "bool", "false",
           "each offloaded update applies the previous step's gradient">,
  ];
  let dependentDialects = ["::mlir::nn::NNDialect", "::mlir::sbp::SbpDialect"];
}

def ZeroOptimizer : Pass<"zero-optimizer", "::mlir::func::FuncOp"> {
  let summary = "Turns parameter gradients into optimizer updates";
  let description = [{
    Replaces each `nn.gradient` with an SGD, Adam or AdamW update (PyTorch's
    definitions), creating the optimizer state variables (role `opt_state`,
    named `<param>.exp_avg` and `<param>.exp_avg_sq`) and one `nn.step`, and
    assigns the new values with `nn.assign`.
  }];
  let options = [
    Option<"optimizer", "optimizer", "::zerosbp::OptimizerKind",
           "::zerosbp::OptimizerKind::Adam", "sgd, adam or adamw",
           [{::llvm::cl::values(
             clEnumValN(::zerosbp::OptimizerKind::SGD, "sgd", "SGD"),
             clEnumValN(::zerosbp::OptimizerKind::Adam, "adam", "Adam"),
             clEnumValN(::zerosbp::OptimizerKind::AdamW, "adamw", "AdamW"))}]>,
    Option<"lr", "lr", "double", "1e-3", "learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam's beta2">,
    Option<"eps", "eps", "double", "1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "L2 penalty (Adam, SGD) or decoupled decay (AdamW)">,
  ];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroAmp : Pass<"zero-amp", "::mlir::func::FuncOp"> {
  let summary = "Mixed precision: fp16/bf16 compute, fp32 master weights";
  let description = [{
    Runs after zero-optimizer. Parameters become `precision` (their role
    stays `param`); each updated parameter gets an fp32 master copy
    (`<param>.master`, role `master`, initialized from the parameter) that
    the update reads and writes, and the parameter is assigned the update's
    result narrowed back. Optimizer state stays fp32. Float inputs are cast
    down after they are read; the loss (cross-entropy) is computed in fp32.
    Gradients stay in low precision until the update, which widens them and
    divides by the loss scale. bf16 runs unscaled. A static `loss-scale`
    seeds the backward with it; `loss-scale=0` scales dynamically: the
    scale is the variable `amp.loss_scale` (with `amp.good_steps` and
    `amp.hysteresis`), and `zero-loss-scale` finishes the job after
    zero-stage.
  }];
  let options = [
    Option<"precision", "precision", "::zerosbp::Precision",
           "::zerosbp::Precision::BF16", "fp16 or bf16",
           [{::llvm::cl::values(
             clEnumValN(::zerosbp::Precision::FP16, "fp16", "float16"),
             clEnumValN(::zerosbp::Precision::BF16, "bf16", "bfloat16"))}]>,
    Option<"lossScale", "loss-scale", "double", "1.0",
           "static loss scale (the backward seed; updates divide by it); "
           "0 for dynamic scaling">,
    Option<"initialScalePower", "initial-scale-power", "int64_t", "16",
           "dynamic scaling starts at 2^power">,
    Option<"hysteresis", "hysteresis", "int64_t", "2",
           "dynamic scaling: overflows tolerated before the scale drops">,
  ];
  let dependentDialects = ["::mlir::nn::NNDialect"];
}

def ZeroLossScale : Pass<"zero-loss-scale", "::mlir::func::FuncOp"> {
  let summary = "Dynamic loss scaling on the gradients the updates read";
  let description = [{
    Runs after zero-stage on a graph zero-amp prepared with `loss-scale=0`.
    Each rank counts the inf/NaN elements of the gradients it holds (shards
    give partial counts); one scalar all-reduce makes the overflow global.
    Counts of broadcast gradients are whole on every rank and are added
    after it, so at stage 0 no collective is needed.
    Gradients are widened and divided by `amp.loss_scale` before their
    update; on overflow every update is skipped (its results are its
    inputs); `nn.loss_scale_update` steps DeepSpeed's scaler.
  }];
  let options = [
    Option<"window", "window", "int64_t", "1000",
           "clean steps before the scale doubles">,
    Option<"minScale", "min-scale", "double", "1.0",
           "the scale never drops below this">,
    Option<"hysteresis", "hysteresis", "int64_t", "2",
           "overflows tolerated before the scale halves">,
  ];
  let dependentDialects = ["::mlir::nn::NNDialect", "::mlir::sbp::SbpDialect"];
}

def ZeroGradClip : Pass<"zero-grad-clip", "::mlir::func::FuncOp"> {
  let summary = "Clips gradients to a global norm, where the updates read them";
  let description = [{
    Runs after zero-stage, on the gradients the updates consume: broadcast
    after an all-reduce (stage 0) or shards after a reduce-scatter. Each
    rank sums the squares of what it holds (fp32), shards giving a partial
    sum; one all-reduce of that scalar gives the global sum, from which
    `nn.clip_coefficient` (torch's clip_grad_norm_) scales every gradient.
    Sums of broadcast gradients are whole on every rank and are added after
    the all-reduce (at stage 0 there is none).
  }];
  let options = [
    Option<"maxNorm", "max-norm", "double", "1.0",
           "largest global L2 norm of the gradients">,
  ];
  let dependentDialects = ["::mlir::nn::NNDialect", "::mlir::sbp::SbpDialect"];
}

def ZeroSbpPropagation
    : Pass<"zero-sbp-propagation", "::mlir::func::FuncOp"> {
  let summary = "Assigns an SBP to every value and inserts SBP casts";
  let description = [{
    Visits ops in order. Sources keep a given `#sbp.global` encoding or
    default to data parallelism (inputs `S(0)`, variables `B`). Every other
    op takes, among its legal signatures, the one whose operand casts move
    the fewest bytes (ties: the first listed), and `sbp.cast`s the operands
    that differ. Results get role `activation`, except the gradient operand
    of an optimizer update (role `grad`). A value written by `nn.assign`
    is cast to its variable's SBP. With `world`, a graph without any
    placement is placed on CPU ranks 0..world-1, and a placed graph must
    have that many ranks. With `group-size` m, a 1-D placement of N ranks
    becomes the 2-D `[N/m, m]` and every annotated value keeps its SBP on
    both axes (MiCS and hpZ, whose groups zero-stage then uses).

    Tensor parallelism (docs/design.md#tensor-parallelism): a parameter
    captured split on an axis, and what is computed from it alone, keeps
    that split while another signature is legal; on such a model axis a
    signature that grows a partial sum pays its later reduce-scatter;
    signatures that would leave a rank an empty part come last. A cast is
    made once per value and layout and reused; an earlier cast counts as
    free only for values computed from the loss seed, so that the layout
    does not depend on the ZeRO stage. A cross entropy whose logits arrive
    split by class becomes the vocabulary-parallel loss
    (nn.cross_entropy_max, nn.cross_entropy_sums, nn.cross_entropy_loss,
    nn.cross_entropy_split_grad).
  }];
  let options = [
    Option<"world", "world", "int64_t", "0",
           "rank count (0: take the graph's placement)">,
    Option<"groupSize", "group-size", "int64_t", "0",
           "MiCS and hpZ: lay the ranks out as [nodes, this] (0: as "
           "placed)">,
  ];
  let dependentDialects = ["::mlir::sbp::SbpDialect"];
}

def ZeroStage : Pass<"zero-stage", "::mlir::func::FuncOp"> {
  let summary = "The ZeRO rewrite of one stage "
                # "(docs/design.md#zero-stages-and-their-formulas)";
  let description = [{
    Selects by role. Stage 0 leaves data parallelism as it is. Stage 1
    splits optimizer states (and master weights), stage 2 also gradients,
    stage 3 also parameters, over the data-parallel ranks: each such tensor
    is flattened and padded to a multiple of the rank count and held
    `S(0)`, so every rank owns an equal contiguous shard. Variables with
    fewer than `shard-min-size` elements stay broadcast. A variable
    captured split on one axis (tensor parallelism) keeps its model part
    on that axis and is partitioned over the others: a `(parts, n)` shard
    `[S(1), S(0)]` with `model_split` (docs/design.md#zero-on-the-data-axis);
    a split on two axes or into unequal parts is an error. With
    `mics-shard-size` m (MiCS), the
    placement must be 2-D `[nodes, m]`: shards are `[B, S(0)]`, padded to a
    multiple of m, so gathers stay within a node and gradients are
    reduce-scattered within it, then all-reduced across nodes. With
    `hpz-partition-size` h (ZeRO++ hpZ, stage 3, placement `[nodes, h]`) the
    forward's gather of a parameter also keeps a `[B, S(0)]` slice of it,
    from which the backward gathers within the node.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", "0", "ZeRO stage, 0 to 3">,
    Option<"shardMinSize", "shard-min-size", "int64_t", "0",
           "tensors with fewer elements stay broadcast">,
    Option<"persistenceThreshold", "persistence-threshold", "int64_t", "0",
           "stage 3: parameters with fewer elements stay gathered">,
    Option<"micsShardSize", "mics-shard-size", "int64_t", "0",
           "MiCS: shards split over the inner axis of a [nodes, this] "
           "placement and replicated across nodes (0: over every rank)">,
    Option<"hpzPartitionSize", "hpz-partition-size", "int64_t", "0",
           "stage 3, ZeRO++ hpZ: the backward gathers from a copy split "
           "over the inner axis of a [nodes, this] placement (0: off)">,
  ];
  let dependentDialects = ["::mlir::sbp::SbpDialect",
                           "::mlir::nn::NNDialect"];
}

def ZeroQuantizeWeights : Pass<"zero-quantize-weights", "::mlir::func::FuncOp"> {
  let summary = "ZeRO++ qwZ: stage-3 parameters gathered as block-quantized "
                # "codes (docs/design.md#quantized-weight-gathers)";
  let description = [{
    Every gather of a stage-3 parameter shard, an `sbp.cast` of a 1-D
    `param` variable from `S(0)` on every hierarchy axis to `B`, becomes
    `nn.quantize` of the shard, the gather of its codes and of its scales,
    and `nn.dequantize`: the gather moves 1 (8-bit) or 1/2 (4-bit) byte per
    element plus 4 per block instead of the parameter's bytes, and the IR
    shows where precision is lost. Each rank quantizes its own part, so a
    part that is no whole number of blocks is padded to one first, as
    `(ranks, part)` rows, and the padding is sliced off after the
    dequantize. Other casts are left as they are: the gather of an updated
    parameter shard (a parameter kept whole) is the parameter itself.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "2048",
           "elements per quantization block (even at 4 bits)">,
    Option<"bits", "bits", "int64_t", "8", "bits per code: 8 or 4">,
  ];
  let dependentDialects = ["::mlir::sbp::SbpDialect",
                           "::mlir::nn::NNDialect"];
}

def ZeroPartition : Pass<"zero-partition", "::mlir::ModuleOp"> {
  let summary = "Global view to per-rank local view; SBP casts to collectives";
  let description = [{
    Input: graphs whose tensor values all carry `#sbp.global` (the output of
    zero-sbp-propagation and zero-stage). Every tensor gets the shape one
    rank holds, without an encoding: a dim split `S(i)` on hierarchy axes of
    sizes n_a is cut by a nested balanced split (sizes differ by at most
    one, larger parts first). Each placement becomes one `shard.grid` at
    module level (`@cpus4`, or `@cpus4_2x2` for a 2-D hierarchy) carrying
    the placement in `zero.placement`.

    Each `sbp.cast` becomes one step per hierarchy axis that changes (splits
    are removed innermost axis first, then added outermost first, so nested
    splits stay in rank order): `P -> B` `shard.all_reduce`, `P -> S`
    `shard.reduce_scatter`, `S -> B` `shard.all_gather`, `S(i) -> S(j)`
    `shard.all_to_all`, `B -> S` `shard.all_slice`, `B -> P(sum)` rank 0 of
    the axis keeps the value and the others hold zeros, `S -> P(sum)` the
    local part padded with zeros to the unsplit size. Casts that change no
    axis fold away.

    Ops rewrite their attributes that refer to global sizes through
    SbpOpInterface's `localizeAttrs` (docs/ir.md#the-local-view):
    `nn.cross_entropy`, `nn.cross_entropy_grad` and `nn.reduce_mean` get the
    global element count they divide by in `count`; `nn.slice` sizes along
    split dims become local. `nn.variable` and `nn.input` keep their global
    type in `zero.global_type` for checkpoints and the plan. `nn.dropout`
    gets `global_shape` and `split_dims`, from which the runtime finds each
    rank's offsets in the global tensor.

    With `rank=-1` the result is one SPMD program for every rank: all splits
    must be even, and rank-dependent values use `shard.process_linear_index`
    (or `shard.process_multi_index` on a 2-D grid). With `rank=N` it is the
    program of rank N (recorded as `zero.rank` on each function): uneven
    splits get that rank's size, rank-dependent choices are static; a
    collective over an uneven split is still an error, since the upstream
    `shard` collectives need equal shards.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", "-1",
           "-1: one SPMD program for every rank (even splits only); N: the "
           "program of rank N of the placement">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::nn::NNDialect"];
}

//===----------------------------------------------------------------------===//
// Local view: after zero-partition, on per-rank tensors.
//===----------------------------------------------------------------------===//

def ZeroBucketing : Pass<"zero-bucketing", "::mlir::func::FuncOp"> {
  let summary = "Fuses collectives into same-order buckets; 2-D ones in two rounds";
  let description = [{
    Runs on the output of zero-partition. Variables move to the top of the
    function and assignments to its end (a variable's reads see the step's
    old value and its assignment takes effect when the step ends, so
    neither move changes the program). Every `shard` collective becomes an
    `sbp.collective_start` directly followed by its `sbp.collective_wait`,
    a synchronous collective that zero-schedule may spread apart.

    Collectives of the same kind, placement axis, reduction and element type
    are fused, in program order, into buckets of at most
    `reduce-bucket-size` elements (all-reduce, reduce-scatter),
    `allgather-bucket-size` elements (all-gathers of computed values, such
    as updated parameter shards) or `prefetch-bucket-size` elements
    (stage 3: all-gathers of parameter shards). A segment counts its
    full-size tensor. A tensor larger than its limit gets a bucket of its
    own. Only collectives that split or join their first dim longer than 1
    (dim 0, or dim 1 of a model-split variable's (1, n) row) are fused, so
    every segment is one contiguous piece per rank, and a bucket's members
    share that dim; all-to-all stays alone. The reshapes and pads that lay
    a collective's input out move up to the value they read, so gradients
    flattened at their updates still share buckets, and so does qwZ's
    `nn.quantize` of a parameter shard, so that its gathers bucket as
    unquantized ones do. A 2-D collective's
    second step (MiCS's all-reduce across groups of a reduce-scatter within
    them) is fused in a second round, over the buckets of the first.

    A bucket must have a point where all its inputs exist and none of its
    results is used yet; a collective that would break this starts the next
    bucket. Reductions go right after their last input (freeing full-size
    gradients as early as the bucket fills, as DeepSpeed does), gathers
    right before their first use. Buckets are numbered in issue order
    (`bucket`), which is the program order: the same on every rank, never
    pointer or hash order.
  }];
  let options = [
    Option<"reduceBucketSize", "reduce-bucket-size", "int64_t", "500000000",
           "elements per all-reduce / reduce-scatter bucket">,
    Option<"allgatherBucketSize", "allgather-bucket-size", "int64_t",
           "500000000", "elements per all-gather bucket">,
    Option<"prefetchBucketSize", "prefetch-bucket-size", "int64_t",
           "50000000",
           "elements per stage-3 parameter all-gather bucket">,
  ];
  let dependentDialects = ["::mlir::sbp::SbpDialect"];
}

def ZeroSchedule : Pass<"zero-schedule", "::mlir::func::FuncOp"> {
  let summary = "Overlaps collectives with compute; stage-3 prefetch and reuse";
  let description = [{
    Runs after zero-bucketing. With `overlap-comm` each collective starts as
    soon as its inputs exist and is waited for right before the first use of
    a result, so the compute in between runs while it moves: a gradient
    bucket's reduce-scatter starts as soon as its last gradient is produced
    in the backward pass. Without it every collective stays synchronous.

    Pipeline stages: each `sbp.recv` moves to right before its first
    reader, so that the stage does its other work while the message is on
    its way; the receives of one sender stay in the order it sent them.

    Stage 3 (all-gathers of parameter shards, held by `nn.variable`):
    with `overlap-comm` the gather of the next bucket starts while the
    previous bucket's parameters are in use, reaching back over earlier
    parameter buckets while the buckets in flight hold at most
    `prefetch-bucket-size` elements and the gathered parameters at most
    `max-live-parameters`. A backward gather of a parameter whose forward
    gather was last used at most `max-reuse-distance` gathered elements
    earlier is dropped and the forward copy is kept instead
    (`stage3_max_reuse_distance`); otherwise the forward copy is released
    after its last forward use (the memory plan frees it) and gathered
    again. Buckets are renumbered in issue order.

    Offload with `overlap-comm`: each copy to the host (with the pure ops
    that only feed it) moves right after what it copies and each update on
    the host right after its operands, so that the host updates during the
    backward (ZeRO-Offload's overlap); the copies of new parameters back to
    the device stay after the backward, and their waits follow the last of
    them.

    Offload (`nvme-depth` > 0): reads of optimizer states off NVMe start up
    to `nvme-depth` reads ahead of the update that needs them, in order,
    and a write back waits only when `nvme-depth` later writes have
    started, so the copy stream reads and writes while the host runs
    updates (DeepSpeed's pipelined swapper, `buffer_count` buffers).
  }];
  let options = [
    Option<"overlapComm", "overlap-comm", "bool", "false",
           "overlap collectives with compute">,
    Option<"nvmeDepth", "nvme-depth", "int64_t", "0",
           "NVMe transfers in flight ahead of their use (0: synchronous)">,
    Option<"prefetchBucketSize", "prefetch-bucket-size", "int64_t",
           "50000000", "stage 3: elements gathered ahead of their use">,
    Option<"maxLiveParameters", "max-live-parameters", "int64_t",
           "1000000000", "stage 3: gathered parameter elements held at once">,
    Option<"maxReuseDistance", "max-reuse-distance", "int64_t", "0",
           "stage 3: keep a gathered parameter for its backward use when at "
           "most this many elements are gathered in between (0: always "
           "gather again)">,
  ];
  let dependentDialects = ["::mlir::sbp::SbpDialect"];
}

def ZeroMemoryPlan : Pass<"zero-memory-plan", "::mlir::func::FuncOp"> {
  let summary = "Liveness and best-fit offsets in one arena per rank";
  let description = [{
    Runs on the final schedule. Every tensor value gets a slot, a buffer
    and a byte offset in it, written as `zero.slots` on its op (buffer,
    offset pairs, one per result; -1 for non-tensors). Values share a
    buffer where no copy is needed: an op of `nn.ViewOpInterface` (a
    reshape, a leading-dim slice) is a view into its operand; an optimizer
    update writes its parameter and states in place; an
    all-reduce works in place; a value assigned to a variable is computed
    straight into the variable when the old value is no longer read by
    then; with `contiguous-gradients` the inputs of a reduction bucket are
    laid end to end in one buffer, so gradients are written straight into
    their bucket slots (without it, a reduction bucket is packed through a
    staging buffer of its size, live while the collective runs).

    A buffer is live from the first op that writes it to the last op that
    reads it (a collective's inputs until its wait, its results from its
    start); variables live for the whole run. Buffers are packed best fit,
    largest first, into one arena. The function gets `zero.buffers` (one
    `#sbp.buffer<offset, bytes, live = [first, last], role, memory>` per
    buffer, docs/ir.md#the-memory-plan) and
    `zero.memory` (arena bytes, the lower bound max-live bytes, the peak
    of the model states (param, grad, master, opt_state) together, and peak
    live bytes by role: param, grad, master, opt_state, activation, input,
    comm_buffer).
  }];
  let options = [
    Option<"contiguousGradients", "contiguous-gradients", "bool", "true",
           "lay reduction buckets' inputs end to end in one buffer">,
    Option<"alignment", "alignment", "int64_t", "64",
           "byte alignment of every buffer">,
  ];
  let dependentDialects = ["::mlir::sbp::SbpDialect"];
}

def ZeroVerifyMemoryPlan
    : Pass<"zero-verify-memory-plan", "::mlir::func::FuncOp"> {
  let summary = "Checks a memory plan: no live buffers overlap, no clobbers";
  let description = [{
    Recomputes liveness from the IR and the `zero.slots` of zero-memory-plan
    and fails, naming the values, when two buffers live at the same time
    share arena bytes, a value lies outside its buffer or is read while its
    buffer is not live, or a value overwrites part of another that is read
    later. Any test can run it after zero-memory-plan.
  }];
}

def ZeroExportPlan : Pass<"zero-export-plan", "::mlir::ModuleOp"> {
  let summary = "Writes the plan file the runtime executes";
  let description = [{
    Writes the planned function as a versioned JSON plan (docs/plan-format.md):
    the arena, buffers and value slots, the instruction list (kernels with
    their attributes, collectives with group, bucket layout and stream,
    waits, and the buffers released after each instruction), the parameter
    table (names, shapes, dtypes, shard ranges per rank) and inputs. The IR
    is unchanged.
  }];
  let options = [
    Option<"file", "file", "std::string", "\"-\"",
           "where to write the plan ('-': stdout)">,
    Option<"config", "config", "std::string", "\"\"",
           "the ZeRO config as JSON, stored in the plan">,
    Option<"nvmePath", "nvme-path", "std::string", "\"\"",
           "the directory of the NVMe arena's files">,
    Option<"pinMemory", "pin-memory", "bool", "false",
           "page-lock the host arena">,
  ];
}

#endif // ZEROSBP_PASSES_PASSES_TD
