//===- DeepSpeedConfig.cpp - ZeroConfig from a DeepSpeed JSON -------------===//

#include "compiler/config/DeepSpeedConfig.h"

#include "compiler/config/ConfigAccess.h"
#include "compiler/config/ConfigChecks.h"
#include "compiler/config/Diagnostics.h"
#include "compiler/config/JsonReader.h"
#include "compiler/config/JsonText.h"
#include "compiler/config/ResolveConfig.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

using namespace zerosbp;

namespace {

/// The options of ConfigOptions.def read as they are from `section`
/// (`zero_optimization`, `fp16`): the key of each, in table order.
llvm::SmallVector<std::pair<ConfigField, llvm::StringRef>>
plainKeysOf(llvm::StringRef section) {
  llvm::SmallVector<std::pair<ConfigField, llvm::StringRef>> keys;
  for (const ConfigOption &option : configOptions()) {
    llvm::StringRef path = option.deepSpeed;
    bool plain = option.type == OptionType::Integer ||
                 option.type == OptionType::Number ||
                 option.type == OptionType::Bool;
    if (plain && path.consume_front(section) && path.consume_front(".") &&
        !path.contains('.'))
      keys.emplace_back(option.field, path);
  }
  return keys;
}

/// Reads the plain options of `section` that it states into `layer`, in
/// table order.
void readPlainKeys(JsonObjectReader &reader, llvm::StringRef section,
                   ConfigLayer &layer) {
  ZeroConfig &config = layer.mutableValues();
  for (auto [field, key] : plainKeysOf(section)) {
    if (!reader.get(key))
      continue;
    layer.markGiven(field);
    if (int64_t *value = optionMember<int64_t>(config, field))
      reader.readInteger(key, *value);
    else if (double *value = optionMember<double>(config, field))
      reader.readNumber(key, *value);
    else if (bool *value = optionMember<bool>(config, field))
      reader.readBool(key, *value);
  }
}

/// `first`, the plain keys of `section`, then `rest`: what checkKeys knows.
llvm::SmallVector<llvm::StringRef>
knownKeys(llvm::ArrayRef<llvm::StringRef> first, llvm::StringRef section,
          llvm::ArrayRef<llvm::StringRef> rest) {
  llvm::SmallVector<llvm::StringRef> keys(first.begin(), first.end());
  for (auto [field, key] : plainKeysOf(section))
    keys.push_back(key);
  keys.append(rest.begin(), rest.end());
  return keys;
}

const llvm::StringRef kTopLevelKeys[] = {
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "optimizer",
    "fp16",
    "bf16",
    "zero_optimization",
    "activation_checkpointing",
    // No effect on the compiled graph.
    "steps_per_print",
    "wall_clock_breakdown",
    "zero_allow_untested_optimizer",
    // Accepted at DeepSpeed's default only.
    "prescale_gradients",
    "gradient_predivide_factor",
    "sparse_gradients",
    "communication_data_type",
    // Refused.
    "scheduler",
    "amp",
    "bfloat16",
};

/// zero_optimization's keys besides ConfigOptions.def's.
const llvm::StringRef kOtherZeroKeys[] = {
    "offload_optimizer",
    "offload_param",
    // Accepted at DeepSpeed's default only.
    "allgather_partitions",
    "load_from_fp32_weights",
    "elastic_checkpoint",
    "round_robin_gradients",
    "ignore_unused_parameters",
    "use_multi_rank_bucket_allreduce",
    "memory_efficient_linear",
    "zero_quantized_nontrainable_weights",
    "zero_quantized_gradients",
    "stage3_gather_16bit_weights_on_model_save",
    "cpu_offload",
    "cpu_offload_param",
};

enum class MemberKind { Bool, Integer, Number, PathOrNull };

struct MemberSpec {
  llvm::StringRef key;
  MemberKind kind;
};

/// DeepSpeedZeroOffloadOptimizerConfig (offload_config.py), less `device`.
const MemberSpec kOffloadOptimizerMembers[] = {
    {"nvme_path", MemberKind::PathOrNull},
    {"buffer_count", MemberKind::Integer},
    {"pin_memory", MemberKind::Bool},
    {"pipeline_read", MemberKind::Bool},
    {"pipeline_write", MemberKind::Bool},
    {"fast_init", MemberKind::Bool},
    {"ratio", MemberKind::Number},
    {"super_offload", MemberKind::Bool},
    {"convert_grad_on_cpu", MemberKind::Bool},
    {"cpuadam_cores_perc", MemberKind::Number},
    // Not DeepSpeed's: ZeRO-Offload's one-step delayed update (DPU).
    {"delayed_param_update", MemberKind::Bool},
};

/// DeepSpeedZeroOffloadParamConfig (offload_config.py), less `device`.
const MemberSpec kOffloadParamMembers[] = {
    {"nvme_path", MemberKind::PathOrNull},
    {"buffer_count", MemberKind::Integer},
    {"buffer_size", MemberKind::Integer},
    {"max_in_cpu", MemberKind::Integer},
    {"pin_memory", MemberKind::Bool},
};

const char *const kOptimizerTypes = "\"Adam\", \"AdamW\" or \"SGD\"";

class DeepSpeedParser {
public:
  explicit DeepSpeedParser(llvm::StringRef source)
      : layer(LayerKind::Config, source.str(), deepSpeedName),
        config(layer.mutableValues()) {}

