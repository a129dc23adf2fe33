//===- graph_builder_test.cc - GraphBuilder and the example models --------===//

#include "compiler/builder/Gpt2Builder.h"
#include "compiler/builder/GraphBuilder.h"
#include "examples/mlp/Mlp.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace mlir;
using namespace zerosbp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

struct Variable {
  std::vector<int64_t> shape;
  sbp::Role role;
};

/// Variables of the captured graph, by name.
std::map<std::string, Variable> variablesOf(ModuleOp module) {
  std::map<std::string, Variable> result;
  module.walk([&](nn::VariableOp op) {
    auto shape = op.getResult().getType().getShape();
    result[op.getName().str()] = {{shape.begin(), shape.end()}, op.getRole()};
  });
  return result;
}

int64_t numElements(const std::map<std::string, Variable> &variables) {
  int64_t total = 0;
  for (const auto &[name, variable] : variables) {
    int64_t count = 1;
    for (int64_t dim : variable.shape)
      count *= dim;
    total += count;
  }
  return total;
}

std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

TEST(GraphBuilderTest, MlpHasTorchLayoutsAndVerifies) {
  MLIRContext context;
  GraphBuilder builder(context, "mlp", GraphBuilder::cpuPlacement(context, 4));
  Value loss = examples::buildMlp(builder, examples::MlpConfig());
  auto module = builder.finish({loss});
  ASSERT_TRUE(succeeded(module)) << builder.error();

  auto variables = variablesOf(**module);
  ASSERT_EQ(variables.size(), 4u);
  EXPECT_THAT(variables["fc1.weight"].shape, ElementsAre(128, 256));
  EXPECT_THAT(variables["fc1.bias"].shape, ElementsAre(128));
  EXPECT_THAT(variables["fc2.weight"].shape, ElementsAre(10, 128));
  EXPECT_THAT(variables["fc2.bias"].shape, ElementsAre(10));
  for (const auto &[name, variable] : variables)
    EXPECT_EQ(variable.role, sbp::Role::param) << name;
  // 256*128 + 128 + 128*10 + 10.
  EXPECT_EQ(numElements(variables), 34186);

  // The loss is a scalar.
  auto lossType = cast<RankedTensorType>(loss.getType());
  EXPECT_EQ(lossType.getRank(), 0);
}

TEST(GraphBuilderTest, InputsSplitOnBatchVariablesBroadcast) {
  MLIRContext context;
  GraphBuilder builder(context, "mlp", GraphBuilder::cpuPlacement(context, 2));
  Value loss = examples::buildMlp(builder, examples::MlpConfig());
  auto module = builder.finish({loss});
  ASSERT_TRUE(succeeded(module)) << builder.error();
  int inputs = 0;
  (*module)->walk([&](nn::InputOp op) {
    auto encoding = sbp::getGlobalEncoding(op.getResult().getType());
    ASSERT_TRUE(encoding);
    EXPECT_EQ(encoding.getSbp()[0].str(), "S(0)");
    EXPECT_EQ(encoding.getRole(), sbp::Role::input);
    EXPECT_EQ(encoding.getPlacement().getNumRanks(), 2);
    ++inputs;
  });
  EXPECT_EQ(inputs, 2);
  (*module)->walk([&](nn::VariableOp op) {
    auto encoding = sbp::getGlobalEncoding(op.getResult().getType());
    ASSERT_TRUE(encoding);
    EXPECT_EQ(encoding.getSbp()[0].str(), "B");
    EXPECT_EQ(encoding.getRole(), sbp::Role::param);
  });
}

TEST(GraphBuilderTest, MlpRoundTripsThroughText) {
  MLIRContext context;
  GraphBuilder builder(context, "mlp", GraphBuilder::cpuPlacement(context, 4));
  auto module = builder.finish({examples::buildMlp(builder, {})});
  ASSERT_TRUE(succeeded(module)) << builder.error();
  std::string text = print(**module);
  auto parsed = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(print(*parsed), text);
}

