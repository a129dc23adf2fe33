//===- zero_config_test.cc - ZeroConfig and its three front ends ----------===//

#include "compiler/config/ConfigAccess.h"
#include "compiler/config/DeepSpeedConfig.h"
#include "compiler/config/EnableZero.h"
#include "compiler/config/PipelineOptions.h"
#include "compiler/config/ZeroConfig.h"

#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace zerosbp;

namespace {

/// The error of `result`, or "<no error>".
std::string errorOf(llvm::Expected<ZeroConfig> result) {
  if (result)
    return "<no error>";
  return llvm::toString(result.takeError());
}

/// The config of `result`; a failure (with the message) when it is an error.
ZeroConfig configOf(llvm::Expected<ZeroConfig> result) {
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return ZeroConfig();
  }
  return *result;
}

std::string deepSpeedError(llvm::StringRef json, int64_t world = 4) {
  return errorOf(parseDeepSpeedConfig(json, world));
}

std::string optionsError(llvm::StringRef options) {
  return errorOf(parsePipelineOptions(options));
}

/// The DeepSpeed Megatron-LM GPT-2 example's ds_zero2_config.json
/// (DeepSpeedExamples, Megatron-LM/scripts) with the ZeRO stage-2 knobs of
/// DeepSpeed's ZeRO tutorial (docs/_tutorials/zero.md); its
/// activation_checkpointing section is left out (not supported).
constexpr const char *kGpt2Config = R"json({
  "train_batch_size": 16,
  "gradient_accumulation_steps": 1,
  "steps_per_print": 1,
  "zero_optimization": {
    "stage": 2,
    "allgather_partitions": true,
    "contiguous_gradients": true,
    "overlap_comm": true,
    "reduce_scatter": true,
    "reduce_bucket_size": 5e8,
    "allgather_bucket_size": 5e8
  },
  "optimizer": {
    "type": "Adam",
    "params": {
      "lr": 0.00015
    }
  },
  "gradient_clipping": 1.0,
  "fp16": {
    "enabled": true,
    "loss_scale": 0,
    "loss_scale_window": 1000,
    "hysteresis": 2,
    "min_loss_scale": 1
  },
  "wall_clock_breakdown": false
})json";

//===----------------------------------------------------------------------===//
// DeepSpeed: a full config and the defaults
//===----------------------------------------------------------------------===//

TEST(DeepSpeedConfig, Gpt2TutorialConfig) {
  ZeroConfig config = configOf(parseDeepSpeedConfig(kGpt2Config, 4));
  EXPECT_EQ(config.world, 4);
  EXPECT_EQ(config.stage, ZeroStage::Gradients);
  EXPECT_EQ(config.shardMinSize, 0);
  EXPECT_EQ(config.shardRestoreLevel, 1);
  // "Adam" with adam_w_mode left at its default (true) is AdamW.
  EXPECT_EQ(config.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_EQ(config.optimizer.lr, 0.00015);
  EXPECT_EQ(config.optimizer.beta1, 0.9);
  EXPECT_EQ(config.optimizer.beta2, 0.999);
  EXPECT_EQ(config.optimizer.eps, 1e-8);
  EXPECT_EQ(config.optimizer.weightDecay, 0.0);
  EXPECT_EQ(config.precision.precision, Precision::FP16);
  EXPECT_EQ(config.precision.lossScale, 0.0);
  EXPECT_EQ(config.precision.initialScalePower, 16);
  EXPECT_EQ(config.precision.lossScaleWindow, 1000);
  EXPECT_EQ(config.precision.hysteresis, 2);
  EXPECT_EQ(config.precision.minLossScale, 1);
  EXPECT_EQ(config.gradientClipping, 1.0);
  EXPECT_EQ(config.trainBatchSize, 16);
  EXPECT_EQ(config.trainMicroBatchSizePerGpu, 4);
  EXPECT_EQ(config.gradientAccumulationSteps, 1);
  EXPECT_EQ(config.zero.reduceBucketSize, 500000000);
  EXPECT_EQ(config.zero.allgatherBucketSize, 500000000);
  EXPECT_TRUE(config.zero.overlapComm);
  EXPECT_TRUE(config.zero.contiguousGradients);
  EXPECT_TRUE(config.zero.reduceScatter);
  EXPECT_FALSE(llvm::errorToBool(config.verify()));
  EXPECT_EQ(config.str(),
            "world=4 stage=2 shard-min-size=0 shard-restore-level=1 "
            "optimizer=adamw lr=0.00015 beta1=0.9 beta2=0.999 eps=1e-08 "
            "weight-decay=0 precision=fp16 loss-scale=0 "
            "initial-scale-power=16 loss-scale-window=1000 hysteresis=2 "
            "min-loss-scale=1 gradient-accumulation-steps=1 "
            "gradient-clipping=1 train-micro-batch-size-per-gpu=4 "
            "train-batch-size=16 fuse-attention=true fuse-epilogues=true "
            "fuse-accumulation=true recompute-cheap=true "
            "reduce-bucket-size=500000000 "
            "allgather-bucket-size=500000000 overlap-comm=true "
            "contiguous-gradients=true reduce-scatter=true "
            "stage3-prefetch-bucket-size=50000000 "
            "stage3-param-persistence-threshold=100000 "
            "stage3-max-live-parameters=1000000000 "
            "stage3-max-reuse-distance=1000000000 sub-group-size=1000000000");
}

TEST(DeepSpeedConfig, EveryDefault) {
  ZeroConfig config = configOf(parseDeepSpeedConfig("{}", 8));
  ZeroConfig expected;
  expected.world = 8;
  EXPECT_EQ(config, expected);

  EXPECT_EQ(config.world, 8);
  EXPECT_EQ(config.stage, ZeroStage::DataParallel);
  EXPECT_EQ(config.shardMinSize, 0);
  EXPECT_EQ(config.shardRestoreLevel, 1);
  EXPECT_EQ(config.optimizer.kind, OptimizerKind::Adam);
  EXPECT_EQ(config.optimizer.lr, 1e-3);
  EXPECT_EQ(config.optimizer.beta1, 0.9);
  EXPECT_EQ(config.optimizer.beta2, 0.999);
  EXPECT_EQ(config.optimizer.eps, 1e-8);
  EXPECT_EQ(config.optimizer.weightDecay, 0.0);
  EXPECT_EQ(config.precision.precision, Precision::FP32);
  EXPECT_EQ(config.precision.lossScale, 0.0);
  EXPECT_EQ(config.precision.initialScalePower, 16);
  EXPECT_EQ(config.precision.lossScaleWindow, 1000);
  EXPECT_EQ(config.precision.hysteresis, 2);
  EXPECT_EQ(config.precision.minLossScale, 1);
  EXPECT_EQ(config.gradientAccumulationSteps, 1);
  EXPECT_EQ(config.gradientClipping, 0.0);
  EXPECT_EQ(config.trainMicroBatchSizePerGpu, 0);
  EXPECT_EQ(config.trainBatchSize, 0);
  EXPECT_EQ(config.zero.reduceBucketSize, 500000000);
  EXPECT_EQ(config.zero.allgatherBucketSize, 500000000);
  EXPECT_FALSE(config.zero.overlapComm);
  EXPECT_TRUE(config.zero.contiguousGradients);
  EXPECT_TRUE(config.zero.reduceScatter);
  EXPECT_EQ(config.zero.stage3PrefetchBucketSize, 50000000);
  EXPECT_EQ(config.zero.stage3ParamPersistenceThreshold, 100000);
  EXPECT_EQ(config.zero.stage3MaxLiveParameters, 1000000000);
  EXPECT_EQ(config.zero.stage3MaxReuseDistance, 1000000000);
  EXPECT_EQ(config.zero.subGroupSize, 1000000000);
}

TEST(DeepSpeedConfig, OverlapCommDefaultsOnForStage3Only) {
  for (int stage = 0; stage <= 3; ++stage) {
    std::string json =
        R"({"zero_optimization": {"stage": )" + std::to_string(stage) + "}}";
    EXPECT_EQ(configOf(parseDeepSpeedConfig(json, 2)).zero.overlapComm,
              stage == 3)
        << json;
  }
  EXPECT_FALSE(configOf(parseDeepSpeedConfig(
                            R"({"zero_optimization": {"stage": 3,
                                "overlap_comm": false}})",
                            2))
                   .zero.overlapComm);
}