  llvm::Expected<ConfigLayer> parse(const llvm::json::Object &root);

private:
  void readZeroOptimization(JsonObjectReader &root);
  void readOffload(JsonObjectReader &zero, llvm::StringRef key,
                   llvm::ArrayRef<MemberSpec> members);
  void readActivationCheckpointing(JsonObjectReader &root);
  void readOptimizer(JsonObjectReader &root);
  void readAdamParams(JsonObjectReader &params, bool typeIsAdamW);
  void readSgdParams(JsonObjectReader &params);
  void readBetas(JsonObjectReader &params);
  void readPrecision(JsonObjectReader &root);
  void readBatchSizes(JsonObjectReader &root);
  /// Reads the number at `key` into `field` if `reader` states it.
  void readGivenNumber(JsonObjectReader &reader, llvm::StringRef key,
                       ConfigField field);

  ConfigLayer layer;
  ZeroConfig &config;
  DiagnosticSink sink;
};

void DeepSpeedParser::readGivenNumber(JsonObjectReader &reader,
                                      llvm::StringRef key, ConfigField field) {
  if (!reader.get(key))
    return;
  reader.readNumber(key, *optionMember<double>(config, field));
  layer.markGiven(field);
}

llvm::Expected<ConfigLayer>
DeepSpeedParser::parse(const llvm::json::Object &root) {
  JsonObjectReader top(root, "", sink);
  top.checkKeys(kTopLevelKeys);
  top.reject("scheduler", "learning-rate schedulers are not supported (the "
                          "learning rate stays optimizer.params.lr)");
  top.reject("amp", "NVIDIA Apex AMP is not supported; use fp16 or bf16");
  top.reject("bfloat16", "this old spelling is not supported; write bf16");
  top.requireDefault("prescale_gradients", false);
  top.requireDefault("gradient_predivide_factor", 1.0);
  top.requireDefault("sparse_gradients", false);
  top.requireDefault("communication_data_type", nullptr);

  readZeroOptimization(top);
  readActivationCheckpointing(top);
  readOptimizer(top);
  readPrecision(top);
  readBatchSizes(top);
  readGivenNumber(top, "gradient_clipping", ConfigField::GradientClipping);

  std::optional<int64_t> stepsPerPrint;
  std::optional<bool> flag;
  top.readInteger("steps_per_print", stepsPerPrint);
  top.readBool("wall_clock_breakdown", flag);
  top.readBool("zero_allow_untested_optimizer", flag);

  if (sink.failed())
    return sink.takeError();
  return std::move(layer);
}

void DeepSpeedParser::readZeroOptimization(JsonObjectReader &root) {
  const llvm::json::Object *object = root.readObject("zero_optimization");
  if (!object)
    return;
  JsonObjectReader zero(*object, "zero_optimization", sink);
  zero.checkKeys(knownKeys({"stage"}, "zero_optimization", kOtherZeroKeys));

  std::optional<int64_t> stage;
  zero.readInteger("stage", stage);
  if (stage && !sink.failed()) {
    if (llvm::Expected<ZeroStage> known =
            stageOf(*stage, deepSpeedName(ConfigField::Stage)))
      layer.give(ConfigField::Stage, *known);
    else
      sink.take(known.takeError());
  }
  readPlainKeys(zero, "zero_optimization", layer);

  readOffload(zero, "offload_optimizer", kOffloadOptimizerMembers);
  readOffload(zero, "offload_param", kOffloadParamMembers);

  // DeepSpeedZeroConfig's defaults.
  zero.requireDefault("allgather_partitions", true);
  zero.requireDefault("load_from_fp32_weights", true);
  zero.requireDefault("elastic_checkpoint", false);
  zero.requireDefault("round_robin_gradients", false);
  zero.requireDefault("ignore_unused_parameters", true);
  zero.requireDefault("use_multi_rank_bucket_allreduce", true);
  zero.requireDefault("memory_efficient_linear", true);
  zero.requireDefault("zero_quantized_nontrainable_weights", false);
  zero.requireDefault("zero_quantized_gradients", false);
  zero.requireDefault("stage3_gather_16bit_weights_on_model_save", false);
  // Deprecated spellings of offload_optimizer / offload_param to "cpu".
  zero.requireDefault("cpu_offload", false);
  zero.requireDefault("cpu_offload_param", false);
}

void DeepSpeedParser::readOffload(JsonObjectReader &zero, llvm::StringRef key,
                                  llvm::ArrayRef<MemberSpec> members) {
  const llvm::json::Object *object = zero.readObject(key, /*allowNull=*/true);
  if (!object)
    return;
  JsonObjectReader offload(*object, zero.pathOf(key), sink);
  llvm::SmallVector<llvm::StringRef> known = {"device"};
  for (const MemberSpec &member : members)
    known.push_back(member.key);
  offload.checkKeys(known);

  std::optional<std::string> device;
  offload.readString("device", device);
  std::optional<OffloadDevice> kind =
      device ? symbolizeOffloadDevice(*device) : OffloadDevice::None;
  if (device && (!kind || *device != stringifyOffloadDevice(*kind)))
    offload.typeError("device", "\"none\", \"cpu\" or \"nvme\"");
  bool optimizer = key == "offload_optimizer";
  // With device "none" the section gives nothing; the NVMe members only
  // with "nvme".
  bool offloaded = kind && *kind != OffloadDevice::None && !sink.failed();
  bool nvme = offloaded && *kind == OffloadDevice::Nvme;
  auto givePath = [&](ConfigField field) {
    if (const llvm::json::Value *path = offload.get("nvme_path"))
      if (std::optional<llvm::StringRef> text = path->getAsString())
        layer.give(field, text->str());
  };
  auto giveBool = [&](llvm::StringRef member, ConfigField field) {
    std::optional<bool> value;
    offload.readBool(member, value);
    if (value)
      layer.give(field, *value);
  };
  if (!optimizer && offloaded) {
    layer.give(ConfigField::OffloadParam, *kind);
    if (nvme)
      givePath(ConfigField::OffloadParamNvmePath);
    giveBool("pin_memory", ConfigField::OffloadParamPinMemory);
  }
  if (optimizer && offloaded) {
    layer.give(ConfigField::OffloadOptimizer, *kind);
    if (nvme) {
      givePath(ConfigField::OffloadOptimizerNvmePath);
      std::optional<int64_t> buffers;
      offload.readInteger("buffer_count", buffers);
      if (buffers)
        layer.give(ConfigField::OffloadOptimizerBufferCount, *buffers);
    }
    giveBool("pin_memory", ConfigField::OffloadOptimizerPinMemory);
    giveBool("delayed_param_update",
             ConfigField::OffloadOptimizerDelayedUpdate);
    // A part of the states on the device (ratio < 1) and SuperOffload's
    // GPU-side Adam are not implemented; the other members only tune
    // DeepSpeed's swapper, whose work the schedule does here.
    double ratio = 1.0;
    offload.readNumber("ratio", ratio);
    if (ratio != 1.0 && !sink.failed())
      offload.error("ratio", "only 1 is supported (every optimizer state "
                             "offloaded), got " +
                                 formatNumber(ratio));
    bool superOffload = false;
    offload.readBool("super_offload", superOffload);
    if (superOffload && !sink.failed())
      offload.error("super_offload", "true is not supported");
  }

  // With device "none" the other members have no effect, in DeepSpeed as
  // here; they are still type-checked.
  for (const MemberSpec &member : members) {
    switch (member.kind) {
    case MemberKind::Bool: {
      std::optional<bool> value;
      offload.readBool(member.key, value);
      break;
    }
    case MemberKind::Integer: {
      std::optional<int64_t> value;
      offload.readInteger(member.key, value);
      break;
    }
    case MemberKind::Number: {
      double value = 0;
      offload.readNumber(member.key, value);
      break;
    }
    case MemberKind::PathOrNull: {
      const llvm::json::Value *value = offload.get(member.key);
      if (value && !value->getAsNull() && !value->getAsString())
        offload.typeError(member.key, "a path or null");
      break;
    }
    }
  }
}

/// DeepSpeed's `activation_checkpointing` configures how its runtime keeps
/// the checkpoints that the model code asks for; here the segments come
/// from the model (zs.checkpoint, --checkpoint-activations) and zero-remat
/// (docs/design.md#activation-checkpointing).
void DeepSpeedParser::readActivationCheckpointing(JsonObjectReader &root) {
  const llvm::json::Object *object =
      root.readObject("activation_checkpointing");
  if (!object)
    return;
  JsonObjectReader section(*object, "activation_checkpointing", sink);
  section.checkKeys({"partition_activations", "cpu_checkpointing",
                     "contiguous_memory_optimization", "number_checkpoints",
                     "synchronize_checkpoint_boundary", "profile"});
  auto refuseTrue = [&](llvm::StringRef key, llvm::StringRef reason) {
    bool value = false;
    section.readBool(key, value);
    if (value && !sink.failed())
      section.error(key, reason);
  };
  refuseTrue("partition_activations",
             "true is not supported: checkpoints are split across "
             "model-parallel ranks, which is not built (each model rank keeps "
             "its checkpoints whole)");
  refuseTrue("cpu_checkpointing",
             "true is not supported: checkpoints stay in device memory "
             "(offload is not implemented)");
  // Accepted: the memory plan already lays every checkpoint out in the
  // rank's one arena, the number of checkpoints is the graph's, and the
  // streams order each recomputation after what it reads.
  bool flag = false;
  section.readBool("contiguous_memory_optimization", flag);
  section.readBool("synchronize_checkpoint_boundary", flag);
  section.readBool("profile", flag);
  const llvm::json::Value *count = section.get("number_checkpoints");
  if (count && !count->getAsNull()) {
    std::optional<int64_t> value;
    section.readInteger("number_checkpoints", value);
    if (value && *value < 1 && !sink.failed())
      section.error("number_checkpoints", "expected an integer >= 1 or "
                                          "null, got " +
                                              std::to_string(*value));
  }
}

void DeepSpeedParser::readOptimizer(JsonObjectReader &root) {
  const llvm::json::Object *object = root.readObject("optimizer");
  if (!object)
    return;
  JsonObjectReader optimizer(*object, "optimizer", sink);
  optimizer.checkKeys({"type", "params", "legacy_fusion"});
  optimizer.requireDefault("legacy_fusion", false);

  std::optional<std::string> type;
  optimizer.readString("type", type);
  if (sink.failed())
    return;
  if (!type) {
    optimizer.error("type",
                    llvm::Twine("missing; expected ") + kOptimizerTypes);
    return;
  }
  std::optional<OptimizerKind> kind = symbolizeOptimizerKind(*type);
  if (!kind) {
    optimizer.typeError("type", kOptimizerTypes);
    return;
  }

  const llvm::json::Object *paramsObject =
      optimizer.readObject("params", /*allowNull=*/true);
  llvm::json::Object none;
  JsonObjectReader params(paramsObject ? *paramsObject : none,
                          "optimizer.params", sink);
  if (*kind == OptimizerKind::SGD)
    readSgdParams(params);
  else
    readAdamParams(params, *kind == OptimizerKind::AdamW);
}

void DeepSpeedParser::readAdamParams(JsonObjectReader &params,
                                     bool typeIsAdamW) {
  params.checkKeys({"lr", "betas", "eps", "weight_decay", "adam_w_mode",
                    "torch_adam", "bias_correction", "amsgrad",
                    "max_grad_norm"});
  params.reject("max_grad_norm", "not supported as an optimizer parameter "
                                 "(as in DeepSpeed); use gradient_clipping");
  params.requireDefault("bias_correction", true);
  params.requireDefault("amsgrad", false);

  OptimizerConfig &optimizer = config.optimizer;
  readGivenNumber(params, "lr", ConfigField::Lr);
  readBetas(params);
  readGivenNumber(params, "eps", ConfigField::Eps);

  std::optional<bool> adamWMode, torchAdam;
  params.readBool("adam_w_mode", adamWMode);
  params.readBool("torch_adam", torchAdam);
  if (typeIsAdamW && adamWMode == false)
    params.error("adam_w_mode", "false contradicts optimizer.type \"AdamW\"");
  // DeepSpeedEngine._configure_basic_optimizer: "Adam" is AdamW unless
  // adam_w_mode is false.
  bool decoupled = typeIsAdamW || adamWMode.value_or(true);
  layer.give(ConfigField::Optimizer,
             decoupled ? OptimizerKind::AdamW : OptimizerKind::Adam);
  // torch_adam builds torch.optim.AdamW, whose weight_decay defaults to
  // 0.01; FusedAdam's and torch.optim.Adam's default to 0.
  layer.give(ConfigField::WeightDecay,
             decoupled && torchAdam.value_or(false) ? 0.01 : 0.0);
  params.readNumber("weight_decay", optimizer.weightDecay);
}

void DeepSpeedParser::readSgdParams(JsonObjectReader &params) {
  params.checkKeys({"lr", "momentum", "dampening", "weight_decay", "nesterov",
                    "max_grad_norm"});
  params.reject("max_grad_norm", "not supported as an optimizer parameter "
                                 "(as in DeepSpeed); use gradient_clipping");
  // torch.optim.SGD's defaults; nn.sgd is plain `p - lr * g`.
  params.requireDefault("momentum", 0);
  params.requireDefault("dampening", 0);
  params.requireDefault("nesterov", false);
  layer.give(ConfigField::Optimizer, OptimizerKind::SGD);
  readGivenNumber(params, "lr", ConfigField::Lr);
  readGivenNumber(params, "weight_decay", ConfigField::WeightDecay);
}

void DeepSpeedParser::readBetas(JsonObjectReader &params) {
  const llvm::json::Value *value = params.get("betas");
  if (!value || sink.failed())
    return;
  const llvm::json::Array *betas = value->getAsArray();
  if (!betas || betas->size() != 2 || !(*betas)[0].getAsNumber() ||
      !(*betas)[1].getAsNumber()) {
    params.typeError("betas", "an array of two numbers");
    return;
  }
  layer.give(ConfigField::Beta1, *(*betas)[0].getAsNumber());
  layer.give(ConfigField::Beta2, *(*betas)[1].getAsNumber());
}

void DeepSpeedParser::readPrecision(JsonObjectReader &root) {
  bool fp16Enabled = false, bf16Enabled = false;
  // The fp16 keys apply only when it is enabled: read them aside.
  ConfigLayer fp16(LayerKind::Config, "", deepSpeedName);
  if (const llvm::json::Object *object = root.readObject("fp16")) {
    JsonObjectReader reader(*object, "fp16", sink);
    reader.checkKeys(knownKeys({"enabled"}, "fp16",
                               {"consecutive_hysteresis", "auto_cast",
                                "fp16_master_weights_and_grads"}));
    reader.readBool("enabled", fp16Enabled);
    readPlainKeys(reader, "fp16", fp16);
    // DeepSpeedFP16Config's defaults.
    reader.requireDefault("consecutive_hysteresis", false);
    reader.requireDefault("auto_cast", false);
    reader.requireDefault("fp16_master_weights_and_grads", false);
  }
  if (const llvm::json::Object *object = root.readObject("bf16")) {
    JsonObjectReader reader(*object, "bf16", sink);
    reader.checkKeys({"enabled", "immediate_grad_update", "check_grad_overflow",
                      "bf16_master_weights_and_grads",
                      "bf16_optimizer_states"});
    reader.readBool("enabled", bf16Enabled);
    // DeepSpeedBF16Config's defaults.
    reader.requireDefault("immediate_grad_update", false);
    reader.requireDefault("check_grad_overflow", false);
    reader.requireDefault("bf16_master_weights_and_grads", false);
    reader.requireDefault("bf16_optimizer_states", false);
  }
  if (sink.failed())
    return;
  if (fp16Enabled && bf16Enabled) {
    sink.error("fp16.enabled and bf16.enabled are both true; enable at most "
               "one");
    return;
  }
  if (fp16Enabled) {
    layer.give(ConfigField::Precision, Precision::FP16);
    for (const ConfigOption &option : configOptions())
      if (option.group == OptionGroup::Precision && fp16.gives(option.field)) {
        copyField(config, fp16.values(), option.field);
        layer.markGiven(option.field);
      }
  } else if (bf16Enabled) {
    layer.give(ConfigField::Precision, Precision::BF16);
  }
}

void DeepSpeedParser::readBatchSizes(JsonObjectReader &root) {
  for (ConfigField field :
       {ConfigField::TrainBatchSize, ConfigField::TrainMicroBatchSizePerGpu,
        ConfigField::GradientAccumulationSteps}) {
    std::optional<int64_t> value;
    root.readInteger(deepSpeedName(field), value);
    if (value)
      layer.give(field, *value);
  }
}

} // namespace