/// Expected GPT-2 parameter names and shapes, written out by hand.
std::map<std::string, std::vector<int64_t>>
expectedGpt2Shapes(int64_t vocab, int64_t seq, int64_t embed, int layers) {
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"wte.weight", {vocab, embed}},
      {"wpe.weight", {seq, embed}},
      {"ln_f.weight", {embed}},
      {"ln_f.bias", {embed}},
  };
  for (int i = 0; i < layers; ++i) {
    std::string p = "h." + std::to_string(i) + ".";
    shapes[p + "ln_1.weight"] = {embed};
    shapes[p + "ln_1.bias"] = {embed};
    shapes[p + "attn.c_attn.weight"] = {3, embed, embed};
    shapes[p + "attn.c_attn.bias"] = {3, embed};
    shapes[p + "attn.c_proj.weight"] = {embed, embed};
    shapes[p + "attn.c_proj.bias"] = {embed};
    shapes[p + "ln_2.weight"] = {embed};
    shapes[p + "ln_2.bias"] = {embed};
    shapes[p + "mlp.c_fc.weight"] = {4 * embed, embed};
    shapes[p + "mlp.c_fc.bias"] = {4 * embed};
    shapes[p + "mlp.c_proj.weight"] = {embed, 4 * embed};
    shapes[p + "mlp.c_proj.bias"] = {embed};
  }
  return shapes;
}

TEST(GraphBuilderTest, TwoLayerGpt2HasEveryParameter) {
  MLIRContext context;
  GraphBuilder builder(context, "gpt2", GraphBuilder::cpuPlacement(context, 4));
  auto config = Gpt2Config::preset("tiny");
  ASSERT_TRUE(config);
  ASSERT_EQ(config->layers, 2);
  Value loss = buildGpt2(builder, *config);
  auto module = builder.finish({loss});
  ASSERT_TRUE(succeeded(module)) << builder.error();

  auto variables = variablesOf(**module);
  auto expected = expectedGpt2Shapes(512, 32, 64, 2);
  ASSERT_EQ(variables.size(), expected.size());
  EXPECT_EQ(variables.size(), 28u);
  for (const auto &[name, shape] : expected) {
    ASSERT_TRUE(variables.count(name)) << "missing " << name;
    EXPECT_EQ(variables[name].shape, shape) << name;
  }
  // 512*64 + 32*64 + 2 * (12*64*64 + 13*64) + 2*64, by hand.
  EXPECT_EQ(numElements(variables), 134912);
  EXPECT_EQ(config->numParameters(), 134912);

  // The causal attention softmax is there, once per layer.
  int causalSoftmaxes = 0;
  (*module)->walk([&](nn::SoftmaxOp op) { causalSoftmaxes += op.getCausal(); });
  EXPECT_EQ(causalSoftmaxes, 2);
}

TEST(GraphBuilderTest, Gpt2SmallHasTheKnownParameterCount) {
  MLIRContext context;
  GraphBuilder builder(context, "gpt2", GraphBuilder::cpuPlacement(context, 8));
  auto config = Gpt2Config::preset("small");
  ASSERT_TRUE(config);
  auto module = builder.finish({buildGpt2(builder, *config)});
  ASSERT_TRUE(succeeded(module)) << builder.error();
  // Hugging Face's GPT2LMHeadModel("gpt2") has 124,439,808 parameters.
  EXPECT_EQ(numElements(variablesOf(**module)), 124439808);
  EXPECT_EQ(config->checkedNumParameters(), 124439808);
}