TEST(DeepSpeedConfig, Stage3Knobs) {
  ZeroConfig config = configOf(parseDeepSpeedConfig(R"({
    "zero_optimization": {
      "stage": 3,
      "contiguous_gradients": false,
      "reduce_scatter": true,
      "stage3_max_live_parameters": 1e9,
      "stage3_max_reuse_distance": 2e9,
      "stage3_prefetch_bucket_size": 1e7,
      "stage3_param_persistence_threshold": 0,
      "reduce_bucket_size": 1e7,
      "sub_group_size": 1e8,
      "offload_optimizer": {"device": "none", "pin_memory": true},
      "offload_param": null
    }})",
                                                    2));
  EXPECT_EQ(config.stage, ZeroStage::Parameters);
  EXPECT_FALSE(config.zero.contiguousGradients);
  EXPECT_TRUE(config.zero.reduceScatter);
  // All-reduced gradients are not implemented: refused, not ignored.
  EXPECT_EQ(
      deepSpeedError(R"({"zero_optimization": {"reduce_scatter": false}})"),
      "zero_optimization.reduce_scatter: only true is supported, got "
      "false");
  EXPECT_EQ(optionsError("reduce-scatter=false"),
            "reduce-scatter: only true is supported, got false");
  EXPECT_EQ(config.zero.stage3MaxLiveParameters, 1000000000);
  EXPECT_EQ(config.zero.stage3MaxReuseDistance, 2000000000);
  EXPECT_EQ(config.zero.stage3PrefetchBucketSize, 10000000);
  EXPECT_EQ(config.zero.stage3ParamPersistenceThreshold, 0);
  EXPECT_EQ(config.zero.reduceBucketSize, 10000000);
  EXPECT_EQ(config.zero.subGroupSize, 100000000);
}

TEST(DeepSpeedConfig, OptimizerTypes) {
  auto optimizerOf = [](llvm::StringRef optimizer) {
    std::string json = R"({"optimizer": )" + optimizer.str() + "}";
    return configOf(parseDeepSpeedConfig(json, 1)).optimizer;
  };
  // Type names are case-insensitive.
  EXPECT_EQ(optimizerOf(R"({"type": "adam"})").kind, OptimizerKind::AdamW);
  EXPECT_EQ(optimizerOf(R"({"type": "ADAMW"})").kind, OptimizerKind::AdamW);
  EXPECT_EQ(optimizerOf(R"({"type": "sgd", "params": {"lr": 0.1}})").kind,
            OptimizerKind::SGD);
  EXPECT_EQ(optimizerOf(R"({"type": "SGD", "params": {"lr": 0.1}})").lr, 0.1);
  // adam_w_mode false gives torch.optim.Adam (L2 in the gradient).
  OptimizerConfig adam = optimizerOf(R"({"type": "Adam", "params": {
      "lr": 1e-4, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.1,
      "adam_w_mode": false}})");
  EXPECT_EQ(adam.kind, OptimizerKind::Adam);
  EXPECT_EQ(adam.lr, 1e-4);
  EXPECT_EQ(adam.beta1, 0.8);
  EXPECT_EQ(adam.beta2, 0.95);
  EXPECT_EQ(adam.eps, 1e-6);
  EXPECT_EQ(adam.weightDecay, 0.1);
  // FusedAdam's weight decay defaults to 0, torch.optim.AdamW's to 0.01.
  EXPECT_EQ(optimizerOf(R"({"type": "AdamW"})").weightDecay, 0.0);
  EXPECT_EQ(optimizerOf(R"({"type": "AdamW", "params": {"torch_adam": true}})")
                .weightDecay,
            0.01);
  EXPECT_EQ(optimizerOf(R"({"type": "Adam", "params": {"torch_adam": true,
                            "adam_w_mode": false}})")
                .weightDecay,
            0.0);
  EXPECT_EQ(optimizerOf(R"({"type": "Adam", "params": null})").kind,
            OptimizerKind::AdamW);
}

TEST(DeepSpeedConfig, Precision) {
  EXPECT_EQ(configOf(parseDeepSpeedConfig(R"({"bf16": {"enabled": true}})", 1))
                .precision.precision,
            Precision::BF16);
  ZeroConfig fp16 = configOf(parseDeepSpeedConfig(
      R"({"fp16": {"enabled": true, "loss_scale": 128,
                   "initial_scale_power": 32}})",
      1));
  EXPECT_EQ(fp16.precision.precision, Precision::FP16);
  EXPECT_EQ(fp16.precision.lossScale, 128.0);
  EXPECT_EQ(fp16.precision.initialScalePower, 32);
  // A disabled section leaves fp32 and its values unused.
  ZeroConfig disabled = configOf(parseDeepSpeedConfig(
      R"({"fp16": {"enabled": false, "loss_scale": 128},
          "bf16": {"enabled": false}})",
      1));
  EXPECT_EQ(disabled.precision, PrecisionConfig());
}

TEST(DeepSpeedConfig, BatchSizes) {
  auto batchOf = [](llvm::StringRef json, int64_t world) {
    ZeroConfig config = configOf(parseDeepSpeedConfig(json, world));
    return std::vector<int64_t>{config.trainBatchSize,
                                config.trainMicroBatchSizePerGpu,
                                config.gradientAccumulationSteps};
  };
  using V = std::vector<int64_t>;
  EXPECT_EQ(batchOf(R"({"train_batch_size": 32,
      "train_micro_batch_size_per_gpu": 4,
      "gradient_accumulation_steps": 2})",
                    4),
            V({32, 4, 2}));
  EXPECT_EQ(batchOf(R"({"train_batch_size": 32,
      "train_micro_batch_size_per_gpu": 4})",
                    4),
            V({32, 4, 2}));
  EXPECT_EQ(batchOf(R"({"train_batch_size": 32,
      "gradient_accumulation_steps": 2})",
                    4),
            V({32, 4, 2}));
  EXPECT_EQ(batchOf(R"({"train_micro_batch_size_per_gpu": 4,
      "gradient_accumulation_steps": 2})",
                    4),
            V({32, 4, 2}));
  EXPECT_EQ(batchOf(R"({"train_batch_size": 32})", 4), V({32, 8, 1}));
  EXPECT_EQ(batchOf(R"({"train_micro_batch_size_per_gpu": 4})", 4),
            V({16, 4, 1}));
  EXPECT_EQ(batchOf(R"({"gradient_accumulation_steps": 3})", 4), V({0, 0, 3}));
  EXPECT_EQ(batchOf("{}", 4), V({0, 0, 1}));
}

TEST(DeepSpeedConfig, AcceptedWithoutEffect) {
  EXPECT_EQ(deepSpeedError(R"({"steps_per_print": 10,
      "wall_clock_breakdown": true, "zero_allow_untested_optimizer": true,
      "prescale_gradients": false, "gradient_predivide_factor": 1,
      "communication_data_type": null,
      "optimizer": {"type": "Adam", "legacy_fusion": false,
                    "params": {"bias_correction": true, "amsgrad": false,
                               "torch_adam": false}},
      "zero_optimization": {"allgather_partitions": true,
                            "round_robin_gradients": false,
                            "zero_hpz_partition_size": 1,
                            "cpu_offload": false}})"),
            "<no error>");
}

