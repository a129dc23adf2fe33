//===- ZeroConfig.cpp - the compiler's ZeRO configuration -----------------===//

#include "compiler/config/ZeroConfig.h"

#include "compiler/config/ConfigAccess.h"
#include "compiler/config/ConfigChecks.h"
#include "compiler/config/ConfigField.h"
#include "compiler/config/ConfigLayer.h"
#include "compiler/config/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace zerosbp;

bool OptimizerConfig::operator==(const OptimizerConfig &other) const {
  return true
#define ZERO_OPTIMIZER_OPTION(Field, Type, Member, ...) &&Member == other.Member
#include "compiler/config/ConfigOptions.def"
      ;
}

bool PrecisionConfig::operator==(const PrecisionConfig &other) const {
  return true
#define ZERO_PRECISION_OPTION(Field, Type, Member, ...) &&Member == other.Member
#include "compiler/config/ConfigOptions.def"
      ;
}

bool ZeroKnobs::operator==(const ZeroKnobs &other) const {
  return true
#define ZERO_KNOB_OPTION(Field, Type, Member, ...) &&Member == other.Member
#include "compiler/config/ConfigOptions.def"
      ;
}

bool ZeroConfig::operator==(const ZeroConfig &other) const {
  return optimizer == other.optimizer && precision == other.precision &&
         zero == other.zero
#define ZERO_CONFIG_OPTION(Field, Type, Member, ...) &&Member == other.Member
#include "compiler/config/ConfigOptions.def"
      ;
}

llvm::Error ZeroConfig::verify() const {
  return verifyConfig(*this, optionName);
}

/// Whether `option` is printed for `config` (ConfigOptions.def's When).
static bool isPrinted(const ConfigOption &option, const ZeroConfig &config) {
  switch (option.when) {
  case OptionWhen::PrintedNotSgd:
    return config.optimizer.kind != OptimizerKind::SGD;
  case OptionWhen::NonZero:
    if (const bool *flag = optionMember<bool>(config, option.field))
      return *flag;
    return *optionMember<int64_t>(config, option.field) != 0;
  case OptionWhen::NotOne:
    return *optionMember<int64_t>(config, option.field) != 1;
  default:
    return optionApplies(option, config);
  }
}

/// `config`'s value of a plain (integer, number or bool) `field` as JSON.
static llvm::json::Value optionJson(const ZeroConfig &config,
                                    ConfigField field) {
  if (const int64_t *value = optionMember<int64_t>(config, field))
    return *value;
  if (const ZeroStage *stage = optionMember<ZeroStage>(config, field))
    return stageNumber(*stage);
  if (const double *value = optionMember<double>(config, field))
    return *value;
  if (const OffloadDevice *device = optionMember<OffloadDevice>(config, field))
    return stringifyOffloadDevice(*device);
  if (const std::string *text = optionMember<std::string>(config, field))
    return *text;
  return *optionMember<bool>(config, field);
}

std::string ZeroConfig::str() const {
  std::string result;
  for (const ConfigOption &option : configOptions()) {
    if (!isPrinted(option, *this))
      continue;
    if (!result.empty())
      result += ' ';
    result += (option.key + "=" + fieldText(*this, option.field)).str();
  }
  return result;
}

llvm::json::Value ZeroConfig::toJson() const {
  llvm::json::Object params{{"lr", optimizer.lr}};
  llvm::StringRef type = "SGD";
  if (optimizer.kind != OptimizerKind::SGD) {
    params["betas"] = llvm::json::Array{optimizer.beta1, optimizer.beta2};
    params["eps"] = optimizer.eps;
    params["weight_decay"] = optimizer.weightDecay;
    // DeepSpeed's "Adam" means AdamW unless adam_w_mode is false.
    type = optimizer.kind == OptimizerKind::AdamW ? "AdamW" : "Adam";
    if (optimizer.kind == OptimizerKind::Adam)
      params["adam_w_mode"] = false;
  }

  llvm::json::Object fp16{{"enabled", precision.precision == Precision::FP16}};

  llvm::json::Object offloadOptimizer{{"device", "none"}};
  llvm::json::Object offloadParam{{"device", "none"}};
  llvm::json::Object zeroOptimization;
  // The plain keys under their DeepSpeed paths (ConfigOptions.def); the
  // offload section's members only when it is in use.
  for (const ConfigOption &option : configOptions()) {
    llvm::StringRef path = option.deepSpeed;
    if (path.consume_front("zero_optimization.offload_optimizer.")) {
      if (isPrinted(option, *this))
        offloadOptimizer[path] = optionJson(*this, option.field);
    } else if (path.consume_front("zero_optimization.offload_param.")) {
      if (isPrinted(option, *this))
        offloadParam[path] = optionJson(*this, option.field);
    } else if (path.consume_front("zero_optimization.")) {
      // ZeroSBP's own keys only where they apply: the JSON stays a
      // DeepSpeed config otherwise.
      if (option.when != OptionWhen::QuantizedWeights ||
          optionApplies(option, *this))
        zeroOptimization[path] = optionJson(*this, option.field);
    } else if (precision.precision == Precision::FP16 &&
               option.type != OptionType::Precision &&
               path.consume_front("fp16."))
      fp16[path] = optionJson(*this, option.field);
  }

  zeroOptimization["offload_optimizer"] = std::move(offloadOptimizer);
  zeroOptimization["offload_param"] = std::move(offloadParam);
  llvm::json::Object result{
      {"zerosbp", llvm::json::Object{{"world", world},
                                     {"shard_min_size", shardMinSize},
                                     {"shard_restore_level", shardRestoreLevel},
                                     {"fuse_attention", fuseAttention},
                                     {"fuse_epilogues", fuseEpilogues},
                                     {"fuse_accumulation", fuseAccumulation},
                                     {"recompute_cheap", recomputeCheap}}},
      {"optimizer",
       llvm::json::Object{{"type", type}, {"params", std::move(params)}}},
      {"fp16", std::move(fp16)},
      {"bf16",
       llvm::json::Object{{"enabled", precision.precision == Precision::BF16}}},
      {"gradient_accumulation_steps", gradientAccumulationSteps},
      {"gradient_clipping", gradientClipping},
      {"zero_optimization", std::move(zeroOptimization)},
  };
  if (modelParallelSize != 1)
    result.getObject("zerosbp")->try_emplace("model_parallel_size",
                                             modelParallelSize);
  // DeepSpeed sets pipeline stages in code (PipelineModule), not in its
  // config: they are ZeroSBP's own keys.
  if (pipelineParallelSize != 1) {
    result.getObject("zerosbp")->try_emplace("pipeline_parallel_size",
                                             pipelineParallelSize);
    result.getObject("zerosbp")->try_emplace("pipeline_schedule",
                                             pipelineSchedule);
    if (virtualPipelineStages != 1)
      result.getObject("zerosbp")->try_emplace(
          "virtual_pipeline_model_parallel_size", virtualPipelineStages);
    if (microBatchLoop)
      result.getObject("zerosbp")->try_emplace("micro_batch_loop", true);
  }
  if (trainMicroBatchSizePerGpu != 0)
    result["train_micro_batch_size_per_gpu"] = trainMicroBatchSizePerGpu;
  if (trainBatchSize != 0)
    result["train_batch_size"] = trainBatchSize;
  return result;
}
