//===- cuda_kernel_registry_test.cc - CUDA kernels by name, their checks --===//
//
// Needs no GPU. Every op with a CPU kernel has a CUDA kernel and no other
// name has one; and the CUDA kernels reject bad operands and attributes
// before touching the device, with the CPU kernels' messages word for word.
// The tensors here are host memory: a CUDA kernel that failed to reject
// them would go on to CUDA calls and fail differently (or not at all).
// Where there is no device, those calls fail with RuntimeErrors that name
// the op and the CUDA error.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/gpu_test_util.h"

#include <algorithm>
#include <set>

namespace zerosbp::runtime::gputest {
namespace {

TEST(CudaKernelRegistry, SameOpsAsTheCpuKernels) {
  std::vector<std::string_view> cpu = cpuKernelNames();
  std::vector<std::string_view> cuda = cudaKernelNames();
  EXPECT_TRUE(std::is_sorted(cuda.begin(), cuda.end()));
  for (std::string_view name : cpu)
    EXPECT_NE(findCudaKernel(name), nullptr)
        << name << " has a CPU kernel but no CUDA kernel";
  for (std::string_view name : cuda) {
    EXPECT_NE(findCudaKernel(name), nullptr) << name;
    EXPECT_NE(findCpuKernel(name), nullptr)
        << name << " has a CUDA kernel but no CPU kernel";
  }
  EXPECT_EQ(cuda, cpu);
  // No two ops share a kernel by mistake.
  std::set<CudaKernelFn> kernels;
  for (std::string_view name : cuda)
    kernels.insert(findCudaKernel(name));
  EXPECT_EQ(kernels.size(), cuda.size());
}

TEST(CudaKernelRegistry, UnknownOpsHaveNoKernel) {
  for (const char *op :
       {"nn.variable", "nn.input", "nn.step", "nn.assign", "nn.gradient",
        "shard.all_slice", "collective_start", "nn.madeup", "matmul", "", "nn.",
        "nn.adamx", "nn.transpose2", "nn.adam "})
    EXPECT_EQ(findCudaKernel(op), nullptr) << op;
}

TEST(CudaKernelChecks, EveryKernelRejectsACallWithoutTensors) {
  for (std::string_view op : cudaKernelNames())
    expectRejected(op, {}, {}, {});
}

TEST(CudaKernelChecks, ElementwiseAndMatmul) {
  HostTensor a = randomTensor(DType::F32, {2, 3}, 1);
  HostTensor b = randomTensor(DType::F32, {4, 5}, 2);
  HostTensor c(DType::F32, {2, 5});
  HostTensor square = randomTensor(DType::F32, {3, 3}, 3);
  HostTensor wrong(DType::F32, {3, 3});
  HostTensor ids = makeTensor(DType::I64, {2}, {0, 1});
  HostTensor batchA = randomTensor(DType::F32, {2, 3, 4}, 4);
  HostTensor batchB = randomTensor(DType::F32, {3, 4, 5}, 5);
  HostTensor batchC(DType::F32, {2, 3, 5});
  HostTensor row = randomTensor(DType::F32, {4}, 6);

  expectRejected("nn.matmul", {}, {&a, &b}, {&c});
  expectRejected("nn.matmul", {}, {&a, &square}, {&wrong});
  expectRejected("nn.matmul", makeAttrs({{"transpose_lhs", true}}),
                 {&a, &square}, {&c});
  expectRejected("nn.matmul", {}, {&batchA, &batchB}, {&c});
  expectRejected("nn.matmul", {}, {&ids, &square}, {&c});
  expectRejected("nn.batch_matmul", {}, {&batchA, &batchB}, {&batchC});
  expectRejected("nn.batch_matmul", {}, {&a, &square}, {&wrong});
  for (const char *op : {"nn.add", "nn.sub", "nn.mul", "nn.div"}) {
    expectRejected(op, {}, {&a, &b}, {&c});
    expectRejected(op, {}, {&a, &a}, {&c});
    expectRejected(op, {}, {&a, &ids}, {&a});
  }
  expectRejected("nn.bias_add", {}, {&a, &row}, {&a});
  expectRejected("nn.scale", {}, {&a}, {&a});
  expectRejected("nn.scale", makeAttrs({{"factor", 2.0}}), {&a}, {&c});
  expectRejected("nn.cast", {}, {&ids}, {&a});
  expectRejected("nn.cast", {}, {&a}, {&c});
  for (const char *op : {"nn.relu", "nn.gelu", "nn.tanh"}) {
    expectRejected(op, {}, {&ids}, {&a});
    expectRejected(op, {}, {&a}, {&c});
    expectRejected(op, {}, {&a, &a}, {&a});
  }
  for (const char *op : {"nn.relu_grad", "nn.gelu_grad", "nn.tanh_grad"}) {
    expectRejected(op, {}, {&a, &c}, {&a});
    expectRejected(op, {}, {&a, &a}, {&c});
    expectRejected(op, {}, {&a, &ids}, {&a});
  }
}

TEST(CudaKernelChecks, Dropout) {
  HostTensor a = randomTensor(DType::F32, {2, 3}, 1);
  HostTensor c(DType::F32, {2, 5});
  HostTensor step = makeTensor(DType::I64, {}, {1});
  HostTensor floatStep = makeTensor(DType::F32, {}, {1});
  AttrMap good =
      makeAttrs({{"p", 0.5}, {"seed", int64_t(1)}, {"stream", int64_t(0)}});
  expectRejected("nn.dropout", good, {&a, &step}, {&c});
  expectRejected("nn.dropout", good, {&a, &floatStep}, {&a});
  expectRejected("nn.dropout", good, {&a}, {&a});
  AttrMap p = good;
  p.set("p", 1.0);
  expectRejected("nn.dropout", p, {&a, &step}, {&a});
  AttrMap outside = good;
  outside.set("global_shape", std::vector<int64_t>{2, 3});
  outside.set("shard_offsets", std::vector<int64_t>{1, 0});
  expectRejected("nn.dropout", outside, {&a, &step}, {&a});
}

TEST(CudaKernelChecks, RowsEmbeddingAndLoss) {
  HostTensor x = randomTensor(DType::F32, {2, 3}, 1);
  HostTensor y(DType::F32, {2, 3});
  HostTensor gamma4 = randomTensor(DType::F32, {4}, 2);
  HostTensor gamma3 = randomTensor(DType::F32, {3}, 3);
  HostTensor wrong(DType::F32, {3, 2});
  HostTensor scalar = makeTensor(DType::F32, {}, {1.0});
  HostTensor table = randomTensor(DType::F32, {5, 3}, 4);
  HostTensor ids = makeTensor(DType::I64, {2}, {0, 1});
  HostTensor floatIds = makeTensor(DType::F32, {2}, {0, 1});
  HostTensor rows(DType::F32, {2, 3});
  HostTensor labels = makeTensor(DType::I64, {2}, {0, 1});
  HostTensor labels3 = makeTensor(DType::I64, {3}, {0, 1, 2});
  HostTensor loss(DType::F32, {});
  HostTensor pair(DType::F32, {2});

  expectRejected("nn.layer_norm", {}, {&x, &gamma4, &gamma3}, {&y});
  expectRejected("nn.layer_norm", {}, {&x, &gamma3, &gamma4}, {&y});
  expectRejected("nn.layer_norm", {}, {&x, &gamma3, &gamma3}, {&wrong});
  expectRejected("nn.layer_norm", {}, {&scalar, &gamma3, &gamma3}, {&scalar});
  expectRejected("nn.layer_norm_grad", {}, {&x, &x, &gamma4},
                 {&y, &gamma4, &gamma4});
  expectRejected("nn.layer_norm_grad", {}, {&x, &x, &gamma3},
                 {&y, &gamma4, &gamma3});
  expectRejected("nn.layer_norm_grad", {}, {&x, &x, &gamma3},
                 {&y, &gamma3, &gamma4});
  expectRejected("nn.layer_norm_grad", {}, {&wrong, &x, &gamma3},
                 {&y, &gamma3, &gamma3});

  expectRejected("nn.softmax", makeAttrs({{"causal", true}}), {&x}, {&y});
  expectRejected("nn.softmax", makeAttrs({{"axis", int64_t{2}}}), {&x}, {&y});
  expectRejected("nn.softmax", {}, {&x}, {&wrong});
  expectRejected("nn.softmax", {}, {&scalar}, {&scalar});
  expectRejected("nn.softmax_grad", {}, {&x, &wrong}, {&y});
  expectRejected("nn.softmax_grad", makeAttrs({{"axis", int64_t{-3}}}),
                 {&x, &x}, {&y});

  expectRejected("nn.embedding", {}, {&gamma3, &ids}, {&rows});
  expectRejected("nn.embedding", {}, {&table, &floatIds}, {&rows});
  expectRejected("nn.embedding", {}, {&table, &ids}, {&wrong});
  expectRejected("nn.embedding", {}, {&ids, &ids}, {&rows});
  expectRejected("nn.embedding_grad", {}, {&rows, &ids}, {&table});
  expectRejected("nn.embedding_grad", makeAttrs({{"vocab_size", int64_t{4}}}),
                 {&rows, &ids}, {&table});
  expectRejected("nn.embedding_grad", makeAttrs({{"vocab_size", int64_t{5}}}),
                 {&wrong, &ids}, {&table});
  expectRejected("nn.embedding_grad", makeAttrs({{"vocab_size", int64_t{5}}}),
                 {&rows, &floatIds}, {&table});
  // A split table's rows [6, 11) do not lie in a vocabulary of 10.
  AttrMap outside = makeAttrs(
      {{"global_shape", ints({10, 3})}, {"shard_offsets", ints({6, 0})}});
  expectRejected("nn.embedding", outside, {&table, &ids}, {&rows});
  outside.set("vocab_size", int64_t{5});
  expectRejected("nn.embedding_grad", outside, {&rows, &ids}, {&table});

  expectRejected("nn.cross_entropy", {}, {&x, &labels3}, {&loss});
  expectRejected("nn.cross_entropy", {}, {&x, &floatIds}, {&loss});
  expectRejected("nn.cross_entropy", {}, {&x, &labels}, {&pair});
  expectRejected("nn.cross_entropy", makeAttrs({{"count", int64_t{0}}}),
                 {&x, &labels}, {&loss});
  expectRejected("nn.cross_entropy", {}, {&scalar, &labels}, {&loss});
  expectRejected("nn.cross_entropy_grad", {}, {&pair, &x, &labels}, {&y});
  expectRejected("nn.cross_entropy_grad", {}, {&scalar, &x, &labels}, {&wrong});
  expectRejected("nn.cross_entropy_grad", {}, {&scalar, &x, &labels3}, {&y});
  expectRejected("nn.cross_entropy_grad", {}, {&ids, &x, &labels}, {&y});
}

TEST(CudaKernelChecks, VocabParallelLoss) {
  HostTensor logits = randomTensor(DType::F32, {3, 5}, 1);
  HostTensor max = randomTensor(DType::F32, {3}, 2);
  HostTensor sumexp = randomTensor(DType::F32, {3}, 3, 1.0, 2.0);
  HostTensor labels = makeTensor(DType::I64, {3}, {0, 1, 2});
  HostTensor floatLabels = makeTensor(DType::F32, {3}, {0, 1, 2});
  HostTensor gradLoss = makeTensor(DType::F32, {}, {1});
  HostTensor four(DType::F32, {4});
  HostTensor half(DType::F16, {3});
  HostTensor rows(DType::F32, {3});
  HostTensor loss(DType::F32, {});
  HostTensor dx(DType::F32, {3, 5});
  HostTensor wide(DType::F32, {3, 6});
  AttrMap outside = makeAttrs(
      {{"global_shape", ints({3, 10})}, {"shard_offsets", ints({0, 6})}});
  AttrMap zeroCount = makeAttrs({{"count", int64_t{0}}});

  expectRejectedNamingOp("nn.cross_entropy_max", {}, {&logits}, {&four});
  expectRejectedNamingOp("nn.cross_entropy_max", {}, {&logits}, {&half});
  expectRejectedNamingOp("nn.cross_entropy_max", {}, {&gradLoss}, {&loss});
  expectRejectedNamingOp("nn.cross_entropy_sums", {}, {&logits, &four, &labels},
                         {&rows, &rows});
  expectRejectedNamingOp("nn.cross_entropy_sums", {},
                         {&logits, &max, &floatLabels}, {&rows, &rows});
  expectRejectedNamingOp("nn.cross_entropy_sums", {}, {&logits, &max, &labels},
                         {&half, &rows});
  expectRejectedNamingOp("nn.cross_entropy_sums", outside,
                         {&logits, &max, &labels}, {&rows, &rows});
  expectRejectedNamingOp("nn.cross_entropy_loss", {}, {&max, &four, &rows},
                         {&loss});
  expectRejectedNamingOp("nn.cross_entropy_loss", {}, {&max, &sumexp, &rows},
                         {&four});
  expectRejectedNamingOp("nn.cross_entropy_loss", zeroCount,
                         {&max, &sumexp, &rows}, {&loss});
  expectRejectedNamingOp("nn.cross_entropy_split_grad", {},
                         {&gradLoss, &logits, &max, &sumexp, &labels}, {&wide});
  expectRejectedNamingOp("nn.cross_entropy_split_grad", {},
                         {&four, &logits, &max, &sumexp, &labels}, {&dx});
  expectRejectedNamingOp("nn.cross_entropy_split_grad", zeroCount,
                         {&gradLoss, &logits, &max, &sumexp, &labels}, {&dx});
  expectRejectedNamingOp("nn.cross_entropy_split_grad", outside,
                         {&gradLoss, &logits, &max, &sumexp, &labels}, {&dx});
}

TEST(CudaKernelChecks, ShapeOpsAndReductions) {
  HostTensor x = randomTensor(DType::F32, {2, 3}, 1);
  HostTensor y(DType::F32, {2, 3});
  HostTensor flat(DType::F32, {7});
  HostTensor asInts(DType::I32, {6});
  HostTensor padded(DType::F32, {3, 5});
  HostTensor part(DType::F32, {2, 1});
  HostTensor row(DType::F32, {3});
  HostTensor wide(DType::F32, {2, 6});

  expectRejected("nn.fill", {}, {}, {&y});
  expectRejected("nn.fill", makeAttrs({{"value", 1.0}}), {&x}, {&y});
  expectRejected("nn.reshape", {}, {&x}, {&flat});
  expectRejected("nn.reshape", {}, {&x}, {&asInts});
  expectRejected("nn.pad",
                 makeAttrs({{"low", ints({0, -1})}, {"high", ints({1, 3})}}),
                 {&x}, {&padded});
  expectRejected("nn.pad",
                 makeAttrs({{"low", ints({0})}, {"high", ints({1, 2})}}), {&x},
                 {&padded});
  expectRejected("nn.pad",
                 makeAttrs({{"low", ints({0, 0})}, {"high", ints({1, 1})}}),
                 {&x}, {&padded});
  expectRejected("nn.transpose", makeAttrs({{"permutation", ints({0, 0})}}),
                 {&x}, {&y});
  expectRejected("nn.transpose", makeAttrs({{"permutation", ints({1, 0})}}),
                 {&x}, {&y});
  expectRejected("nn.transpose", makeAttrs({{"permutation", ints({1, 0, 2})}}),
                 {&x}, {&y});
  expectRejected(
      "nn.slice",
      makeAttrs({{"offsets", ints({1, 1})}, {"sizes", ints({2, 1})}}), {&x},
      {&part});
  expectRejected("nn.slice",
                 makeAttrs({{"offsets", ints({0, 1})},
                            {"sizes", ints({2, 2})},
                            {"strides", ints({1, 2})}}),
                 {&x}, {&part});
  expectRejected(
      "nn.slice",
      makeAttrs({{"offsets", ints({0, 0})}, {"sizes", ints({2, 2})}}), {&x},
      {&part});
  expectRejected("nn.split",
                 makeAttrs({{"axis", int64_t{1}}, {"sizes", ints({1, 1})}}),
                 {&x}, {&part, &part});
  expectRejected("nn.split",
                 makeAttrs({{"axis", int64_t{2}}, {"sizes", ints({1, 2})}}),
                 {&x}, {&part, &part});
  expectRejected("nn.concat", makeAttrs({{"axis", int64_t{1}}}), {&x, &row},
                 {&wide});
  expectRejected("nn.concat", makeAttrs({{"axis", int64_t{1}}}), {&x, &x},
                 {&y});
  expectRejected("nn.concat", makeAttrs({{"axis", int64_t{3}}}), {&x, &x},
                 {&wide});

  for (const char *op : {"nn.reduce_sum", "nn.reduce_mean"}) {
    expectRejected(op, makeAttrs({{"axes", ints({2})}}), {&x}, {&row});
    expectRejected(op, makeAttrs({{"axes", ints({0, -2})}}), {&x}, {&row});
    expectRejected(op, makeAttrs({{"axes", ints({0})}}), {&x}, {&part});
    expectRejected(op, makeAttrs({{"axes", ints({0})}, {"keepdim", true}}),
                   {&x}, {&row});
    expectRejected(op, {}, {&x}, {&row});
  }
  expectRejected("nn.reduce_mean",
                 makeAttrs({{"axes", ints({0})}, {"count", int64_t{0}}}), {&x},
                 {&row});
  expectRejected("nn.nonfinite_count", {}, {&x}, {&row});
  expectRejected("nn.nonfinite_count", {}, {&asInts}, {&row});
}

TEST(CudaKernelChecks, OptimizerStep) {
  HostTensor param = randomTensor(DType::F32, {5}, 1);
  HostTensor grad = randomTensor(DType::F32, {5}, 2);
  HostTensor longer = randomTensor(DType::F32, {6}, 3);
  HostTensor state(DType::F32, {5});
  HostTensor step = makeTensor(DType::I64, {}, {1});
  HostTensor floatStep = makeTensor(DType::F32, {}, {1});
  HostTensor ints64(DType::I64, {5});
  HostTensor scalar = makeTensor(DType::F32, {}, {1});
  HostTensor pair(DType::F32, {2});
  AttrMap lr = makeAttrs({{"lr", 0.1}});

  expectRejected("nn.sgd", lr, {&param, &longer}, {&param});
  expectRejected("nn.sgd", lr, {&param, &grad}, {&longer});
  expectRejected("nn.sgd", {}, {&param, &grad}, {&param});
  expectRejected("nn.sgd", lr, {&ints64, &ints64}, {&ints64});
  for (const char *op : {"nn.adam", "nn.adamw"}) {
    expectRejected(op, lr, {&param, &grad, &state, &state, &floatStep},
                   {&param, &state, &state});
    expectRejected(op, lr, {&param, &grad, &state, &longer, &step},
                   {&param, &state, &state});
    expectRejected(op, lr, {&param, &grad, &state, &state, &step},
                   {&param, &state, &longer});
    expectRejected(op, {}, {&param, &grad, &state, &state, &step},
                   {&param, &state, &state});
  }
  expectRejected("nn.clip_coefficient", makeAttrs({{"max_norm", 1.0}}), {&pair},
                 {&scalar});
  expectRejected("nn.clip_coefficient", makeAttrs({{"max_norm", 1.0}}),
                 {&scalar}, {&pair});
  expectRejected("nn.clip_coefficient", {}, {&scalar}, {&scalar});
  expectRejected("nn.select", {}, {&pair, &param, &grad}, {&state});
  expectRejected("nn.select", {}, {&scalar, &param, &longer}, {&state});
  expectRejected("nn.select", {}, {&scalar, &param, &grad}, {&longer});
  expectRejected("nn.select", {}, {&scalar, &ints64, &ints64}, {&ints64});
  AttrMap scaler = makeAttrs(
      {{"window", int64_t{0}}, {"hysteresis", int64_t{2}}, {"min_scale", 1.0}});
  expectRejected("nn.loss_scale_update", scaler,
                 {&scalar, &scalar, &scalar, &scalar},
                 {&scalar, &scalar, &scalar});
  expectRejected("nn.loss_scale_update", {},
                 {&scalar, &scalar, &scalar, &scalar},
                 {&scalar, &scalar, &scalar});
  expectRejected("nn.loss_scale_update", scaler,
                 {&scalar, &pair, &scalar, &scalar},
                 {&scalar, &scalar, &scalar});
}

TEST(CudaKernelErrors, WithoutADeviceTheFirstCudaCallFailsNamingTheOp) {
  std::string reason = noDeviceReason();
  if (reason.empty())
    GTEST_SKIP() << "a CUDA device is present: cuda_kernels_test covers "
                    "failed CUDA calls";
  HostTensor x = randomTensor(DType::F32, {4, 4}, 1);
  HostTensor y(DType::F32, {4, 4});
  HostTensor ids = makeTensor(DType::I64, {2}, {0, 1});
  HostTensor rows(DType::F32, {2, 4});
  struct Case {
    const char *op;
    std::vector<TensorRef> operands, results;
    std::string prefix; // then the CUDA or cuBLAS error
  };
  const Case cases[] = {
      {"nn.relu", {x.ref}, {y.ref}, "nn.relu: cudaError"},
      {"nn.matmul",
       {x.ref, x.ref},
       {y.ref},
       "nn.matmul: cannot create a cuBLAS handle: "},
      {"nn.embedding", {x.ref, ids.ref}, {rows.ref}, "nn.embedding: cudaError"},
  };
  for (const Case &c : cases) {
    CudaContext ctx;
    try {
      findCudaKernel(c.op)({}, c.operands, c.results, ctx);
      ADD_FAILURE() << c.op << " did not throw";
    } catch (const RuntimeError &error) {
      std::string message = error.what();
      EXPECT_EQ(message.rfind(c.prefix, 0), 0u) << message;
      EXPECT_GT(message.size(), c.prefix.size() + 4) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

} // namespace
} // namespace zerosbp::runtime::gputest