//===----------------------------------------------------------------------===//
// DeepSpeed: every error
//===----------------------------------------------------------------------===//

TEST(DeepSpeedConfigErrors, UnknownKeys) {
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stag": 2}})"),
            "unknown key 'zero_optimization.stag'; did you mean 'stage'?");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimisation": {}})"),
            "unknown key 'zero_optimisation'; did you mean "
            "'zero_optimization'?");
  EXPECT_EQ(deepSpeedError(R"({"fp16": {"Enabled": true}})"),
            "unknown key 'fp16.Enabled'; did you mean 'enabled'?");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "stage3_max_live_params": 1}})"),
            "unknown key 'zero_optimization.stage3_max_live_params'; did you "
            "mean 'stage3_max_live_parameters'?");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "Adam",
      "params": {"beta": [0.9, 0.99]}}})"),
            "unknown key 'optimizer.params.beta'; did you mean 'betas'?");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"offload_param": {
      "devise": "none"}}})"),
            "unknown key 'zero_optimization.offload_param.devise'; did you "
            "mean 'device'?");
  EXPECT_EQ(deepSpeedError(R"({"banana": 1})"), "unknown key 'banana'");
  // The first unknown key in key order is reported.
  EXPECT_EQ(deepSpeedError(R"({"zz": 1, "aa": 2})"), "unknown key 'aa'");
  // Keys are printed on one line.
  EXPECT_EQ(deepSpeedError(R"({"a\nb": 1})"), "unknown key 'a\\0Ab'");
  // SGD takes no betas.
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "SGD",
      "params": {"betas": [0.9, 0.99]}}})"),
            "unknown key 'optimizer.params.betas'");
}

TEST(DeepSpeedConfigErrors, WrongTypes) {
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": "2"}})"),
            "zero_optimization.stage: expected an integer, got \"2\"");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 2.5}})"),
            "zero_optimization.stage: expected an integer, got 2.5");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": null}})"),
            "zero_optimization.stage: expected an integer, got null");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"overlap_comm": 1}})"),
            "zero_optimization.overlap_comm: expected true or false, got 1");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": true})"),
            "zero_optimization: expected an object, got true");
  EXPECT_EQ(deepSpeedError(R"({"gradient_clipping": "1.0"})"),
            "gradient_clipping: expected a number, got \"1.0\"");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": 1}})"),
            "optimizer.type: expected a string, got 1");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "Adam",
      "params": {"betas": [0.9]}}})"),
            "optimizer.params.betas: expected an array of two numbers, got "
            "[0.9]");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "reduce_bucket_size": 1e30}})"),
            "zero_optimization.reduce_bucket_size: expected a 64-bit "
            "integer, got 1e+30");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"offload_optimizer": {
      "nvme_path": 3}}})"),
            "zero_optimization.offload_optimizer.nvme_path: expected a path "
            "or null, got 3");
  EXPECT_EQ(deepSpeedError(R"({"train_batch_size": "auto"})"),
            "train_batch_size: expected an integer, got \"auto\" (a Hugging "
            "Face Trainer placeholder; write the value)");
  EXPECT_EQ(deepSpeedError(R"({"bf16": {"enabled": "auto"}})"),
            "bf16.enabled: expected true or false, got \"auto\" (a Hugging "
            "Face Trainer placeholder; write the value)");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "AdamW",
      "params": {"lr": "auto"}}})"),
            "optimizer.params.lr: expected a number, got \"auto\" (a Hugging "
            "Face Trainer placeholder; write the value)");
  EXPECT_EQ(
      deepSpeedError(
          R"({"train_batch_size": "a very long string that goes on and on and on"})"),
      "train_batch_size: expected an integer, got \"a very long string that "
      "goes on and ...");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": [1, 2]}})"),
            "zero_optimization.stage: expected an integer, got [1,2]");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": {"b": 1.5,
      "a": [true, null, "x"]}}})"),
            "zero_optimization.stage: expected an integer, got "
            "{\"a\":[true,null,\"x\"],\"b\":1.5}");
}

TEST(DeepSpeedConfigErrors, OutOfRange) {
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 4}})"),
            "zero_optimization.stage: expected an integer in [0, 3], got 4");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": -1}})"),
            "zero_optimization.stage: expected an integer in [0, 3], got -1");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "reduce_bucket_size": -1}})"),
            "zero_optimization.reduce_bucket_size: expected an integer >= 1, "
            "got -1");
  // A bucket of no elements is refused where the config is read.
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "reduce_bucket_size": 0}})"),
            "zero_optimization.reduce_bucket_size: expected an integer >= 1, "
            "got 0");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "allgather_bucket_size": 0}})"),
            "zero_optimization.allgather_bucket_size: expected an integer >= "
            "1, got 0");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "stage3_prefetch_bucket_size": 0}})"),
            "zero_optimization.stage3_prefetch_bucket_size: expected an "
            "integer >= 1, got 0");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "stage3_param_persistence_threshold": -5}})"),
            "zero_optimization.stage3_param_persistence_threshold: expected "
            "an integer >= 0, got -5");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "Adam",
      "params": {"lr": -0.1}}})"),
            "optimizer.params.lr: expected a finite number >= 0, got -0.1");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "Adam",
      "params": {"betas": [0.9, 1.0]}}})"),
            "optimizer.params.betas[1]: expected a number in [0, 1), got 1");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "Adam",
      "params": {"eps": 1e999}}})"),
            "optimizer.params.eps: expected a finite number >= 0, got inf");
  EXPECT_EQ(deepSpeedError(R"({"fp16": {"enabled": true,
      "initial_scale_power": 200}})"),
            "fp16.initial_scale_power: expected an integer in [0, 127], got "
            "200");
  EXPECT_EQ(deepSpeedError(R"({"fp16": {"enabled": true, "hysteresis": 0}})"),
            "fp16.hysteresis: expected an integer >= 1, got 0");
  EXPECT_EQ(deepSpeedError(R"({"fp16": {"enabled": true,
      "loss_scale": -1}})"),
            "fp16.loss_scale: expected a finite number >= 0, got -1");
  EXPECT_EQ(deepSpeedError(R"({"gradient_clipping": -1.5})"),
            "gradient_clipping: expected a finite number >= 0, got -1.5");
  EXPECT_EQ(deepSpeedError("{}", 0), "world: expected an integer >= 1, got 0");
}

TEST(DeepSpeedConfigErrors, Fp16AndBf16) {
  EXPECT_EQ(deepSpeedError(R"({"fp16": {"enabled": true},
                               "bf16": {"enabled": true}})"),
            "fp16.enabled and bf16.enabled are both true; enable at most one");
}

