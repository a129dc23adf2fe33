//===- autodiff_test.cc - zero-autodiff on the example models -------------===//

#include "compiler/builder/Gpt2Builder.h"
#include "compiler/builder/GraphBuilder.h"
#include "examples/mlp/Mlp.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace mlir;
using namespace zerosbp;

namespace {

OwningOpRef<ModuleOp> buildMlp(MLIRContext &context) {
  GraphBuilder builder(context, "mlp", GraphBuilder::cpuPlacement(context, 4));
  Value loss = examples::buildMlp(builder, examples::MlpConfig());
  auto module = builder.finish({loss});
  EXPECT_TRUE(succeeded(module)) << builder.error();
  return succeeded(module) ? std::move(*module) : nullptr;
}

OwningOpRef<ModuleOp> buildGpt2Tiny(MLIRContext &context) {
  GraphBuilder builder(context, "gpt2", GraphBuilder::cpuPlacement(context, 4));
  auto config = Gpt2Config::preset("tiny");
  EXPECT_TRUE(config.has_value());
  Value loss = buildGpt2(builder, *config);
  auto module = builder.finish({loss});
  EXPECT_TRUE(succeeded(module)) << builder.error();
  return succeeded(module) ? std::move(*module) : nullptr;
}

void freeze(ModuleOp module, StringRef name) {
  bool found = false;
  module.walk([&](nn::VariableOp variable) {
    if (variable.getName() == name) {
      variable.setFrozen(true);
      found = true;
    }
  });
  EXPECT_TRUE(found) << name.str();
}

/// Runs zero-autodiff (the pass manager verifies its output); returns the
/// first diagnostic, empty on success.
std::string runAutodiff(ModuleOp module) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (diagnostics.empty())
      diagnostics = diag.str();
    return success();
  });
  PassManager pm(module.getContext());
  pm.addNestedPass<func::FuncOp>(createZeroAutodiff());
  if (failed(pm.run(module)) && diagnostics.empty())
    diagnostics = "zero-autodiff failed without a diagnostic";
  return diagnostics;
}

/// Parameters that train: role param and not frozen.
std::map<std::string, RankedTensorType> trainableParameters(ModuleOp module) {
  std::map<std::string, RankedTensorType> params;
  module.walk([&](nn::VariableOp variable) {
    if (variable.getRole() == sbp::Role::param && !variable.getFrozen())
      params[variable.getName().str()] = variable.getResult().getType();
  });
  return params;
}

std::map<std::string, std::vector<RankedTensorType>>
gradients(ModuleOp module) {
  std::map<std::string, std::vector<RankedTensorType>> grads;
  module.walk([&](nn::GradientOp gradient) {
    grads[gradient.getName().str()].push_back(gradient.getValue().getType());
  });
  return grads;
}

/// Every trainable parameter has exactly one gradient of its shape and
/// element type, as a plain tensor, and nothing else has one.
void expectOneGradientPerParameter(ModuleOp module, size_t numParameters) {
  auto params = trainableParameters(module);
  auto grads = gradients(module);
  EXPECT_EQ(params.size(), numParameters);
  EXPECT_EQ(grads.size(), params.size());
  for (const auto &[name, paramType] : params) {
    auto it = grads.find(name);
    if (it == grads.end()) {
      ADD_FAILURE() << "no gradient for " << name;
      continue;
    }
    ASSERT_EQ(it->second.size(), 1u) << name;
    RankedTensorType gradType = it->second.front();
    EXPECT_EQ(gradType.getShape(), paramType.getShape()) << name;
    EXPECT_EQ(gradType.getElementType(), paramType.getElementType()) << name;
    EXPECT_FALSE(gradType.getEncoding()) << name;
  }
}

/// The function still returns the 0-D loss.
void expectReturnsLoss(ModuleOp module) {
  auto func = *module.getOps<func::FuncOp>().begin();
  ASSERT_EQ(func.getNumResults(), 1u);
  EXPECT_EQ(cast<RankedTensorType>(func.getResultTypes()[0]).getRank(), 0);
}

TEST(AutodiffTest, MlpGetsOneGradientPerParameter) {
  MLIRContext context;
  auto module = buildMlp(context);
  ASSERT_TRUE(module);
  ASSERT_EQ(runAutodiff(*module), "");
  EXPECT_TRUE(succeeded(verify(*module)));
  expectOneGradientPerParameter(*module, 4);
  expectReturnsLoss(*module);
}

TEST(AutodiffTest, Gpt2TinyGetsOneGradientPerParameter) {
  MLIRContext context;
  auto module = buildGpt2Tiny(context);
  ASSERT_TRUE(module);
  ASSERT_EQ(runAutodiff(*module), "");
  EXPECT_TRUE(succeeded(verify(*module)));
  // wte, wpe, ln_f (2) and 12 per layer.
  expectOneGradientPerParameter(*module, 28);
  expectReturnsLoss(*module);
}

TEST(AutodiffTest, FrozenMlpParameterGetsNoGradient) {
  MLIRContext context;
  auto module = buildMlp(context);
  ASSERT_TRUE(module);
  freeze(*module, "fc1.weight");
  ASSERT_EQ(runAutodiff(*module), "");
  EXPECT_TRUE(succeeded(verify(*module)));
  expectOneGradientPerParameter(*module, 3);
  EXPECT_EQ(gradients(*module).count("fc1.weight"), 0u);
}

TEST(AutodiffTest, FrozenTiedEmbeddingGetsNoGradient) {
  MLIRContext context;
  auto module = buildGpt2Tiny(context);
  ASSERT_TRUE(module);
  freeze(*module, "wte.weight");
  ASSERT_EQ(runAutodiff(*module), "");
  EXPECT_TRUE(succeeded(verify(*module)));
  expectOneGradientPerParameter(*module, 27);
  EXPECT_EQ(gradients(*module).count("wte.weight"), 0u);
}

TEST(AutodiffTest, NonScalarReturnIsAnError) {
  MLIRContext context;
  GraphBuilder builder(context, "features",
                       GraphBuilder::cpuPlacement(context, 2));
  Value x = builder.input("x", {4, 8}, builder.f32());
  Value h = builder.linear("fc", x, 2);
  auto module = builder.finish({h});
  ASSERT_TRUE(succeeded(module)) << builder.error();
  EXPECT_EQ(runAutodiff(**module),
            "zero-autodiff: function 'features' must return exactly one 0-D "
            "float tensor (the loss), but returns (tensor<4x2xf32>)");
}

} // namespace
