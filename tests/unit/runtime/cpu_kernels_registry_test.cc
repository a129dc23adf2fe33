//===- cpu_kernels_registry_test.cc - kernel lookup and precondition errors
//===//
//
// Every op a plan can name has a CPU kernel (the list below, and the ops
// NNOps.td defines), lookups of other names fail, and kernels reject bad
// operands with a one-line RuntimeError that names the op.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace zerosbp::runtime::test {
namespace {

/// Whether `text` contains `part`.
::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << text << "' does not contain '" << part << "'";
}

/// The ops of NNOps.td that may appear in a plan: all but nn.variable,
/// nn.input, nn.step, nn.assign and nn.gradient.
const char *const kPlanOps[] = {
    "nn.fill",
    "nn.matmul",
    "nn.batch_matmul",
    "nn.matmul_bias",
    "nn.matmul_add",
    "nn.matmul_bias_gelu",
    "nn.attention",
    "nn.add",
    "nn.sub",
    "nn.mul",
    "nn.div",
    "nn.bias_add",
    "nn.relu",
    "nn.gelu",
    "nn.tanh",
    "nn.scale",
    "nn.cast",
    "nn.dropout",
    "nn.quantize",
    "nn.dequantize",
    "nn.layer_norm",
    "nn.softmax",
    "nn.embedding",
    "nn.cross_entropy",
    "nn.reshape",
    "nn.pad",
    "nn.transpose",
    "nn.slice",
    "nn.split",
    "nn.concat",
    "nn.reduce_sum",
    "nn.reduce_mean",
    "nn.relu_grad",
    "nn.gelu_grad",
    "nn.tanh_grad",
    "nn.layer_norm_grad",
    "nn.softmax_grad",
    "nn.attention_grad",
    "nn.cross_entropy_grad",
    "nn.cross_entropy_max",
    "nn.cross_entropy_sums",
    "nn.cross_entropy_loss",
    "nn.cross_entropy_split_grad",
    "nn.embedding_grad",
    "nn.nonfinite_count",
    "nn.select",
    "nn.loss_scale_update",
    "nn.clip_coefficient",
    "nn.sgd",
    "nn.adam",
    "nn.adamw",
};

const std::set<std::string> kNotInPlans = {"nn.variable", "nn.input", "nn.step",
                                           "nn.assign", "nn.gradient"};

TEST(CpuKernelsRegistry, EveryPlanOpHasAKernel) {
  for (const char *op : kPlanOps)
    EXPECT_NE(findCpuKernel(op), nullptr) << op;
  std::vector<std::string_view> names = cpuKernelNames();
  EXPECT_EQ(names.size(), std::size(kPlanOps));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (std::string_view name : names)
    EXPECT_NE(findCpuKernel(name), nullptr) << name;
}

TEST(CpuKernelsRegistry, EveryOpOfNNOpsTdHasAKernel) {
  // The op definitions themselves: `def NN_AddOp : NN_BinaryOp<"add", ...`.
  std::ifstream file("dialects/nn/IR/NNOps.td");
  ASSERT_TRUE(file.good()) << "NNOps.td is not in the test's runfiles";
  std::stringstream text;
  text << file.rdbuf();
  std::string source = text.str();
  std::regex definition(R"re(def\s+NN_\w+\s*:\s*NN_\w+<\s*"(\w+)")re");
  std::set<std::string> ops;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), definition);
       it != std::sregex_iterator(); ++it)
    ops.insert("nn." + (*it)[1].str());
  EXPECT_GE(ops.size(), std::size(kPlanOps) + kNotInPlans.size());
  for (const std::string &op : ops) {
    if (kNotInPlans.count(op))
      EXPECT_EQ(findCpuKernel(op), nullptr) << op;
    else
      EXPECT_NE(findCpuKernel(op), nullptr) << op << " has no CPU kernel";
  }
}

