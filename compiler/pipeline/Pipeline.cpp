//===- Pipeline.cpp - the ZeRO pass pipeline from a config ----------------===//

#include "compiler/pipeline/Pipeline.h"

#include "compiler/config/PipelineOptions.h"
#include "compiler/pipeline/ZeroPipelineHelp.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "passes/Passes.h"

using namespace mlir;
using namespace zerosbp;

static llvm::Error notYet(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " is not supported by this compiler "
                                        "yet");
}

llvm::Error zerosbp::checkPipelineConfig(const ZeroConfig &config) {
  // The ranges were verified once, by resolveConfig.
  // Levels 1 and 2 both hand broadcast parameters to their consumers, which
  // is what the stage rewrite does; 0 would leave consumers the shards.
  if (config.stage != ZeroStage::DataParallel && config.shardRestoreLevel == 0)
    return notYet("shard_restore_level=0");
  if (config.pipelineParallelSize > 1) {
    // What the pipeline does not carry yet; each refusal says why.
    auto refuse = [](const llvm::Twine &what, const llvm::Twine &why) {
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "pipeline-parallel-size > 1 with " + what + " is not built: " + why +
              " (docs/design.md#pipeline-parallelism)");
    };
    if (config.stage > ZeroStage::OptimizerStates)
      return refuse("ZeRO stage " + llvm::Twine(stageNumber(config.stage)),
                    "a stage sums each gradient over the micro-batches in "
                    "full before reducing it, so stage 2 would save nothing "
                    "over stage 1, and stage 3 would gather each parameter "
                    "once per micro-batch; use stage 0 or 1, as DeepSpeed's "
                    "pipeline engine does");
    if (config.gradientClipping > 0)
      return refuse("gradient clipping", "its norm spans every stage");
    if (config.precision.precision == Precision::FP16 &&
        config.precision.lossScale == 0)
      return refuse("dynamic fp16 loss scaling",
                    "an overflow on one stage skips every stage's step; "
                    "give a static loss_scale");
    if (config.zero.offloadOptimizer != OffloadDevice::None ||
        config.zero.offloadParam != OffloadDevice::None)
      return refuse("offload", "the host updates are not placed on stages");
    if (config.zero.micsShardSize > 0 || config.zero.hpzPartitionSize > 0)
      return refuse("MiCS or hpZ",
                    "their groups are laid out over the whole world");
  }
  return llvm::Error::success();
}

/// zero-sbp-propagation and zero-stage, which training and inference share.
static void addLayoutPasses(OpPassManager &pm, const ZeroConfig &config) {
  // MiCS and hpZ lay the ranks out as [nodes, group size]; a group of
  // every rank is flat ZeRO.
  auto groupOf = [&](int64_t size, bool applies) -> int64_t {
    return applies && size > 1 && size < config.stageWorld() ? size : 0;
  };
  int64_t mics = groupOf(config.zero.micsShardSize,
                         config.stage != ZeroStage::DataParallel);
  int64_t hpz = groupOf(config.zero.hpzPartitionSize,
                        config.stage == ZeroStage::Parameters);
  // A pipelined graph is laid out on one stage's ranks.
  pm.addPass(createZeroSbpPropagation(
      {/*world=*/config.stageWorld(), /*groupSize=*/mics ? mics : hpz}));
  ZeroStageOptions stage;
  stage.stage = stageNumber(config.stage);
  stage.shardMinSize = config.shardMinSize;
  stage.persistenceThreshold = config.stage == ZeroStage::Parameters
                                   ? config.zero.stage3ParamPersistenceThreshold
                                   : 0;
  stage.micsShardSize = mics;
  stage.hpzPartitionSize = hpz;
  pm.addPass(createZeroStage(stage));
  if (config.zero.quantizedWeights)
    pm.addPass(createZeroQuantizeWeights(
        {/*blockSize=*/config.zero.quantizedWeightsBlockSize, /*bits=*/8}));
}

/// Pipeline parallelism, last on the global view: the layout passes saw
/// one stage's ranks.
static void addPipelineStages(OpPassManager &pm, const ZeroConfig &config) {
  if (config.pipelineParallelSize <= 1)
    return;
  ZeroPipelineStagesOptions pipeline;
  pipeline.stages = config.pipelineParallelSize;
  pipeline.microBatches = config.gradientAccumulationSteps;
  pipeline.schedule = config.pipelineSchedule;
  pipeline.virtualStages = config.virtualPipelineStages;
  pm.addPass(createZeroPipelineStages(pipeline));
}

