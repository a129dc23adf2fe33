//===- Pipeline.cpp - the ZeRO pass pipeline from a config ----------------===//

#include "compiler/pipeline/Pipeline.h"

#include "compiler/config/PipelineOptions.h"
#include "compiler/pipeline/ZeroPipelineHelp.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "passes/Passes.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <mutex>

using namespace mlir;
using namespace zerosbp;

static llvm::Error notYet(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " is not supported by this compiler "
                                        "yet");
}

/// A double as text that reads back to the same value.
static std::string exact(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

llvm::Expected<std::vector<PipelineStep>>
zerosbp::globalPipelineSteps(const ZeroConfig &config, GraphKind kind) {
  if (llvm::Error error = config.verify())
    return std::move(error);
  const PrecisionConfig &precision = config.precision;
  // Levels 1 and 2 both hand broadcast parameters to their consumers, which
  // is what the stage rewrite does; 0 would leave consumers the shards.
  if (config.stage > 0 && config.shardRestoreLevel == 0)
    return notYet("shard_restore_level=0");

  const OptimizerConfig &opt = config.optimizer;
  std::string optimizer = llvm::formatv(
      "optimizer={0} lr={1} beta1={2} beta2={3} eps={4} weight-decay={5}",
      stringifyOptimizerKind(opt.kind), exact(opt.lr), exact(opt.beta1),
      exact(opt.beta2), exact(opt.eps), exact(opt.weightDecay));
  int64_t persistence =
      config.stage >= 3 ? config.zero.stage3ParamPersistenceThreshold : 0;
  std::vector<PipelineStep> steps;
  if (kind == GraphKind::Inference) {
    // The forward alone, at the training graph's precision and layout, so
    // that its parameters are the training graph's (docs/compiler.md).
    steps.push_back({"zero-inference", ""});
    if (precision.precision != Precision::FP32)
      steps.push_back(
          {"zero-amp",
           llvm::formatv("precision={0} loss-scale=1",
                         stringifyPrecision(precision.precision).lower())});
    steps.push_back(
        {"zero-sbp-propagation", llvm::formatv("world={0}", config.world)});
    steps.push_back(
        {"zero-stage",
         llvm::formatv("stage={0} shard-min-size={1} "
                       "persistence-threshold={2}",
                       config.stage, config.shardMinSize, persistence)});
    return steps;
  }
  // The graph's batch is the whole step's: micro-batch x accumulation x
  // world, as DeepSpeed's train_batch_size.
  if (config.gradientAccumulationSteps > 1)
    steps.push_back(
        {"zero-accumulate",
         llvm::formatv("steps={0} world={1}", config.gradientAccumulationSteps,
                       config.world)});
  steps.push_back({"zero-autodiff", ""});
  steps.push_back({"zero-optimizer", optimizer});
  if (precision.precision != Precision::FP32) {
    double scale =
        precision.precision == Precision::FP16 ? precision.lossScale : 1.0;
    std::string options = llvm::formatv(
        "precision={0} loss-scale={1}",
        stringifyPrecision(precision.precision).lower(), exact(scale));
    if (scale == 0)
      options +=
          llvm::formatv(" initial-scale-power={0} hysteresis={1}",
                        precision.initialScalePower, precision.hysteresis);
    steps.push_back({"zero-amp", options});
  }
  std::vector<PipelineStep> rest = {
      {"zero-sbp-propagation", llvm::formatv("world={0}", config.world)},
      {"zero-stage",
       llvm::formatv("stage={0} shard-min-size={1} persistence-threshold={2}",
                     config.stage, config.shardMinSize, persistence)},
  };
  steps.insert(steps.end(), rest.begin(), rest.end());
  // Dynamic fp16 loss scaling: overflow check, unscaling and skipping where
  // the updates read their (reduced) gradients.
  if (precision.precision == Precision::FP16 && precision.lossScale == 0)
    steps.push_back(
        {"zero-loss-scale",
         llvm::formatv("window={0} min-scale={1} hysteresis={2}",
                       precision.lossScaleWindow,
                       exact(static_cast<double>(precision.minLossScale)),
                       precision.hysteresis)});
  if (config.gradientClipping > 0)
    steps.push_back(
        {"zero-grad-clip", "max-norm=" + exact(config.gradientClipping)});
  return steps;
}

llvm::Error zerosbp::buildGlobalPipeline(OpPassManager &pm,
                                         const ZeroConfig &config) {
  // The textual pipeline below names the passes; make sure they are known.
  static std::once_flag registered;
  std::call_once(registered, [] { registerZeroPasses(); });
  auto steps = globalPipelineSteps(config);
  if (!steps)
    return steps.takeError();
  std::string pipeline = "func.func(";
  for (auto [index, step] : llvm::enumerate(*steps)) {
    if (index)
      pipeline += ",";
    pipeline += step.textual();
  }
  pipeline += ")";
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(pipeline, pm, os)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot build the pipeline: " + errors);
  return llvm::Error::success();
}

std::vector<PipelineStep>
zerosbp::localPipelineSteps(const ZeroConfig &config) {
  const ZeroKnobs &zero = config.zero;
  bool stage3 = config.stage >= 3;
  return {
      {"zero-bucketing",
       llvm::formatv("reduce-bucket-size={0} allgather-bucket-size={1} "
                     "prefetch-bucket-size={2}",
                     zero.reduceBucketSize, zero.allgatherBucketSize,
                     zero.stage3PrefetchBucketSize)},
      {"zero-schedule",
       llvm::formatv("overlap-comm={0} prefetch-bucket-size={1} "
                     "max-live-parameters={2} max-reuse-distance={3}",
                     zero.overlapComm ? "true" : "false",
                     zero.stage3PrefetchBucketSize,
                     zero.stage3MaxLiveParameters,
                     stage3 ? zero.stage3MaxReuseDistance : 0)},
      {"zero-memory-plan",
       llvm::formatv("contiguous-gradients={0}",
                     zero.contiguousGradients ? "true" : "false")},
      {"zero-verify-memory-plan", ""},
  };
}

llvm::Error zerosbp::buildLocalPipeline(OpPassManager &pm,
                                        const ZeroConfig &config,
                                        llvm::StringRef planFile) {
  static std::once_flag registered;
  std::call_once(registered, [] { registerZeroPasses(); });
  pm.addPass(createZeroPartition());
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  for (const PipelineStep &step : localPipelineSteps(config)) {
    std::string errors;
    llvm::raw_string_ostream os(errors);
    if (failed(parsePassPipeline(step.textual(), funcPm, os)))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot build the pipeline: " + errors);
  }
  if (!planFile.empty())
    pm.addPass(createPlanExport(config, planFile));
  return llvm::Error::success();
}

std::unique_ptr<Pass> zerosbp::createPlanExport(const ZeroConfig &config,
                                                llvm::StringRef planFile) {
  ZeroExportPlanOptions options;
  options.file = planFile.str();
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
      [](function_ref<void(const detail::PassOptions &)> describe) {
        ZeroPipelineHelp help;
        describe(help);
      });
}
