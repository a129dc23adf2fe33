//===- model_state_report_test.cc - ZeRO memory and traffic formulas ------===//
//
// Compiles the MLP and GPT-2 through the global pipeline at every stage and
// several world sizes and checks the report against
// docs/design.md#model-state-memory: fp32 Adam holds K = 8 bytes of
// optimizer state per parameter, and the parameter is its own master, so
// model states per rank are
//   stage 0: (4+4+8)Ψ   stage 1: 4Ψ + 4Ψ + 8Ψ/N
//   stage 2: 4Ψ + (4+8)Ψ/N   stage 3: (4+4+8)Ψ/N.
// Sizes here divide evenly, so there is no padding and the match is exact.
//
//===----------------------------------------------------------------------===//

#include "compiler/builder/Gpt2Builder.h"
#include "compiler/config/DeepSpeedConfig.h"
#include "compiler/config/EnableZero.h"
#include "compiler/config/PipelineOptions.h"
#include "compiler/estimator/ModelStateReport.h"
#include "compiler/pipeline/Pipeline.h"
#include "examples/mlp/Mlp.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace mlir;
using namespace zerosbp;

namespace {

struct Compiled {
  ModelStateReport report;
  /// Elements of the parameters the backward pass reads.
  int64_t backwardReadParams = 0;
};

using ModelFn = std::function<Value(GraphBuilder &)>;

Compiled compile(const ModelFn &model, int64_t world, int64_t stage,
                 const std::string &extra = "") {
  MLIRContext context;
  GraphBuilder builder(context, "model",
                       GraphBuilder::cpuPlacement(context, world));
  auto module = builder.finish({model(builder)});
  EXPECT_TRUE(succeeded(module)) << builder.error();
  std::string options =
      "world=" + std::to_string(world) + " stage=" + std::to_string(stage) +
      " shard-min-size=0 stage3-param-persistence-threshold=0 " + extra;
  auto config = parsePipelineOptions(options);
  EXPECT_TRUE(bool(config)) << llvm::toString(config.takeError());
  PassManager pm(&context);
  if (llvm::Error error = buildGlobalPipeline(pm, *config))
    ADD_FAILURE() << llvm::toString(std::move(error));
  EXPECT_TRUE(succeeded(pm.run(**module)));
  auto func = *(*module)->getOps<func::FuncOp>().begin();
  auto report = analyzeModelStates(func);
  EXPECT_TRUE(succeeded(report));
  return {*report, 0};
}

Value mlp(GraphBuilder &builder) {
  return examples::buildMlp(builder, examples::MlpConfig());
}

Value gpt2Tiny(GraphBuilder &builder) {
  auto config = *Gpt2Config::preset("tiny");
  config.batch = 8;
  return buildGpt2(builder, config);
}

void expectStageFormulas(const ModelFn &model, int64_t psi, int64_t world) {
  SCOPED_TRACE("world " + std::to_string(world));
  double n = static_cast<double>(world);
  for (int64_t stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    ModelStateReport report = compile(model, world, stage).report;
    EXPECT_EQ(report.params, psi);
    EXPECT_EQ(report.world, world);
    EXPECT_EQ(report.stage, stage);
    int64_t param = stage >= 3 ? 4 * psi / world : 4 * psi;
    int64_t grad = stage >= 2 ? 4 * psi / world : 4 * psi;
    int64_t state = stage >= 1 ? 8 * psi / world : 8 * psi;
    EXPECT_EQ(report.bytesPerRank.at("param"), param);
    EXPECT_EQ(report.bytesPerRank.at("grad"), grad);
    EXPECT_EQ(report.bytesPerRank.at("opt_state"), state);
    EXPECT_EQ(report.bytesPerRank.at("master"), 0);

    // Gradients move 2Ψ elements in stages 0-2: one all-reduce, or a
    // reduce-scatter plus an all-gather. The loss (one float) is
    // all-reduced on top.
    double lossBytes = 2 * 4 * (n - 1) / n;
    double gradientBytes = 4 * psi * (n - 1) / n;
    auto comm = [&](const char *kind) {
      auto it = report.commBytesPerStep.find(kind);
      return it == report.commBytesPerStep.end() ? 0.0 : it->second;
    };
    if (stage == 0) {
      EXPECT_DOUBLE_EQ(comm("all_reduce"), 2 * gradientBytes + lossBytes);
      EXPECT_DOUBLE_EQ(comm("reduce_scatter"), 0);
      EXPECT_DOUBLE_EQ(comm("all_gather"), 0);
    } else if (stage <= 2) {
      EXPECT_DOUBLE_EQ(comm("all_reduce"), lossBytes);
      EXPECT_DOUBLE_EQ(comm("reduce_scatter"), gradientBytes);
      EXPECT_DOUBLE_EQ(comm("all_gather"), gradientBytes);
    } else {
      // Stage 3 gathers every parameter for the forward and again where the
      // backward reads it: at most the paper's 3Ψ in total.
      EXPECT_DOUBLE_EQ(comm("reduce_scatter"), gradientBytes);
      if (world > 1)
        EXPECT_GT(comm("all_gather"), gradientBytes);
      EXPECT_LE(comm("all_gather"), 2 * gradientBytes);
    }
    EXPECT_EQ(report.collectives.count("all_to_all"), 0u);
  }
}

/// bf16 mixed precision with Adam: 2-byte parameters and gradients, an
/// fp32 master and two fp32 moments (K = 12):
///   stage 0: (2+2+12)Ψ  1: 4Ψ + 12Ψ/N  2: 2Ψ + 14Ψ/N  3: 16Ψ/N,
/// and gradients travel in bf16.
void expectMixedPrecisionFormulas(const ModelFn &model, int64_t psi,
                                  int64_t world) {
  SCOPED_TRACE("bf16, world " + std::to_string(world));
  double n = static_cast<double>(world);
  for (int64_t stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    ModelStateReport report =
        compile(model, world, stage, "precision=bf16").report;
    auto bytes = [&](const char *role) { return report.bytesPerRank.at(role); };
    EXPECT_EQ(bytes("param"), stage >= 3 ? 2 * psi / world : 2 * psi);
    EXPECT_EQ(bytes("grad"), stage >= 2 ? 2 * psi / world : 2 * psi);
    EXPECT_EQ(bytes("master"), stage >= 1 ? 4 * psi / world : 4 * psi);
    EXPECT_EQ(bytes("opt_state"), stage >= 1 ? 8 * psi / world : 8 * psi);
    int64_t expectedTotal[] = {16 * psi, 4 * psi + 12 * psi / world,
                               2 * psi + 14 * psi / world, 16 * psi / world};
    EXPECT_EQ(report.modelStateBytes(), expectedTotal[stage]);
    double gradientBytes = 2 * psi * (n - 1) / n;
    if (stage == 0)
      EXPECT_DOUBLE_EQ(report.commBytesPerStep["all_reduce"],
                       2 * gradientBytes + 2 * 4 * (n - 1) / n);
    else
      EXPECT_DOUBLE_EQ(report.commBytesPerStep["reduce_scatter"],
                       gradientBytes);
    if (stage == 1 || stage == 2)
      EXPECT_DOUBLE_EQ(report.commBytesPerStep["all_gather"], gradientBytes);
  }
}

TEST(ModelStateReportTest, MixedPrecisionMatchesThePaper) {
  for (int64_t world : {1, 2, 4})
    expectMixedPrecisionFormulas(gpt2Tiny, 134912, world);
  expectMixedPrecisionFormulas(mlp, 34186, 2);
}

TEST(ModelStateReportTest, MlpMatchesTheStageFormulas) {
  // 256*128 + 128 + 128*10 + 10.
  for (int64_t world : {1, 2})
    expectStageFormulas(mlp, 34186, world);
}

TEST(ModelStateReportTest, Gpt2MatchesTheStageFormulas) {
  for (int64_t world : {1, 2, 4, 8})
    expectStageFormulas(gpt2Tiny, 134912, world);
}

TEST(ModelStateReportTest, Stage3GathersWhatForwardAndBackwardRead) {
  // MLP: the forward reads all four parameters; the backward reads only
  // fc2.weight (dx of layer 2); fc1's input needs no gradient.
  int64_t psi = 34186, backward = 10 * 128;
  ModelStateReport report = compile(mlp, 2, 3).report;
  EXPECT_DOUBLE_EQ(report.commBytesPerStep.at("all_gather"),
                   4.0 * (psi + backward) / 2);
  EXPECT_EQ(report.collectives.at("all_gather"), 4 + 1);
  EXPECT_EQ(report.collectives.at("reduce_scatter"), 4);
}

TEST(ModelStateReportTest, PaddingIsCountedWhenSizesDoNotDivide) {
  // On 3 ranks: 32768 -> 32769, 128 -> 129, 1280 -> 1281, 10 -> 12.
  ModelStateReport report = compile(mlp, 3, 3).report;
  int64_t padded = 32769 + 129 + 1281 + 12;
  EXPECT_EQ(report.bytesPerRank.at("param"), 4 * padded / 3);
  EXPECT_EQ(report.bytesPerRank.at("opt_state"), 8 * padded / 3);
  EXPECT_EQ(report.params, 34186);
}

} // namespace