TEST(DeepSpeedConfigErrors, BatchSizes) {
  EXPECT_EQ(deepSpeedError(R"({"train_batch_size": 32,
      "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})",
                           2),
            "train_batch_size: 32 != train_micro_batch_size_per_gpu (4) * "
            "gradient_accumulation_steps (2) * world (2) = 16");
  EXPECT_EQ(deepSpeedError(R"({"train_batch_size": 30,
      "train_micro_batch_size_per_gpu": 4})",
                           4),
            "train_batch_size: 30 is not divisible by "
            "train_micro_batch_size_per_gpu (4) * world (4)");
  EXPECT_EQ(deepSpeedError(R"({"train_batch_size": 30,
      "gradient_accumulation_steps": 2})",
                           4),
            "train_batch_size: 30 is not divisible by "
            "gradient_accumulation_steps (2) * world (4)");
  EXPECT_EQ(deepSpeedError(R"({"train_batch_size": 6})", 4),
            "train_batch_size: 6 is not divisible by "
            "gradient_accumulation_steps (1) * world (4)");
  EXPECT_EQ(deepSpeedError(R"({"train_batch_size": 0})"),
            "train_batch_size: expected an integer >= 1, got 0");
  EXPECT_EQ(deepSpeedError(R"({"train_micro_batch_size_per_gpu": -2})"),
            "train_micro_batch_size_per_gpu: expected an integer >= 1, got -2");
  EXPECT_EQ(deepSpeedError(R"({"gradient_accumulation_steps": 0})"),
            "gradient_accumulation_steps: expected an integer >= 1, got 0");
  EXPECT_EQ(deepSpeedError(R"({"train_micro_batch_size_per_gpu": 4e18,
      "gradient_accumulation_steps": 4})"),
            "train_micro_batch_size_per_gpu: 4000000000000000000 * "
            "gradient_accumulation_steps (4) * world (4) overflows");
}

// With model parallelism the batch sizes count the data-parallel ranks,
// world / model_parallel_size, as DeepSpeed's do.
TEST(DeepSpeedConfig, BatchSizesCountDataParallelRanks) {
  ZeroConfig config = configOf(parseDeepSpeedConfig(
      R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4})", 4, 2));
  EXPECT_EQ(config.modelParallelSize, 2);
  EXPECT_EQ(config.dataParallelSize(), 2);
  EXPECT_EQ(config.gradientAccumulationSteps, 1);
  EXPECT_EQ(errorOf(parseDeepSpeedConfig(R"({"train_batch_size": 6,
      "train_micro_batch_size_per_gpu": 2})",
                                         4, 2)),
            "train_batch_size: 6 is not divisible by "
            "train_micro_batch_size_per_gpu (2) * world (4) / "
            "model_parallel_size (2)");
  EXPECT_EQ(errorOf(parseDeepSpeedConfig("{}", 4, 3)),
            "model_parallel_size: expected a divisor of world (4), got 3");
  EXPECT_EQ(optionsError("world=4 model-parallel-size=2 "
                         "train-batch-size=8 train-micro-batch-size-per-gpu=2 "
                         "gradient-accumulation-steps=1"),
            "train-batch-size: 8 != train-micro-batch-size-per-gpu (2) * "
            "gradient-accumulation-steps (1) * world (4) / "
            "model-parallel-size (2) = 4");
  EXPECT_EQ(optionsError("world=4 model-parallel-size=3"),
            "model-parallel-size: expected a divisor of world (4), got 3");
  // Printed only when there are model axes.
  EXPECT_EQ(ZeroConfig().str().find("model-parallel-size"), std::string::npos);
}

TEST(DeepSpeedConfig, OffloadOptimizer) {
  ZeroConfig cpu = configOf(parseDeepSpeedConfig(
      R"({"zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "cpu", "pin_memory": true}}})",
      4));
  EXPECT_EQ(cpu.zero.offloadOptimizer, OffloadDevice::Cpu);
  EXPECT_TRUE(cpu.zero.offloadOptimizerPinMemory);
  ZeroConfig nvme = configOf(parseDeepSpeedConfig(
      R"({"zero_optimization": {"stage": 3, "offload_optimizer": {
      "device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 6,
      "pipeline_read": true, "pipeline_write": true, "ratio": 1.0}}})",
      4));
  EXPECT_EQ(nvme.zero.offloadOptimizer, OffloadDevice::Nvme);
  EXPECT_EQ(nvme.zero.offloadOptimizerNvmePath, "/local_nvme");
  EXPECT_EQ(nvme.zero.offloadOptimizerBufferCount, 6);
  EXPECT_NE(nvme.str().find("offload-optimizer=nvme "), std::string::npos)
      << nvme.str();
}

TEST(DeepSpeedConfigErrors, OffloadRejected) {
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 0,
      "offload_optimizer": {"device": "cpu"}}})"),
            "zero_optimization.offload_optimizer.device: needs ZeRO stage 1, "
            "2 or 3 (stage 0 keeps whole optimizer states on every rank)");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "nvme"}}})"),
            "zero_optimization.offload_optimizer.nvme_path: expected the "
            "directory for the NVMe files, got none");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "cpu", "ratio": 0.5}}})"),
            "zero_optimization.offload_optimizer.ratio: only 1 is supported "
            "(every optimizer state offloaded), got 0.5");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "cpu", "super_offload": true}}})"),
            "zero_optimization.offload_optimizer.super_offload: true is not "
            "supported");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 2,
      "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}}})"),
            "zero_optimization.offload_param.device: needs ZeRO stage 3 "
            "(below it every rank holds whole parameters)");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"stage": 3,
      "offload_param": {"device": "nvme", "nvme_path": "/a"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/b"}}})"),
            "zero_optimization.offload_param.nvme_path: differs from "
            "offload_optimizer's nvme_path; a rank has one NVMe file");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "offload_param": {"device": "gpu"}}})"),
            "zero_optimization.offload_param.device: expected \"none\", "
            "\"cpu\" or \"nvme\", got \"gpu\"");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"cpu_offload": true}})"),
            "zero_optimization.cpu_offload: only false (the default) is "
            "supported, got true");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {"offload_param": 1}})"),
            "zero_optimization.offload_param: expected an object or null, "
            "got 1");
}

TEST(DeepSpeedConfigErrors, UnsupportedFeatures) {
  EXPECT_EQ(deepSpeedError(R"({"scheduler": {"type": "WarmupLR"}})"),
            "scheduler: learning-rate schedulers are not supported (the "
            "learning rate stays optimizer.params.lr)");
  EXPECT_EQ(deepSpeedError(R"({"activation_checkpointing": {
      "partition_activations": true}})"),
            "activation_checkpointing.partition_activations: true is not "
            "supported: checkpoints are split across model-parallel ranks, "
            "which is not built (each model rank keeps its checkpoints "
            "whole)");
  EXPECT_EQ(deepSpeedError(R"({"activation_checkpointing": {
      "cpu_checkpointing": true}})"),
            "activation_checkpointing.cpu_checkpointing: true is not "
            "supported: checkpoints stay in device memory (offload is not "
            "implemented)");
  EXPECT_EQ(deepSpeedError(R"({"activation_checkpointing": {
      "number_checkpoints": 0}})"),
            "activation_checkpointing.number_checkpoints: expected an "
            "integer >= 1 or null, got 0");
  EXPECT_EQ(deepSpeedError(R"({"activation_checkpointing": {
      "profile": "yes"}})"),
            "activation_checkpointing.profile: expected true or false, got "
            "\"yes\"");
  // DeepSpeed's Megatron GPT-2 section, accepted: the segments come from
  // the model.
  EXPECT_EQ(deepSpeedError(R"({"activation_checkpointing": {
      "partition_activations": false, "contiguous_memory_optimization": true,
      "cpu_checkpointing": false, "number_checkpoints": 4,
      "synchronize_checkpoint_boundary": false, "profile": false}})"),
            "<no error>");
  EXPECT_EQ(deepSpeedError(R"({"amp": {"enabled": true}})"),
            "amp: NVIDIA Apex AMP is not supported; use fp16 or bf16");
  EXPECT_EQ(deepSpeedError(R"({"zero_optimization": {
      "allgather_partitions": false}})"),
            "zero_optimization.allgather_partitions: only true (the default) "
            "is supported, got false");
  EXPECT_EQ(deepSpeedError(R"({"fp16": {"enabled": true, "auto_cast": true}})"),
            "fp16.auto_cast: only false (the default) is supported, got true");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "Lamb"}})"),
            "optimizer.type: expected \"Adam\", \"AdamW\" or \"SGD\", got "
            "\"Lamb\"");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"params": {"lr": 0.1}}})"),
            "optimizer.type: missing; expected \"Adam\", \"AdamW\" or \"SGD\"");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "Adam",
      "params": {"lr": 0.00015, "max_grad_norm": 1.0}}})"),
            "optimizer.params.max_grad_norm: not supported as an optimizer "
            "parameter (as in DeepSpeed); use gradient_clipping");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "AdamW",
      "params": {"adam_w_mode": false}}})"),
            "optimizer.params.adam_w_mode: false contradicts optimizer.type "
            "\"AdamW\"");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "SGD",
      "params": {"momentum": 0.9}}})"),
            "optimizer.params.momentum: only 0 (the default) is supported, "
            "got 0.9");
  EXPECT_EQ(deepSpeedError(R"({"optimizer": {"type": "SGD",
      "params": {"weight_decay": 0.01}}})"),
            "optimizer.params.weight_decay: expected 0 with SGD, got 0.01");
}