llvm::Error zerosbp::addGlobalPasses(OpPassManager &pm,
                                     const ZeroConfig &config, GraphKind kind,
                                     bool checkpointed) {
  if (llvm::Error error = checkPipelineConfig(config))
    return error;
  const PrecisionConfig &precision = config.precision;
  pm.addPass(createZeroFoldTransposes());
  if (config.fuseAttention)
    pm.addPass(createZeroFuseAttention());
  if (config.fuseEpilogues)
    pm.addPass(createZeroFuseEpilogues());
  if (kind == GraphKind::Inference) {
    // The forward alone, at the training graph's precision and layout, so
    // that its parameters are the training graph's (docs/compiler.md).
    pm.addPass(createZeroInference());
    if (precision.precision != Precision::FP32) {
      ZeroAmpOptions amp;
      amp.precision = precision.precision;
      amp.lossScale = 1;
      pm.addPass(createZeroAmp(amp));
    }
    addLayoutPasses(pm, config);
    addPipelineStages(pm, config);
    return llvm::Error::success();
  }
  // The graph's batch is the whole step's: micro-batch x accumulation x
  // world, as DeepSpeed's train_batch_size.
  if (config.gradientAccumulationSteps > 1)
    pm.addPass(createZeroAccumulate(
        {/*steps=*/config.gradientAccumulationSteps,
         /*loop=*/config.pipelineParallelSize > 1 && config.microBatchLoop,
         /*world=*/config.stageWorld()}));
  pm.addPass(createZeroAutodiff());
  if (checkpointed)
    pm.addPass(createZeroRemat());
  // At stage 3 a parameter read in the backward is gathered again.
  if (config.recomputeCheap)
    pm.addPass(createZeroRecomputeCheap(
        {/*variablesPersist=*/config.stage != ZeroStage::Parameters}));
  const OptimizerConfig &opt = config.optimizer;
  ZeroOptimizerOptions optimizer;
  optimizer.optimizer = opt.kind;
  optimizer.lr = opt.lr;
  optimizer.beta1 = opt.beta1;
  optimizer.beta2 = opt.beta2;
  optimizer.eps = opt.eps;
  optimizer.weightDecay = opt.weightDecay;
  pm.addPass(createZeroOptimizer(optimizer));
  if (precision.precision != Precision::FP32) {
    ZeroAmpOptions amp;
    amp.precision = precision.precision;
    // Only fp16 scales the loss; 0 scales dynamically.
    amp.lossScale =
        precision.precision == Precision::FP16 ? precision.lossScale : 1.0;
    if (amp.lossScale == 0) {
      amp.initialScalePower = precision.initialScalePower;
      amp.hysteresis = precision.hysteresis;
    }
    pm.addPass(createZeroAmp(amp));
  }
  addLayoutPasses(pm, config);
  // Dynamic fp16 loss scaling: overflow check, unscaling and skipping where
  // the updates read their (reduced) gradients.
  if (precision.precision == Precision::FP16 && precision.lossScale == 0) {
    ZeroLossScaleOptions lossScale;
    lossScale.window = precision.lossScaleWindow;
    lossScale.minScale = static_cast<double>(precision.minLossScale);
    lossScale.hysteresis = precision.hysteresis;
    pm.addPass(createZeroLossScale(lossScale));
  }
  if (config.gradientClipping > 0)
    pm.addPass(createZeroGradClip({/*maxNorm=*/config.gradientClipping}));
  // Last: the updates move to the host with the states they read, after
  // the passes that act where the updates read their gradients.
  if (config.zero.offloadOptimizer != OffloadDevice::None ||
      config.zero.offloadParam != OffloadDevice::None)
    pm.addPass(createZeroOffload(
        {/*device=*/config.zero.offloadOptimizer,
         /*paramDevice=*/config.zero.offloadParam,
         /*delayedUpdate=*/config.zero.offloadOptimizerDelayedUpdate}));
  addPipelineStages(pm, config);
  return llvm::Error::success();
}