TEST(CpuKernelsRegistry, UnknownOpsHaveNoKernel) {
  for (const char *op :
       {"nn.variable", "nn.input", "nn.step", "nn.assign", "nn.gradient",
        "shard.all_slice", "collective_start", "nn.madeup", "matmul", "", "nn.",
        "nn.adamx", "nn.transpose2"})
    EXPECT_EQ(findCpuKernel(op), nullptr) << op;
}

TEST(CpuKernelsRegistry, SetThreadsAcceptsAnyCount) {
  setCpuKernelThreads(1);
  Buffer a = randomTensor(DType::F32, {64, 64}, 1);
  Buffer c(DType::F32, {64, 64});
  runKernel("nn.matmul", {}, {a.ref, a.ref}, {c.ref});
  Buffer single(DType::F32, {64, 64});
  std::memcpy(single.ref.data, c.ref.data, c.ref.bytes());
  setCpuKernelThreads(2);
  runKernel("nn.matmul", {}, {a.ref, a.ref}, {c.ref});
  expectClose(c.values(), single.values(), 1e-6, 1e-6);
  setCpuKernelThreads(0); // Treated as 1.
}

/// Runs `op` and expects a RuntimeError whose message names the op and
/// contains every string of `parts`.
void expectError(std::string_view op, const AttrMap &attrs,
                 const std::vector<TensorRef> &operands,
                 const std::vector<TensorRef> &results,
                 std::vector<std::string> parts) {
  KernelFn kernel = findCpuKernel(op);
  ASSERT_NE(kernel, nullptr);
  try {
    kernel(attrs, operands, results);
    ADD_FAILURE() << op << " did not throw";
  } catch (const RuntimeError &error) {
    std::string message = error.what();
    EXPECT_TRUE(contains(message, std::string(op)));
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string &part : parts)
      EXPECT_TRUE(contains(message, part));
  }
}

TEST(CpuKernelsErrors, EmbeddingIdOutOfRange) {
  Buffer table = randomTensor(DType::F32, {5, 2}, 1);
  Buffer y(DType::F32, {3, 2});
  for (double id : {5.0, -1.0}) {
    Buffer ids = makeTensor(DType::I64, {3}, {0, id, 2});
    expectError("nn.embedding", {}, {table.ref, ids.ref}, {y.ref},
                {"id " + std::to_string(static_cast<int64_t>(id)), "5"});
  }
  Buffer ids32 = makeTensor(DType::I32, {3}, {0, 1, 70000});
  expectError("nn.embedding", {}, {table.ref, ids32.ref}, {y.ref},
              {"70000", "vocab 5"});
  Buffer dy = randomTensor(DType::F32, {3, 2}, 2);
  Buffer dtable(DType::F32, {5, 2});
  Buffer ids = makeTensor(DType::I64, {3}, {0, 9, 2});
  expectError("nn.embedding_grad", makeAttrs({{"vocab_size", int64_t{5}}}),
              {dy.ref, ids.ref}, {dtable.ref}, {"id 9", "vocab 5"});
}

TEST(CpuKernelsErrors, CrossEntropyLabelOutOfRange) {
  Buffer logits = randomTensor(DType::F32, {2, 4}, 3);
  Buffer labels = makeTensor(DType::I64, {2}, {1, 4});
  Buffer loss(DType::F32, {});
  expectError("nn.cross_entropy", {}, {logits.ref, labels.ref}, {loss.ref},
              {"label 4", "4 classes"});
  Buffer gradLoss = makeTensor(DType::F32, {}, {1});
  Buffer dx(DType::F32, {2, 4});
  expectError("nn.cross_entropy_grad", {},
              {gradLoss.ref, logits.ref, labels.ref}, {dx.ref}, {"label 4"});
}