TEST(DeepSpeedConfigErrors, MalformedJson) {
  EXPECT_EQ(deepSpeedError("{\n  \"zero_optimization\": {\n    \"stage\": 2,"
                           "\n  }\n}"),
            "invalid JSON at line 4, column 4: Expected object key");
  EXPECT_EQ(deepSpeedError("{\"stage\": tru}"),
            "invalid JSON at line 1, column 15: Invalid JSON value (true?)");
  EXPECT_EQ(deepSpeedError(""), "invalid JSON at line 1, column 1: Unexpected "
                                "EOF");
  EXPECT_EQ(deepSpeedError("{} {}"),
            "invalid JSON at line 1, column 4: Text after end of document");
  EXPECT_EQ(deepSpeedError("[1, 2]"),
            "expected a JSON object at the top level, got [1,2]");
  EXPECT_EQ(deepSpeedError("{\n  \"zero_optimization\": {\n    \"stage\": 1,"
                           "\n    \"stage\": 2\n  }\n}"),
            "duplicate key 'zero_optimization.stage' at line 4, column 5");
  EXPECT_EQ(deepSpeedError(std::string(100000, '[') + std::string(100000, ']')),
            "invalid JSON at line 1, column 65: nesting deeper than 64 levels");
  EXPECT_EQ(deepSpeedError("{\"a\": \"\xff\"}"),
            "invalid JSON at line 1, column 8: Invalid UTF-8 sequence");
}

//===----------------------------------------------------------------------===//
// OneFlow's enable_zero
//===----------------------------------------------------------------------===//

TEST(EnableZero, OneFlowDefaults) {
  ZeroConfig config = configOf(enableZero(4));
  EXPECT_EQ(config.world, 4);
  EXPECT_EQ(config.stage, ZeroStage::Gradients);
  EXPECT_EQ(config.shardMinSize, 1024);
  EXPECT_EQ(config.shardRestoreLevel, 1);
  EXPECT_FALSE(config.zero.overlapComm);
  // OneFlow has no persistence threshold; shard_min_size decides.
  EXPECT_EQ(config.zero.stage3ParamPersistenceThreshold, 0);
  // Everything else is ZeroConfig's default.
  ZeroConfig expected;
  expected.world = 4;
  expected.stage = ZeroStage::Gradients;
  expected.shardMinSize = 1024;
  expected.zero.stage3ParamPersistenceThreshold = 0;
  EXPECT_EQ(config, expected);
}

TEST(EnableZero, Ranges) {
  for (int64_t stage = 1; stage <= 3; ++stage) {
    ZeroConfig config = configOf(enableZero(2, true, stage, 1, 0));
    EXPECT_EQ(stageNumber(config.stage), stage);
    EXPECT_EQ(config.shardMinSize, 1);
    EXPECT_EQ(config.shardRestoreLevel, 0);
    EXPECT_EQ(config.zero.overlapComm, stage == 3);
  }
  EXPECT_EQ(configOf(enableZero(2, true, 1, 1024, 2)).shardRestoreLevel, 2);
  EXPECT_EQ(errorOf(enableZero(2, true, 0)),
            "stage: expected an integer in [1, 3], got 0");
  EXPECT_EQ(errorOf(enableZero(2, true, 4)),
            "stage: expected an integer in [1, 3], got 4");
  EXPECT_EQ(errorOf(enableZero(2, true, 2, 0)),
            "shard_min_size: expected an integer >= 1, got 0");
  EXPECT_EQ(errorOf(enableZero(2, true, 2, 1024, 3)),
            "shard_restore_level: expected an integer in [0, 2], got 3");
  EXPECT_EQ(errorOf(enableZero(2, true, 2, 1024, -1)),
            "shard_restore_level: expected an integer in [0, 2], got -1");
  EXPECT_EQ(errorOf(enableZero(0)), "world: expected an integer >= 1, got 0");
}

TEST(EnableZero, ModeOffDisablesZero) {
  // As in OneFlow, mode=False ignores the other arguments.
  ZeroConfig config = configOf(enableZero(4, false, 7, -1, 9));
  EXPECT_EQ(config.stage, ZeroStage::DataParallel);
  EXPECT_FALSE(llvm::errorToBool(config.verify()));
  EXPECT_EQ(errorOf(enableZero(0, false)),
            "world: expected an integer >= 1, got 0");
}

//===----------------------------------------------------------------------===//
// Pipeline options
//===----------------------------------------------------------------------===//

TEST(PipelineOptions, Example) {
  ZeroConfig config = configOf(parsePipelineOptions(
      "stage=2 world=4 optimizer=adamw lr=1e-3 precision=bf16 "
      "shard-min-size=0"));
  ZeroConfig expected;
  expected.world = 4;
  expected.stage = ZeroStage::Gradients;
  expected.optimizer.kind = OptimizerKind::AdamW;
  expected.optimizer.lr = 1e-3;
  expected.precision.precision = Precision::BF16;
  EXPECT_EQ(config, expected);
}

TEST(PipelineOptions, EveryKey) {
  ZeroConfig config = configOf(parsePipelineOptions(
      "world=8 stage=3 shard-min-size=16 shard-restore-level=2 "
      "optimizer=ADAM lr=0.01 beta1=0.8 beta2=0.99 eps=1e-6 "
      "weight-decay=0.05 precision=FP16 loss-scale=256 "
      "initial-scale-power=8 loss-scale-window=500 hysteresis=3 "
      "min-loss-scale=2 gradient-accumulation-steps=2 gradient-clipping=0.5 "
      "train-micro-batch-size-per-gpu=4 reduce-bucket-size=5e7\t"
      "allgather-bucket-size=6e7 overlap-comm=false "
      "contiguous-gradients=false\nreduce-scatter=true "
      "stage3-prefetch-bucket-size=1 stage3-param-persistence-threshold=2 "
      "stage3-max-live-parameters=3 stage3-max-reuse-distance=4 "
      "sub-group-size=5"));
  EXPECT_EQ(config.world, 8);
  EXPECT_EQ(config.stage, ZeroStage::Parameters);
  EXPECT_EQ(config.shardMinSize, 16);
  EXPECT_EQ(config.shardRestoreLevel, 2);
  EXPECT_EQ(config.optimizer.kind, OptimizerKind::Adam);
  EXPECT_EQ(config.optimizer.lr, 0.01);
  EXPECT_EQ(config.optimizer.beta1, 0.8);
  EXPECT_EQ(config.optimizer.beta2, 0.99);
  EXPECT_EQ(config.optimizer.eps, 1e-6);
  EXPECT_EQ(config.optimizer.weightDecay, 0.05);
  EXPECT_EQ(config.precision.precision, Precision::FP16);
  EXPECT_EQ(config.precision.lossScale, 256.0);
  EXPECT_EQ(config.precision.initialScalePower, 8);
  EXPECT_EQ(config.precision.lossScaleWindow, 500);
  EXPECT_EQ(config.precision.hysteresis, 3);
  EXPECT_EQ(config.precision.minLossScale, 2);
  EXPECT_EQ(config.gradientAccumulationSteps, 2);
  EXPECT_EQ(config.gradientClipping, 0.5);
  EXPECT_EQ(config.trainMicroBatchSizePerGpu, 4);
  EXPECT_EQ(config.trainBatchSize, 64);
  EXPECT_EQ(config.zero.reduceBucketSize, 50000000);
  EXPECT_EQ(config.zero.allgatherBucketSize, 60000000);
  EXPECT_FALSE(config.zero.overlapComm);
  EXPECT_FALSE(config.zero.contiguousGradients);
  EXPECT_TRUE(config.zero.reduceScatter);
  EXPECT_EQ(config.zero.stage3PrefetchBucketSize, 1);
  EXPECT_EQ(config.zero.stage3ParamPersistenceThreshold, 2);
  EXPECT_EQ(config.zero.stage3MaxLiveParameters, 3);
  EXPECT_EQ(config.zero.stage3MaxReuseDistance, 4);
  EXPECT_EQ(config.zero.subGroupSize, 5);
}