llvm::Error zerosbp::buildGlobalPipeline(OpPassManager &pm,
                                         const ZeroConfig &config) {
  return addGlobalPasses(pm.nest<func::FuncOp>(), config);
}

void zerosbp::addLocalPasses(OpPassManager &pm, const ZeroConfig &config,
                             GraphKind kind) {
  const ZeroKnobs &zero = config.zero;
  if (config.fuseAccumulation && kind == GraphKind::Training)
    pm.addPass(createZeroFuseAccumulation());
  ZeroBucketingOptions bucketing;
  bucketing.reduceBucketSize = zero.reduceBucketSize;
  bucketing.allgatherBucketSize = zero.allgatherBucketSize;
  bucketing.prefetchBucketSize = zero.stage3PrefetchBucketSize;
  pm.addPass(createZeroBucketing(bucketing));
  ZeroScheduleOptions schedule;
  schedule.overlapComm = zero.overlapComm;
  if (zero.offloadOptimizer == OffloadDevice::Nvme)
    schedule.nvmeDepth = zero.offloadOptimizerBufferCount;
  else if (zero.offloadParam == OffloadDevice::Nvme)
    schedule.nvmeDepth = 4;
  schedule.prefetchBucketSize = zero.stage3PrefetchBucketSize;
  schedule.maxLiveParameters = zero.stage3MaxLiveParameters;
  schedule.maxReuseDistance =
      config.stage == ZeroStage::Parameters ? zero.stage3MaxReuseDistance : 0;
  pm.addPass(createZeroSchedule(schedule));
  ZeroMemoryPlanOptions memoryPlan;
  memoryPlan.contiguousGradients = zero.contiguousGradients;
  pm.addPass(createZeroMemoryPlan(memoryPlan));
  pm.addPass(createZeroVerifyMemoryPlan());
}

void zerosbp::buildLocalPipeline(OpPassManager &pm, const ZeroConfig &config,
                                 llvm::StringRef planFile, GraphKind kind) {
  pm.addPass(createZeroPartition());
  addLocalPasses(pm.nest<func::FuncOp>(), config, kind);
  if (!planFile.empty())
    pm.addPass(createPlanExport(config, planFile));
}

llvm::Error zerosbp::buildCompilePipeline(OpPassManager &pm,
                                          const ZeroConfig &config,
                                          GraphKind kind,
                                          llvm::StringRef planFile,
                                          bool checkpointed) {
  if (llvm::Error error =
          addGlobalPasses(pm.nest<func::FuncOp>(), config, kind, checkpointed))
    return error;
  buildLocalPipeline(pm, config, planFile, kind);
  return llvm::Error::success();
}

std::unique_ptr<Pass> zerosbp::createPlanExport(const ZeroConfig &config,
                                                llvm::StringRef planFile) {
  ZeroExportPlanOptions options;
  options.file = planFile.str();
  // One NVMe directory per plan (the config checks that both agree).
  options.nvmePath = config.zero.offloadOptimizer == OffloadDevice::Nvme
                         ? config.zero.offloadOptimizerNvmePath
                         : config.zero.offloadParamNvmePath;
  options.pinMemory = config.zero.offloadOptimizerPinMemory ||
                      config.zero.offloadParamPinMemory;
  llvm::raw_string_ostream os(options.config);
  os << config.toJson();
  return createZeroExportPlan(options);
}

void zerosbp::registerZeroPipeline() {
  // The options are parsed as a whole by parsePipelineOptions, so the
  // pipeline registers its builder directly rather than an options struct;
  // ZeroPipelineHelp only lists the keys for --help.
  registerPassPipeline(
      "zero-pipeline",
      "The whole global-view ZeRO pipeline; options as "
      "'stage=2 world=4 optimizer=adamw lr=1e-3 shard-min-size=0'",
      [](OpPassManager &pm, StringRef options,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        auto config = parsePipelineOptions(options);
        if (!config)
          return errorHandler("zero-pipeline: " +
                              llvm::toString(config.takeError()));
        if (llvm::Error error = buildGlobalPipeline(pm, *config))
          return errorHandler("zero-pipeline: " +
                              llvm::toString(std::move(error)));
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> describe) {
        ZeroPipelineHelp help;
        describe(help);
      });
}