TEST(GraphBuilderTest, Gpt2ParameterCountOverflowIsDetected) {
  Gpt2Config config;
  // 12 layers of 12 h^2 with h = 2^32: the product wraps int64.
  config.embed = int64_t(1) << 32;
  EXPECT_EQ(config.checkedNumParameters(), std::nullopt);
  config.embed = 768;
  config.vocab = int64_t(1) << 62;
  EXPECT_EQ(config.checkedNumParameters(), std::nullopt);
  // The largest tensors name every size product the builder computes:
  // the attention scores are batch * heads * seq * seq.
  config = *Gpt2Config::preset("tiny");
  bool scores = false;
  for (const auto &tensor : config.largestTensors())
    if (tensor.name == "attention scores") {
      scores = true;
      EXPECT_EQ(tensor.factors, (llvm::SmallVector<int64_t, 4>{4, 4, 32, 32}));
    }
  EXPECT_TRUE(scores);
}

TEST(GraphBuilderTest, ShapeErrorIsReportedNotFatal) {
  MLIRContext context;
  GraphBuilder builder(context, "bad", GraphBuilder::cpuPlacement(context, 2));
  Value x = builder.input("x", {8, 16}, builder.f32());
  Value w = builder.variable("w", {4, 32});
  Value y = builder.matmul(x, w, false, true);
  EXPECT_FALSE(y);
  EXPECT_THAT(builder.error(),
              HasSubstr("'nn.matmul' op contracting dims differ: lhs has 16, "
                        "rhs has 32"));
  // Later steps do nothing and finish() reports the first error.
  EXPECT_FALSE(builder.relu(y));
  EXPECT_TRUE(failed(builder.finish({y})));
  EXPECT_THAT(builder.error(), HasSubstr("contracting dims differ"));
}

TEST(GraphBuilderTest, DuplicateNameIsAnError) {
  MLIRContext context;
  GraphBuilder builder(context, "bad", GraphBuilder::cpuPlacement(context, 2));
  builder.variable("w", {4});
  EXPECT_FALSE(builder.variable("w", {4}));
  EXPECT_EQ(builder.error(), "name 'w' is already used in graph");
}

TEST(GraphBuilderTest, ReshapeElementCountMismatch) {
  MLIRContext context;
  GraphBuilder builder(context, "bad", GraphBuilder::cpuPlacement(context, 1));
  Value x = builder.variable("w", {4, 6});
  EXPECT_TRUE(builder.reshape(x, {24}));
  EXPECT_FALSE(builder.reshape(x, {25}));
  EXPECT_THAT(builder.error(), HasSubstr("element counts differ"));
}

TEST(GraphBuilderTest, DropoutsShareOneStepAndKeepTheWholeSeed) {
  MLIRContext context;
  GraphBuilder builder(context, "drop", GraphBuilder::cpuPlacement(context, 2));
  Value x = builder.input("x", {8, 16}, builder.f32());
  Value a = builder.dropout(x, 0.25, ~uint64_t(0), /*stream=*/0);
  Value b = builder.dropout(a, 0.5, ~uint64_t(0), /*stream=*/1);
  ASSERT_TRUE(b) << builder.error();
  auto first = a.getDefiningOp<nn::DropoutOp>();
  auto second = b.getDefiningOp<nn::DropoutOp>();
  EXPECT_EQ(first.getStep(), second.getStep());
  EXPECT_EQ(first.getStep().getDefiningOp(),
            &first->getBlock()->front()); // The step comes first.
  EXPECT_EQ(first.getSeed(), ~uint64_t(0));
  EXPECT_EQ(second.getStream(), 1u);
  // p outside [0, 1) is the verifier's error.
  EXPECT_FALSE(builder.dropout(b, 1.0, 0, 2));
  EXPECT_THAT(builder.error(), HasSubstr("p must lie in [0, 1), got 1"));
}

TEST(GraphBuilderTest, UnknownGpt2PresetIsRejected) {
  EXPECT_FALSE(Gpt2Config::preset("huge"));
  auto xl = Gpt2Config::preset("xl");
  ASSERT_TRUE(xl);
  // DeepSpeed's 1.5B Megatron GPT-2: 48 layers of width 1600.
  EXPECT_EQ(xl->layers, 48);
  EXPECT_EQ(xl->embed, 1600);
}

} // namespace