namespace {

/// OneFlow's enable_zero and a DeepSpeed config with the same choices build
/// the same pipeline.
/// The global-view passes `config` asks for, as a textual pass pipeline.
llvm::Expected<std::string> globalPipeline(const ZeroConfig &config) {
  OpPassManager pm(func::FuncOp::getOperationName());
  if (llvm::Error error = addGlobalPasses(pm, config))
    return std::move(error);
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  return text;
}

TEST(ModelStateReportTest, EnableZeroAndDeepSpeedBuildTheSamePipeline) {
  auto oneflow = enableZero(/*world=*/4, /*mode=*/true, /*stage=*/2,
                            /*shardMinSize=*/1024, /*shardRestoreLevel=*/1);
  ASSERT_TRUE(bool(oneflow)) << llvm::toString(oneflow.takeError());
  auto deepspeed = parseDeepSpeedConfig(
      R"({"zero_optimization": {"stage": 2},
          "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}})",
      /*world=*/4);
  ASSERT_TRUE(bool(deepspeed)) << llvm::toString(deepspeed.takeError());
  // A DeepSpeed config has no shard_min_size knob: it partitions everything.
  EXPECT_EQ(deepspeed->shardMinSize, 0);
  deepspeed->shardMinSize = oneflow->shardMinSize;
  oneflow->optimizer = deepspeed->optimizer;
  auto a = globalPipeline(*oneflow);
  auto b = globalPipeline(*deepspeed);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(*a, *b);
  EXPECT_TRUE(llvm::StringRef(*a).ends_with(
      "zero-stage{hpz-partition-size=0 mics-shard-size=0 "
      "persistence-threshold=0 shard-min-size=1024 stage=2})"))
      << *a;
}

TEST(ModelStateReportTest, EveryKnobIsHonouredOrRejected) {
  auto config = parseDeepSpeedConfig(R"({"gradient_accumulation_steps": 4})",
                                     /*world=*/2);
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  auto steps = globalPipeline(*config);
  ASSERT_TRUE(bool(steps)) << llvm::toString(steps.takeError());
  EXPECT_TRUE(llvm::StringRef(*steps).starts_with(
      "func.func(zero-fold-transposes,zero-fuse-attention,"
      "zero-fuse-epilogues,zero-accumulate{loop=false steps=4 world=2},"))
      << *steps;
  // OneFlow's shard_restore_level 0 would hand consumers the shards.
  auto oneflow = enableZero(/*world=*/2, /*mode=*/true, /*stage=*/1,
                            /*shardMinSize=*/1, /*shardRestoreLevel=*/0);
  ASSERT_TRUE(bool(oneflow)) << llvm::toString(oneflow.takeError());
  steps = globalPipeline(*oneflow);
  ASSERT_FALSE(bool(steps));
  EXPECT_EQ(llvm::toString(steps.takeError()),
            "shard_restore_level=0 is not supported by this compiler yet");
  // Dynamic fp16 loss scaling is finished after the stage rewrite.
  config = parseDeepSpeedConfig(R"({"fp16": {"enabled": true}})", 2);
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  steps = globalPipeline(*config);
  ASSERT_TRUE(bool(steps)) << llvm::toString(steps.takeError());
  EXPECT_NE(steps->find("zero-amp{hysteresis=2 initial-scale-power=16 "
                        "loss-scale=0.000000e+00 precision=fp16},"),
            std::string::npos)
      << *steps;
  EXPECT_TRUE(llvm::StringRef(*steps).ends_with(
      "zero-loss-scale{hysteresis=2 min-scale=1.000000e+00 window=1000})"))
      << *steps;
  // A static loss scale and gradient clipping are honoured.
  config = parseDeepSpeedConfig(
      R"({"fp16": {"enabled": true, "loss_scale": 128},
          "gradient_clipping": 1.0})",
      2);
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  steps = globalPipeline(*config);
  ASSERT_TRUE(bool(steps)) << llvm::toString(steps.takeError());
  EXPECT_NE(steps->find("zero-amp{hysteresis=2 initial-scale-power=16 "
                        "loss-scale=1.280000e+02 precision=fp16},"),
            std::string::npos)
      << *steps;
  EXPECT_TRUE(llvm::StringRef(*steps).ends_with(
      "zero-grad-clip{max-norm=1.000000e+00})"))
      << *steps;
}

} // namespace