TEST(PipelineOptions, EmptyIsTheDefault) {
  EXPECT_EQ(configOf(parsePipelineOptions("")), ZeroConfig());
  EXPECT_EQ(configOf(parsePipelineOptions("  \t ")), ZeroConfig());
  EXPECT_TRUE(configOf(parsePipelineOptions("stage=3")).zero.overlapComm);
}

TEST(PipelineOptions, Errors) {
  EXPECT_EQ(optionsError("stag=2"),
            "unknown key 'stag'; did you mean 'stage'?");
  EXPECT_EQ(optionsError("shard_min_size=0"),
            "unknown key 'shard_min_size'; did you mean 'shard-min-size'?");
  EXPECT_EQ(optionsError("banana=1"), "unknown key 'banana'");
  EXPECT_EQ(optionsError("stage=2 stage=3"), "duplicate key 'stage'");
  EXPECT_EQ(optionsError("stage"), "expected 'key=value', got 'stage'");
  EXPECT_EQ(optionsError("=2"), "expected 'key=value', got '=2'");
  EXPECT_EQ(optionsError("stage="), "stage: expected an integer, got ''");
  EXPECT_EQ(optionsError("stage=two"), "stage: expected an integer, got 'two'");
  EXPECT_EQ(optionsError("stage=2.5"), "stage: expected an integer, got '2.5'");
  EXPECT_EQ(optionsError("stage=4"),
            "stage: expected an integer in [0, 3], got 4");
  EXPECT_EQ(optionsError("lr=fast"), "lr: expected a number, got 'fast'");
  EXPECT_EQ(optionsError("lr=-1"), "lr: expected a finite number >= 0, got -1");
  EXPECT_EQ(optionsError("overlap-comm=yes"),
            "overlap-comm: expected true or false, got 'yes'");
  EXPECT_EQ(optionsError("optimizer=lamb"),
            "optimizer: expected sgd, adam or adamw, got 'lamb'");
  EXPECT_EQ(optionsError("precision=fp8"),
            "precision: expected fp32, fp16 or bf16, got 'fp8'");
  EXPECT_EQ(optionsError("optimizer=sgd beta1=0.9"),
            "beta1: not used by optimizer=sgd");
  EXPECT_EQ(optionsError("optimizer=sgd weight-decay=0.1"),
            "weight-decay: expected 0 with SGD, got 0.1");
  EXPECT_EQ(optionsError("precision=bf16 loss-scale=128"),
            "loss-scale: only used with precision=fp16");
  EXPECT_EQ(optionsError("world=0"), "world: expected an integer >= 1, got 0");
  EXPECT_EQ(optionsError("world=2 train-batch-size=8 "
                         "train-micro-batch-size-per-gpu=2 "
                         "gradient-accumulation-steps=3"),
            "train-batch-size: 8 != train-micro-batch-size-per-gpu (2) * "
            "gradient-accumulation-steps (3) * world (2) = 12");
  EXPECT_EQ(optionsError("train-batch-size=0"),
            "train-batch-size: expected an integer >= 1, got 0");
  EXPECT_EQ(optionsError("stage=\x01"),
            "stage: expected an integer, got '\\01'");
}

TEST(PipelineOptions, StrReadsBack) {
  std::vector<ZeroConfig> configs = {
      ZeroConfig(),
      configOf(parseDeepSpeedConfig(kGpt2Config, 4)),
      configOf(enableZero(8, true, 3, 4096, 2)),
      configOf(parsePipelineOptions("optimizer=sgd lr=0.1 world=3 "
                                    "train-batch-size=12")),
      configOf(parsePipelineOptions("optimizer=adam lr=3e-4 beta2=0.95 "
                                    "weight-decay=0.1 precision=fp16 "
                                    "loss-scale=1024.5 gradient-clipping=1")),
  };
  for (const ZeroConfig &config : configs) {
    std::string text = config.str();
    EXPECT_EQ(configOf(parsePipelineOptions(text)), config) << text;
  }
}

//===----------------------------------------------------------------------===//
// Printing and verify()
//===----------------------------------------------------------------------===//

TEST(ZeroConfig, ToJsonIsADeepSpeedConfig) {
  ZeroConfig config = configOf(parseDeepSpeedConfig(kGpt2Config, 4));
  llvm::json::Value json = config.toJson();
  llvm::json::Object *object = json.getAsObject();
  ASSERT_TRUE(object);
  const llvm::json::Object *extra = object->getObject("zerosbp");
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->getInteger("world"), 4);
  EXPECT_EQ(extra->getInteger("shard_min_size"), 0);
  EXPECT_EQ(extra->getInteger("shard_restore_level"), 1);
  EXPECT_EQ(object->getObject("optimizer")->getString("type"), "AdamW");
  EXPECT_EQ(object->getObject("zero_optimization")->getInteger("stage"), 2);

  object->erase("zerosbp");
  std::string text = llvm::formatv("{0:2}", json).str();
  EXPECT_EQ(configOf(parseDeepSpeedConfig(text, 4)), config) << text;

  // Adam and SGD print back to the same kind.
  for (llvm::StringRef options :
       {"optimizer=adam weight-decay=0.1", "optimizer=sgd lr=0.5",
        "precision=bf16 stage=3"}) {
    ZeroConfig other = configOf(parsePipelineOptions(options));
    llvm::json::Value otherJson = other.toJson();
    otherJson.getAsObject()->erase("zerosbp");
    std::string otherText = llvm::formatv("{0}", otherJson).str();
    EXPECT_EQ(configOf(parseDeepSpeedConfig(otherText, 1)), other) << otherText;
  }
}

TEST(ZeroConfig, VerifyNamesTheField) {
  auto verifyError = [](const ZeroConfig &config) {
    llvm::Error error = config.verify();
    return error ? llvm::toString(std::move(error)) : "<no error>";
  };
  ZeroConfig config;
  EXPECT_EQ(verifyError(config), "<no error>");
  config.world = 0;
  EXPECT_EQ(verifyError(config), "world: expected an integer >= 1, got 0");
  config = ZeroConfig();
  config.shardRestoreLevel = 3;
  EXPECT_EQ(verifyError(config),
            "shard-restore-level: expected an integer in [0, 2], got 3");
  config = ZeroConfig();
  config.optimizer.beta1 = -0.5;
  EXPECT_EQ(verifyError(config),
            "beta1: expected a number in [0, 1), got -0.5");
  config = ZeroConfig();
  config.trainBatchSize = 8;
  EXPECT_EQ(verifyError(config),
            "train-micro-batch-size-per-gpu: expected an integer >= 1 when "
            "train-batch-size is set, got 0");
  config = ZeroConfig();
  config.zero.subGroupSize = -1;
  EXPECT_EQ(verifyError(config),
            "sub-group-size: expected an integer >= 0, got -1");
}

