//===- ConfigChecks.cpp - range and consistency checks --------------------===//

#include "compiler/config/ConfigChecks.h"

#include "compiler/config/ConfigAccess.h"
#include "compiler/config/Diagnostics.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace zerosbp;

namespace {

/// Runs the checks in field order and keeps the first failure. A message
/// is about one field, its subject, and names every field as the subject's
/// layer does.
class Checker {
public:
  explicit Checker(const FieldNaming &naming) : naming(naming) {}

  /// The field the next checks are about.
  void about(ConfigField field) { subject = field; }
  llvm::StringRef name(ConfigField field) const {
    return naming.name(subject, field);
  }

  void integerIn(ConfigField field, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi)
      fail(field, llvm::formatv("expected an integer in [{0}, {1}], got {2}",
                                lo, hi, value));
  }
  void integerAtLeast(ConfigField field, int64_t value, int64_t lo) {
    if (value < lo)
      fail(field,
           llvm::formatv("expected an integer >= {0}, got {1}", lo, value));
  }
  void nonNegative(ConfigField field, double value) {
    if (!std::isfinite(value) || value < 0)
      fail(field, "expected a finite number >= 0, got " + formatNumber(value));
  }
  void probability(ConfigField field, double value) {
    if (!(value >= 0 && value < 1))
      fail(field, "expected a number in [0, 1), got " + formatNumber(value));
  }
  void isTrue(ConfigField field, bool value) {
    if (!value)
      fail(field, "only true is supported, got false");
  }
  void fail(ConfigField field, const llvm::Twine &problem) {
    sink.error(withSource(naming.source(field), name(field) + ": " + problem));
  }
  llvm::Error takeError() { return sink.takeError(); }

private:
  const FieldNaming &naming;
  ConfigField subject = ConfigField::World;
  DiagnosticSink sink;
};

/// a * b * c, or nullopt on overflow.
std::optional<int64_t> product(int64_t a, int64_t b, int64_t c) {
  int64_t ab, abc;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc))
    return std::nullopt;
  return abc;
}

/// "world (8)", or with model axes "world (8) / model-parallel-size (2)":
/// the data-parallel ranks the batch sizes count, as DeepSpeed counts them
/// with model parallelism.
std::string dataParallelText(FieldNamer name, const ZeroConfig &config) {
  std::string text =
      llvm::formatv("{0} ({1})", name(ConfigField::World), config.world);
  if (config.modelParallelSize != 1)
    text += llvm::formatv(" / {0} ({1})", name(ConfigField::ModelParallelSize),
                          config.modelParallelSize)
                .str();
  if (config.pipelineParallelSize != 1)
    text +=
        llvm::formatv(" / {0} ({1})", name(ConfigField::PipelineParallelSize),
                      config.pipelineParallelSize)
            .str();
  return text;
}

/// `check`'s names as a FieldNamer.
auto nameOf(const Checker &check) {
  return [&check](ConfigField field) { return check.name(field); };
}

void checkBatchRule(Checker &check, const ZeroConfig &config) {
  int64_t train = config.trainBatchSize;
  int64_t micro = config.trainMicroBatchSizePerGpu;
  if (train == 0 && micro == 0)
    return;
  if (train == 0 || micro == 0) {
    ConfigField missing = train == 0 ? ConfigField::TrainBatchSize
                                     : ConfigField::TrainMicroBatchSizePerGpu;
    ConfigField given = train == 0 ? ConfigField::TrainMicroBatchSizePerGpu
                                   : ConfigField::TrainBatchSize;
    check.fail(missing, "expected an integer >= 1 when " + check.name(given) +
                            " is set, got 0");
    return;
  }
  int64_t ranks = config.dataParallelSize();
  std::optional<int64_t> expected =
      product(micro, config.gradientAccumulationSteps, ranks);
  if (expected && *expected == train)
    return;
  check.fail(ConfigField::TrainBatchSize,
             llvm::formatv("{0} != {1} ({2}) * {3} ({4}) * {5}{6}", train,
                           check.name(ConfigField::TrainMicroBatchSizePerGpu),
                           micro,
                           check.name(ConfigField::GradientAccumulationSteps),
                           config.gradientAccumulationSteps,
                           dataParallelText(nameOf(check), config),
                           expected ? " = " + std::to_string(*expected)
                                    : std::string(", which overflows")));
}