TEST(CpuKernelsErrors, ShapeMismatches) {
  Buffer a = randomTensor(DType::F32, {2, 3}, 4);
  Buffer b = randomTensor(DType::F32, {4, 5}, 5);
  Buffer c(DType::F32, {2, 5});
  expectError("nn.matmul", {}, {a.ref, b.ref}, {c.ref}, {"[2, 3]", "[4, 5]"});
  Buffer wrong(DType::F32, {3, 3});
  Buffer square = randomTensor(DType::F32, {3, 3}, 6);
  expectError("nn.matmul", {}, {a.ref, square.ref}, {wrong.ref},
              {"result", "[2, 3]"});
  expectError("nn.add", {}, {a.ref, b.ref}, {c.ref}, {"broadcast"});
  Buffer gamma = randomTensor(DType::F32, {4}, 7);
  Buffer y(DType::F32, {2, 3});
  expectError("nn.layer_norm", {}, {a.ref, gamma.ref, gamma.ref}, {y.ref},
              {"gamma"});
  Buffer batchA = randomTensor(DType::F32, {2, 3, 4}, 8);
  Buffer batchB = randomTensor(DType::F32, {3, 4, 5}, 9);
  Buffer batchC(DType::F32, {2, 3, 5});
  expectError("nn.batch_matmul", {}, {batchA.ref, batchB.ref}, {batchC.ref},
              {"batch"});
  expectError("nn.softmax", makeAttrs({{"causal", true}}), {a.ref}, {y.ref},
              {"causal"});
  expectError("nn.transpose", makeAttrs({{"permutation", ints({0, 0})}}),
              {a.ref}, {y.ref}, {"permutation"});
  expectError("nn.slice",
              makeAttrs({{"offsets", ints({1, 0})}, {"sizes", ints({2, 3})}}),
              {a.ref}, {y.ref}, {"dim 0"});
  expectError("nn.reshape", {}, {a.ref}, {c.ref}, {"elements"});
  Buffer pieces(DType::F32, {2, 1});
  expectError("nn.split",
              makeAttrs({{"axis", int64_t{1}}, {"sizes", ints({1})}}), {a.ref},
              {pieces.ref}, {"sizes"});
  expectError("nn.reduce_sum", makeAttrs({{"axes", ints({2})}}), {a.ref},
              {c.ref}, {"axis 2"});
  Buffer grad = randomTensor(DType::F32, {3, 2}, 10);
  expectError("nn.sgd", makeAttrs({{"lr", 0.1}}), {a.ref, grad.ref}, {a.ref},
              {"grad"});
}

TEST(CpuKernelsErrors, WrongTypesAndCounts) {
  Buffer a = randomTensor(DType::F32, {2, 3}, 11);
  Buffer ints64(DType::I64, {2, 3});
  Buffer y(DType::F32, {2, 3});
  expectError("nn.relu", {}, {ints64.ref}, {y.ref}, {"i64"});
  expectError("nn.relu", {}, {a.ref, a.ref}, {y.ref}, {"operands"});
  Buffer table = randomTensor(DType::F32, {4, 3}, 12);
  Buffer floatIds(DType::F32, {2});
  Buffer rows(DType::F32, {2, 3});
  expectError("nn.embedding", {}, {table.ref, floatIds.ref}, {rows.ref},
              {"ids"});
  Buffer param = randomTensor(DType::F32, {3}, 13);
  Buffer zeroStep = makeTensor(DType::I64, {}, {0});
  expectError("nn.adam", makeAttrs({{"lr", 0.1}}),
              {param.ref, param.ref, param.ref, param.ref, zeroStep.ref},
              {param.ref, param.ref, param.ref}, {"step 0"});
  // A missing attribute without a default names the attribute.
  try {
    runKernel("nn.scale", {}, {a.ref}, {y.ref});
    ADD_FAILURE() << "nn.scale without factor did not throw";
  } catch (const RuntimeError &error) {
    EXPECT_TRUE(contains(error.what(), "factor"));
  }
}

} // namespace
} // namespace zerosbp::runtime::test