//===----------------------------------------------------------------------===//
// Robustness: mutated configs never crash the parser
//===----------------------------------------------------------------------===//

/// A parse result must be a config that verifies and prints back to itself,
/// or a non-empty one-line error.
void checkOutcome(llvm::Expected<ZeroConfig> result, int64_t world,
                  const std::string &input) {
  if (!result) {
    std::string message = llvm::toString(result.takeError());
    EXPECT_FALSE(message.empty()) << input;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return;
  }
  EXPECT_EQ(result->world, world);
  EXPECT_FALSE(llvm::errorToBool(result->verify())) << input;
  EXPECT_EQ(configOf(parsePipelineOptions(result->str())), *result) << input;
}

/// Byte-level mutations of JSON text.
std::string mutateText(std::string text, std::mt19937 &rng) {
  static const std::string alphabet = "{}[]\":,.-+0123456789eE \n\\tfnul";
  static const std::vector<std::string> tokens = {
      "1e999", "-1",       "0",        "99999999999999999999",
      "0.5",   "\"auto\"", "null",     "true",
      "[]",    "{}",       "\"none\"", "\"cpu\"",
      "4",     "1e-9"};
  int edits = 1 + rng() % 4;
  for (int i = 0; i < edits && !text.empty(); ++i) {
    size_t pos = rng() % text.size();
    switch (rng() % 6) {
    case 0: // Replace a byte.
      text[pos] = alphabet[rng() % alphabet.size()];
      break;
    case 1: // Insert a byte, sometimes outside ASCII.
      text.insert(pos, 1,
                  rng() % 8 ? alphabet[rng() % alphabet.size()]
                            : static_cast<char>(0x80 + rng() % 128));
      break;
    case 2: // Delete a few bytes.
      text.erase(pos, 1 + rng() % 8);
      break;
    case 3: { // Duplicate a slice.
      size_t length = 1 + rng() % 24;
      text.insert(pos, text.substr(pos, length));
      break;
    }
    case 4: // Insert a token.
      text.insert(pos, tokens[rng() % tokens.size()]);
      break;
    default: // Truncate.
      text.resize(pos);
      break;
    }
  }
  return text;
}

/// A random JSON value, shallow.
llvm::json::Value randomValue(std::mt19937 &rng) {
  switch (rng() % 12) {
  case 0:
    return nullptr;
  case 1:
    return rng() % 2 == 0;
  case 2:
    return static_cast<int64_t>(rng() % 5) - 1;
  case 3:
    return static_cast<int64_t>(rng()) * 1000;
  case 4:
    return (rng() % 1000) / 997.0;
  case 5:
    return -1.5;
  case 6:
    return "auto";
  case 7:
    return llvm::json::Array{0.9, 0.999};
  case 8:
    return llvm::json::Object{{"device", rng() % 2 ? "none" : "cpu"}};
  case 9:
    return llvm::json::Object{{"enabled", true}};
  case 10:
    return "AdamW";
  default:
    return 1e300;
  }
}

/// Structural mutations: replace, delete or add a member somewhere.
void mutateValue(llvm::json::Value &value, std::mt19937 &rng, int depth = 0) {
  static const std::vector<std::string> keys = {"stage",
                                                "type",
                                                "enabled",
                                                "lr",
                                                "betas",
                                                "device",
                                                "fp16",
                                                "bf16",
                                                "overlap_comm",
                                                "stag",
                                                "train_batch_size",
                                                "offload_param",
                                                "params",
                                                "hysteresis",
                                                "sub_group_size",
                                                "weight_decay"};
  llvm::json::Object *object = value.getAsObject();
  if (!object || object->empty() || depth > 3) {
    value = randomValue(rng);
    return;
  }
  std::vector<std::string> present;
  for (const auto &member : *object)
    present.push_back(member.first.str());
  std::sort(present.begin(), present.end());
  const std::string &key = present[rng() % present.size()];
  switch (rng() % 4) {
  case 0:
    mutateValue((*object)[key], rng, depth + 1);
    break;
  case 1:
    (*object)[key] = randomValue(rng);
    break;
  case 2:
    object->erase(key);
    break;
  default:
    (*object)[keys[rng() % keys.size()]] = randomValue(rng);
    break;
  }
}

TEST(ConfigRobustness, MutatedDeepSpeedConfigs) {
  std::mt19937 rng(20240517);
  llvm::Expected<llvm::json::Value> base = llvm::json::parse(kGpt2Config);
  ASSERT_TRUE(static_cast<bool>(base));
  int configs = 0, errors = 0;
  for (int i = 0; i < 3000; ++i) {
    int64_t world = 1 + rng() % 8;
    std::string text;
    if (i % 2 == 0) {
      text = mutateText(kGpt2Config, rng);
    } else {
      llvm::json::Value value = *base;
      int edits = 1 + rng() % 3;
      for (int j = 0; j < edits; ++j)
        mutateValue(value, rng);
      text = llvm::formatv("{0}", value).str();
    }
    llvm::Expected<ZeroConfig> result = parseDeepSpeedConfig(text, world);
    (result ? configs : errors) += 1;
    checkOutcome(std::move(result), world, text);
  }
  // Both outcomes occur.
  EXPECT_GT(configs, 100);
  EXPECT_GT(errors, 100);
}

TEST(ConfigRobustness, MutatedPipelineOptions) {
  std::mt19937 rng(7);
  std::string base = configOf(parseDeepSpeedConfig(kGpt2Config, 4)).str();
  for (int i = 0; i < 2000; ++i) {
    std::string text = mutateText(base, rng);
    llvm::Expected<ZeroConfig> result = parsePipelineOptions(text);
    if (!result) {
      std::string message = llvm::toString(result.takeError());
      EXPECT_FALSE(message.empty()) << text;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      continue;
    }
    EXPECT_FALSE(llvm::errorToBool(result->verify())) << text;
    EXPECT_EQ(configOf(parsePipelineOptions(result->str())), *result) << text;
  }
}

} // namespace