/// The range check of ConfigOptions.def for one option.
void checkRange(Checker &check, const ConfigOption &option,
                const ZeroConfig &config) {
  ConfigField field = option.field;
  switch (option.check) {
  case OptionCheck::None:
    return;
  case OptionCheck::AtLeast:
    check.integerAtLeast(field, *optionMember<int64_t>(config, field),
                         option.lo);
    return;
  case OptionCheck::In:
    check.integerIn(field, *optionMember<int64_t>(config, field), option.lo,
                    option.hi);
    return;
  case OptionCheck::NonNegative:
    check.nonNegative(field, *optionMember<double>(config, field));
    return;
  case OptionCheck::Probability:
    check.probability(field, *optionMember<double>(config, field));
    return;
  case OptionCheck::True:
    check.isTrue(field, *optionMember<bool>(config, field));
    return;
  }
}

} // namespace

bool zerosbp::optionApplies(const ConfigOption &option,
                            const ZeroConfig &config) {
  switch (option.when) {
  case OptionWhen::NotSgd:
    return config.optimizer.kind != OptimizerKind::SGD;
  case OptionWhen::Fp16:
    return config.precision.precision == Precision::FP16;
  case OptionWhen::Offload:
    return config.zero.offloadOptimizer != OffloadDevice::None;
  case OptionWhen::Nvme:
    return config.zero.offloadOptimizer == OffloadDevice::Nvme;
  case OptionWhen::ParamOffload:
    return config.zero.offloadParam != OffloadDevice::None;
  case OptionWhen::ParamNvme:
    return config.zero.offloadParam == OffloadDevice::Nvme;
  case OptionWhen::Pipelined:
    return config.pipelineParallelSize > 1;
  case OptionWhen::QuantizedWeights:
    return config.zero.quantizedWeights;
  case OptionWhen::Always:
  case OptionWhen::PrintedNotSgd:
  case OptionWhen::NonZero:
  case OptionWhen::NotOne:
    return true;
  }
  llvm_unreachable("unknown OptionWhen");
}

std::string zerosbp::unusedReason(OptionWhen when) {
  switch (when) {
  case OptionWhen::NotSgd:
    return "not used by optimizer=sgd";
  case OptionWhen::Fp16:
    return "only used with precision=fp16";
  case OptionWhen::Offload:
    return "only used with offload-optimizer=cpu or nvme";
  case OptionWhen::Nvme:
    return "only used with offload-optimizer=nvme";
  case OptionWhen::ParamOffload:
    return "only used with offload-param=cpu or nvme";
  case OptionWhen::ParamNvme:
    return "only used with offload-param=nvme";
  case OptionWhen::Pipelined:
    return "only used with pipeline-parallel-size > 1";
  case OptionWhen::QuantizedWeights:
    return "only used with zero-quantized-weights=true";
  default:
    return "used";
  }
}

/// MiCS's and hpZ's groups of `size` ranks tile the world. One rank is one
/// group at any size (Python checks a config before its graph is placed, on
/// one rank).
static void checkGroupDivides(Checker &check, ConfigField field, int64_t size,
                              const ZeroConfig &config) {
  if (config.world > 1 && config.world % size != 0)
    check.fail(field, "expected a divisor of the world size " +
                          std::to_string(config.world) + ", got " +
                          std::to_string(size));
}

llvm::Error zerosbp::verifyConfig(const ZeroConfig &config, FieldNamer name) {
  return verifyConfig(
      config,
      FieldNaming{[&](ConfigField, ConfigField field) { return name(field); },
                  [](ConfigField) { return llvm::StringRef(); }});
}