llvm::Expected<ConfigLayer>
zerosbp::readDeepSpeedConfig(llvm::StringRef json, llvm::StringRef source) {
  llvm::Expected<llvm::json::Value> root = parseJsonStrictly(json);
  if (!root)
    return root.takeError();
  const llvm::json::Object *object = root->getAsObject();
  if (!object)
    return configError("expected a JSON object at the top level, got " +
                       describeJson(*root));
  return DeepSpeedParser(source).parse(*object);
}

llvm::Expected<ZeroConfig>
zerosbp::parseDeepSpeedConfig(llvm::StringRef json, int64_t world,
                              int64_t modelParallelSize,
                              int64_t pipelineParallelSize) {
  if (world < 1)
    return configError(
        llvm::formatv("world: expected an integer >= 1, got {0}", world));
  if (modelParallelSize < 1 || world % modelParallelSize != 0)
    return configError(llvm::formatv(
        "model_parallel_size: expected a divisor of world ({0}), got {1}",
        world, modelParallelSize));
  if (pipelineParallelSize < 1 ||
      world % (modelParallelSize * pipelineParallelSize) != 0)
    return configError(llvm::formatv(
        "pipeline_parallel_size: expected world ({0}) to divide by it times "
        "model_parallel_size ({1}), got {2}",
        world, modelParallelSize, pipelineParallelSize));
  llvm::Expected<ConfigLayer> config = readDeepSpeedConfig(json, "");
  if (!config)
    return config.takeError();
  ConfigLayer ranks(LayerKind::Setting, "", deepSpeedName);
  ranks.give(ConfigField::World, world);
  ranks.give(ConfigField::ModelParallelSize, modelParallelSize);
  ranks.give(ConfigField::PipelineParallelSize, pipelineParallelSize);
  return resolveConfig({*config, ranks});
}