namespace {

/// A valid value of `option` other than its default, as text.
std::string otherValue(const ConfigOption &option, const ZeroConfig &defaults) {
  switch (option.type) {
  case OptionType::Integer:
    return std::to_string(option.check == OptionCheck::In
                              ? option.hi
                              : std::max<int64_t>(option.lo, 0) + 2);
  case OptionType::Stage:
    return "3";
  case OptionType::Number:
    return "0.25";
  case OptionType::Bool:
    if (option.check == OptionCheck::True)
      return "true";
    return *optionMember<bool>(defaults, option.field) ? "false" : "true";
  case OptionType::Optimizer:
    return "sgd";
  case OptionType::Precision:
    return "bf16";
  case OptionType::Offload:
    return "nvme";
  case OptionType::Text:
    return option.field == ConfigField::PipelineSchedule ? "gpipe" : "/nvme";
  }
  return "";
}

/// The other options `option` needs to be used (ConfigOptions.def's When),
/// as pipeline-option pairs and as members of DeepSpeed's
/// offload_optimizer.
struct Context {
  std::string pairs, offloadMembers;
};
Context contextOf(const ConfigOption &option) {
  Context context;
  if (option.when == OptionWhen::Fp16)
    context.pairs = " precision=fp16";
  // MiCS groups split model states: stage 0 has none; hpZ's copy is of
  // stage-3 parameters.
  if (option.field == ConfigField::MicsShardSize)
    context.pairs = " stage=1";
  if (option.field == ConfigField::HpzPartitionSize ||
      option.field == ConfigField::QuantizedWeights)
    context.pairs = " stage=3";
  if (option.when == OptionWhen::QuantizedWeights)
    context.pairs = " stage=3 zero-quantized-weights=true";
  // The model axes divide the ranks.
  if (option.field == ConfigField::ModelParallelSize ||
      option.field == ConfigField::PipelineParallelSize)
    context.pairs = " world=6";
  if (option.when == OptionWhen::Pipelined)
    context.pairs = " world=2 pipeline-parallel-size=2";
  // Interleaving takes the micro-batches in groups of the stages.
  if (option.field == ConfigField::VirtualPipelineStages)
    context.pairs += " gradient-accumulation-steps=2";
  if (option.when == OptionWhen::ParamOffload ||
      option.when == OptionWhen::ParamNvme) {
    context.pairs = " stage=3";
    bool nvme = option.when == OptionWhen::ParamNvme ||
                option.field == ConfigField::OffloadParam;
    if (option.field != ConfigField::OffloadParam) {
      context.pairs += nvme ? " offload-param=nvme" : " offload-param=cpu";
      context.offloadMembers +=
          nvme ? ", \"device\": \"nvme\"" : ", \"device\": \"cpu\"";
    }
    if (nvme && option.field != ConfigField::OffloadParamNvmePath) {
      context.pairs += " offload-param-nvme-path=/nvme";
      context.offloadMembers += ", \"nvme_path\": \"/nvme\"";
    }
  }
  if (option.when == OptionWhen::Offload || option.when == OptionWhen::Nvme) {
    context.pairs = " stage=1";
    bool nvme = option.when == OptionWhen::Nvme ||
                option.field == ConfigField::OffloadOptimizer;
    if (option.field != ConfigField::OffloadOptimizer) {
      context.pairs +=
          nvme ? " offload-optimizer=nvme" : " offload-optimizer=cpu";
      context.offloadMembers +=
          nvme ? ", \"device\": \"nvme\"" : ", \"device\": \"cpu\"";
    }
    if (nvme && option.field != ConfigField::OffloadOptimizerNvmePath) {
      context.pairs += " offload-optimizer-nvme-path=/nvme";
      context.offloadMembers += ", \"nvme_path\": \"/nvme\"";
    }
  }
  return context;
}

/// The value `config` holds for `option`, as text.
std::string heldValue(const ConfigOption &option, const ZeroConfig &config) {
  if (const int64_t *value = optionMember<int64_t>(config, option.field))
    return std::to_string(*value);
  if (const ZeroStage *stage = optionMember<ZeroStage>(config, option.field))
    return std::to_string(stageNumber(*stage));
  if (const double *value = optionMember<double>(config, option.field))
    return *value == 0.25 ? "0.25" : std::to_string(*value);
  if (const bool *value = optionMember<bool>(config, option.field))
    return *value ? "true" : "false";
  if (const OptimizerKind *kind =
          optionMember<OptimizerKind>(config, option.field))
    return stringifyOptimizerKind(*kind).str();
  if (const OffloadDevice *device =
          optionMember<OffloadDevice>(config, option.field))
    return stringifyOffloadDevice(*device).str();
  if (const std::string *text = optionMember<std::string>(config, option.field))
    return *text;
  return stringifyPrecision(*optionMember<Precision>(config, option.field))
      .str();
}

} // namespace

// Every row of ConfigOptions.def reaches its member from each front end,
// survives str() and toJson(), and makes the config differ from the
// default: no row is left out of any derived list.
TEST(ConfigOptions, EveryRowReachesItsMemberFromEveryFrontEnd) {
  ZeroConfig defaults;
  for (const ConfigOption &option : configOptions()) {
    SCOPED_TRACE(option.key.str());
    std::string value = otherValue(option, defaults);
    Context context = contextOf(option);
    ZeroConfig config = configOf(
        parsePipelineOptions((option.key + "=" + value + context.pairs).str()));
    EXPECT_EQ(heldValue(option, config), value);
    if (option.check != OptionCheck::True)
      EXPECT_NE(config, defaults);
    // str() prints it, and reads back to the same config.
    EXPECT_NE(config.str().find((option.key + "=" + value).str()),
              std::string::npos)
        << config.str();
    EXPECT_EQ(configOf(parsePipelineOptions(config.str())), config);
    // toJson() is a DeepSpeed config (with the zerosbp object) that reads
    // back to it.
    llvm::json::Value json = config.toJson();
    llvm::json::Object *object = json.getAsObject();
    object->erase("zerosbp");
    std::string text =
        llvm::formatv("{0}", llvm::json::Value(std::move(*object)));
    ZeroConfig fromJson = configOf(parseDeepSpeedConfig(text, config.world));
    fromJson.shardMinSize = config.shardMinSize;
    fromJson.modelParallelSize = config.modelParallelSize;
    fromJson.pipelineParallelSize = config.pipelineParallelSize;
    fromJson.pipelineSchedule = config.pipelineSchedule;
    fromJson.virtualPipelineStages = config.virtualPipelineStages;
    fromJson.microBatchLoop = config.microBatchLoop;
    fromJson.shardRestoreLevel = config.shardRestoreLevel;
    fromJson.fuseAttention = config.fuseAttention;
    fromJson.fuseEpilogues = config.fuseEpilogues;
    fromJson.fuseAccumulation = config.fuseAccumulation;
    fromJson.recomputeCheap = config.recomputeCheap;
    EXPECT_EQ(fromJson, config) << text;
    // A plain zero_optimization or fp16 key reads as itself.
    llvm::StringRef path = option.deepSpeed;
    bool quoted =
        option.type == OptionType::Offload || option.type == OptionType::Text;
    std::string member = quoted ? "\"" + value + "\"" : value;
    bool param = path.starts_with("zero_optimization.offload_param.");
    if (path.consume_front("zero_optimization.offload_optimizer.") ||
        path.consume_front("zero_optimization.offload_param.")) {
      std::string ds =
          llvm::formatv("{{\"zero_optimization\": {{\"stage\": {3}, \"{4}\": "
                        "{{\"{0}\": {1}{2}}}}",
                        path, member, context.offloadMembers, param ? 3 : 1,
                        param ? "offload_param" : "offload_optimizer");
      EXPECT_EQ(heldValue(option, configOf(parseDeepSpeedConfig(ds, 4))), value)
          << ds;
    } else if (path.consume_front("zero_optimization.")) {
      // MiCS needs a stage that splits model states, hpZ and qwZ stage 3.
      std::string stage =
          option.field == ConfigField::MicsShardSize ? "\"stage\": 1, "
          : option.field == ConfigField::HpzPartitionSize ||
                  option.field == ConfigField::QuantizedWeights
              ? "\"stage\": 3, "
          : option.when == OptionWhen::QuantizedWeights
              ? "\"stage\": 3, \"zero_quantized_weights\": true, "
              : "";
      std::string ds = llvm::formatv(
          "{{\"zero_optimization\": {{{2}\"{0}\": {1}}}", path, value, stage);
      EXPECT_EQ(heldValue(option, configOf(parseDeepSpeedConfig(ds, 4))),
                value);
    } else if (option.type != OptionType::Precision &&
               path.consume_front("fp16.")) {
      std::string ds = llvm::formatv(
          "{{\"fp16\": {{\"enabled\": true, \"{0}\": {1}}}", path, value);
      EXPECT_EQ(heldValue(option, configOf(parseDeepSpeedConfig(ds, 4))),
                value);
    }
  }
}