llvm::Error zerosbp::verifyConfig(const ZeroConfig &config,
                                  const FieldNaming &naming) {
  Checker check(naming);
  auto name = nameOf(check);
  for (const ConfigOption &option : configOptions()) {
    check.about(option.field);
    if (optionApplies(option, config))
      checkRange(check, option, config);
    // The rules that tie two options, right after the second.
    if (option.field == ConfigField::WeightDecay &&
        config.optimizer.kind == OptimizerKind::SGD &&
        config.optimizer.weightDecay != 0)
      check.fail(ConfigField::WeightDecay,
                 "expected 0 with SGD, got " +
                     formatNumber(config.optimizer.weightDecay));
    if (option.field == ConfigField::TrainBatchSize)
      checkBatchRule(check, config);
    if (option.field == ConfigField::ModelParallelSize &&
        config.modelParallelSize > 1 &&
        config.world % config.modelParallelSize != 0)
      check.fail(ConfigField::ModelParallelSize,
                 llvm::formatv("expected a divisor of {0} ({1}), got {2}",
                               name(ConfigField::World), config.world,
                               config.modelParallelSize));
    if (option.field == ConfigField::PipelineParallelSize &&
        config.pipelineParallelSize > 1 &&
        config.world % (config.pipelineParallelSize *
                        std::max<int64_t>(config.modelParallelSize, 1)) !=
            0)
      check.fail(ConfigField::PipelineParallelSize,
                 llvm::formatv("expected {0} ({1}) to divide by it times {2} "
                               "({3}), got {4}",
                               name(ConfigField::World), config.world,
                               name(ConfigField::ModelParallelSize),
                               config.modelParallelSize,
                               config.pipelineParallelSize));
    if (option.field == ConfigField::PipelineSchedule &&
        config.pipelineSchedule != "1f1b" && config.pipelineSchedule != "gpipe")
      check.fail(ConfigField::PipelineSchedule,
                 "expected 1f1b or gpipe, got '" + config.pipelineSchedule +
                     "'");
    if (option.field == ConfigField::VirtualPipelineStages &&
        config.pipelineParallelSize > 1 && config.virtualPipelineStages > 1) {
      if (config.pipelineSchedule != "1f1b")
        check.fail(ConfigField::VirtualPipelineStages,
                   "interleaves the 1f1b schedule, not " +
                       config.pipelineSchedule);
      // Megatron's interleaved order takes micro-batches in groups of P.
      else if (config.gradientAccumulationSteps % config.pipelineParallelSize !=
               0)
        check.fail(ConfigField::VirtualPipelineStages,
                   llvm::formatv("needs {0} ({1}) to be a multiple of {2} "
                                 "({3})",
                                 name(ConfigField::GradientAccumulationSteps),
                                 config.gradientAccumulationSteps,
                                 name(ConfigField::PipelineParallelSize),
                                 config.pipelineParallelSize));
    }
    // Offload moves the stage's optimizer-state partitions: stage 0 has
    // none (DeepSpeed: "ZeRO-Offload requires ZeRO stage >= 1").
    if (option.field == ConfigField::OffloadOptimizer &&
        config.zero.offloadOptimizer != OffloadDevice::None &&
        config.stage == ZeroStage::DataParallel)
      check.fail(ConfigField::OffloadOptimizer,
                 "needs ZeRO stage 1, 2 or 3 (stage 0 keeps whole optimizer "
                 "states on every rank)");
    // A delayed update divides one step's gradient by another step's loss
    // scale, or scales it by another step's clipping factor.
    if (option.field == ConfigField::OffloadOptimizerDelayedUpdate &&
        config.zero.offloadOptimizerDelayedUpdate &&
        config.zero.offloadOptimizer != OffloadDevice::None) {
      if (config.precision.precision == Precision::FP16)
        check.fail(ConfigField::OffloadOptimizerDelayedUpdate,
                   "not with fp16: the loss scale that divides a gradient "
                   "may change before its delayed update");
      else if (config.gradientClipping > 0)
        check.fail(ConfigField::OffloadOptimizerDelayedUpdate,
                   "not with gradient_clipping: the clipping factor is the "
                   "next step's, not the gradient's");
    }
    if (option.field == ConfigField::OffloadParam &&
        config.zero.offloadParam != OffloadDevice::None &&
        config.stage != ZeroStage::Parameters)
      check.fail(ConfigField::OffloadParam,
                 "needs ZeRO stage 3 (below it every rank holds whole "
                 "parameters)");
    if (option.field == ConfigField::MicsShardSize &&
        config.zero.micsShardSize > 0) {
      int64_t size = config.zero.micsShardSize;
      if (config.stage == ZeroStage::DataParallel)
        check.fail(ConfigField::MicsShardSize,
                   "needs ZeRO stage 1, 2 or 3 (stage 0 shards nothing)");
      else
        checkGroupDivides(check, ConfigField::MicsShardSize, size, config);
    }
    if (option.field == ConfigField::HpzPartitionSize &&
        config.zero.hpzPartitionSize > 1) {
      int64_t size = config.zero.hpzPartitionSize;
      if (config.stage != ZeroStage::Parameters)
        check.fail(ConfigField::HpzPartitionSize,
                   "needs ZeRO stage 3 (below it every rank holds whole "
                   "parameters)");
      else if (config.zero.micsShardSize > 0)
        check.fail(ConfigField::HpzPartitionSize,
                   "and mics_shard_size exclude each other");
      else
        checkGroupDivides(check, ConfigField::HpzPartitionSize, size, config);
    }
    // qwZ quantizes the gathers of stage-3 parameter shards split over
    // every rank; the hierarchical layouts gather otherwise.
    if (option.field == ConfigField::QuantizedWeights &&
        config.zero.quantizedWeights) {
      if (config.stage != ZeroStage::Parameters)
        check.fail(ConfigField::QuantizedWeights,
                   "needs ZeRO stage 3 (below it no parameter is gathered)");
      else if (config.zero.micsShardSize > 0 ||
               config.zero.hpzPartitionSize > 1)
        check.fail(ConfigField::QuantizedWeights,
                   "with mics_shard_size or zero_hpz_partition_size is not "
                   "built: qwZ quantizes flat stage-3 gathers only");
      else if (config.modelParallelSize > 1)
        check.fail(ConfigField::QuantizedWeights,
                   "with model_parallel_size > 1 is not built: qwZ quantizes "
                   "parameters split over every rank only");
    }
    if (option.field == ConfigField::OffloadParamNvmePath &&
        config.zero.offloadParam == OffloadDevice::Nvme) {
      if (config.zero.offloadParamNvmePath.empty())
        check.fail(ConfigField::OffloadParamNvmePath,
                   "expected the directory for the NVMe files, got none");
      else if (config.zero.offloadOptimizer == OffloadDevice::Nvme &&
               config.zero.offloadOptimizerNvmePath !=
                   config.zero.offloadParamNvmePath)
        check.fail(ConfigField::OffloadParamNvmePath,
                   "differs from offload_optimizer's nvme_path; a rank has "
                   "one NVMe file");
    }
    if (option.field == ConfigField::OffloadOptimizerNvmePath &&
        config.zero.offloadOptimizer == OffloadDevice::Nvme &&
        config.zero.offloadOptimizerNvmePath.empty())
      check.fail(ConfigField::OffloadOptimizerNvmePath,
                 "expected the directory for the NVMe files, got none");
  }
  return check.takeError();
}

llvm::Error zerosbp::resolveBatchSizes(ZeroConfig &config,
                                       std::optional<int64_t> train,
                                       std::optional<int64_t> micro,
                                       std::optional<int64_t> gas,
                                       FieldNamer name) {
  auto notPositive = [&](ConfigField field, std::optional<int64_t> value) {
    return configError(llvm::formatv("{0}: expected an integer >= 1, got {1}",
                                     name(field), *value));
  };
  if (train && *train < 1)
    return notPositive(ConfigField::TrainBatchSize, train);
  if (micro && *micro < 1)
    return notPositive(ConfigField::TrainMicroBatchSizePerGpu, micro);
  if (gas && *gas < 1)
    return notPositive(ConfigField::GradientAccumulationSteps, gas);

  // Batch sizes count the data-parallel ranks (DeepSpeed with model
  // parallelism).
  int64_t world = config.dataParallelSize();
  // `train` must be a multiple of `by * world`; returns the quotient.
  auto divide = [&](ConfigField byField,
                    int64_t by) -> llvm::Expected<int64_t> {
    std::optional<int64_t> denominator = product(by, world, 1);
    if (denominator && *train % *denominator == 0)
      return *train / *denominator;
    return configError(
        llvm::formatv("{0}: {1} is not divisible by {2} ({3}) * {4}",
                      name(ConfigField::TrainBatchSize), *train, name(byField),
                      by, dataParallelText(name, config)));
  };

  if (train && micro && gas) {
    config.trainBatchSize = *train;
    config.trainMicroBatchSizePerGpu = *micro;
    config.gradientAccumulationSteps = *gas;
    return llvm::Error::success(); // verifyConfig checks the product.
  }
  if (train && micro) {
    llvm::Expected<int64_t> steps =
        divide(ConfigField::TrainMicroBatchSizePerGpu, *micro);
    if (!steps)
      return steps.takeError();
    config.trainBatchSize = *train;
    config.trainMicroBatchSizePerGpu = *micro;
    config.gradientAccumulationSteps = *steps;
    return llvm::Error::success();
  }
  int64_t steps = gas.value_or(1);
  config.gradientAccumulationSteps = steps;
  if (train) {
    llvm::Expected<int64_t> perRank =
        divide(ConfigField::GradientAccumulationSteps, steps);
    if (!perRank)
      return perRank.takeError();
    config.trainBatchSize = *train;
    config.trainMicroBatchSizePerGpu = *perRank;
    return llvm::Error::success();
  }
  if (micro) {
    std::optional<int64_t> total = product(*micro, steps, world);
    if (!total)
      return configError(
          llvm::formatv("{0}: {1} * {2} ({3}) * {4} ({5}) overflows",
                        name(ConfigField::TrainMicroBatchSizePerGpu), *micro,
                        name(ConfigField::GradientAccumulationSteps), steps,
                        name(ConfigField::World), world));
    config.trainBatchSize = *total;
    config.trainMicroBatchSizePerGpu = *micro;
    return llvm::Error::success();
  }
  config.trainBatchSize = 0;
  config.trainMicroBatchSizePerGpu = 0;
  return llvm::Error::success();
}
