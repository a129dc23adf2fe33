//===- cuda_kernels_backward_test.cc - gradient and optimizer CUDA kernels ===//
//
// The gradient kernels, the optimizer updates (three steps, in place as the
// planner lays them out), clipping, the loss scaler and select, each against
// its CPU kernel on the same inputs; the checks of device data (ids, labels,
// the Adam step), eager and deferred, against the CPU kernels' errors; and
// a failed CUDA call reported by op. Skips itself without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/gpu_test_util.h"

namespace zerosbp::runtime::gputest {
namespace {

class CudaKernelsBackward : public CudaDeviceTest {};

using Shape = std::vector<int64_t>;

TEST_F(CudaKernelsBackward, ActivationGradients) {
  HostTensor dy = randomTensor(DType::F32, {3001}, 1, -2.0, 2.0);
  HostTensor x = randomTensor(DType::F32, {3001}, 2, -6.0, 6.0);
  x.set(0, 0.0);
  x.set(1, -0.0);
  x.set(2, 40.0);
  x.set(3, -40.0);
  HostTensor y = randomTensor(DType::F32, {3001}, 3, -1.0, 1.0);
  HostTensor dy16 = randomTensor(DType::BF16, {9, 65}, 4);
  HostTensor x16 = randomTensor(DType::BF16, {9, 65}, 5, -4.0, 4.0);
  for (const char *op : {"nn.relu_grad", "nn.gelu_grad", "nn.tanh_grad"}) {
    const HostTensor &saved = std::string(op) == "nn.tanh_grad" ? y : x;
    expectMatchesCpu(op, {}, {&dy, &saved}, {{DType::F32, {3001}}});
    expectMatchesCpu(op, {}, {&dy, &saved}, {{DType::F32, {3001}, 0}}, {},
                     "over dy");
    expectMatchesCpu(op, {}, {&dy, &saved}, {{DType::F32, {3001}, 1}}, {},
                     "over saved");
    expectMatchesCpu(op, {}, {&dy16, &x16}, {{DType::BF16, {9, 65}}}, {},
                     "bf16");
  }
}

TEST_F(CudaKernelsBackward, LayerNormGrad) {
  // The gamma and beta gradients sum over rows: some rows, many rows (the
  // column sums split in chunks) and one row.
  const Shape shapes[] = {{33, 65}, {2, 3, 100}, {4096, 24}, {1, 257}, {5, 1}};
  unsigned seed = 1;
  for (const Shape &shape : shapes) {
    int64_t n = shape.back();
    HostTensor dy = randomTensor(DType::F32, shape, seed++);
    HostTensor x = randomTensor(DType::F32, shape, seed++, -3.0, 5.0);
    HostTensor gamma = randomTensor(DType::F32, {n}, seed++, 0.5, 1.5);
    // Sums over rows of mixed signs: an absolute term of a few f32 ulps of
    // the summed magnitudes.
    double rows = static_cast<double>(x.numel() / n);
    Tolerance tolerance{1e-6 * rows, 1e-5};
    expectMatchesCpu(
        "nn.layer_norm_grad", {}, {&dy, &x, &gamma},
        {{DType::F32, shape}, {DType::F32, {n}}, {DType::F32, {n}}}, tolerance,
        std::to_string(static_cast<int64_t>(rows)) + " rows");
  }
  HostTensor dy = randomTensor(DType::BF16, {6, 77}, 20);
  HostTensor x = randomTensor(DType::BF16, {6, 77}, 21, -3.0, 5.0);
  HostTensor gamma = randomTensor(DType::F32, {77}, 22, 0.5, 1.5);
  AttrMap epsilon = makeAttrs({{"epsilon", 1e-3}});
  expectMatchesCpu(
      "nn.layer_norm_grad", epsilon, {&dy, &x, &gamma},
      {{DType::BF16, {6, 77}}, {DType::F32, {77}}, {DType::BF16, {77}}},
      {1e-5, 1e-5}, "bf16");
  HostTensor dy32 = randomTensor(DType::F32, {6, 77}, 23);
  HostTensor x32 = randomTensor(DType::F32, {6, 77}, 24);
  expectMatchesCpu(
      "nn.layer_norm_grad", {}, {&dy32, &x32, &gamma},
      {{DType::F32, {6, 77}, 0}, {DType::F32, {77}}, {DType::F32, {77}}},
      {1e-5, 1e-5}, "dx over dy");
  expectMatchesCpu(
      "nn.layer_norm_grad", {}, {&dy32, &x32, &gamma},
      {{DType::F32, {6, 77}, 1}, {DType::F32, {77}}, {DType::F32, {77}}},
      {1e-5, 1e-5}, "dx over x");
}

TEST_F(CudaKernelsBackward, SoftmaxGrad) {
  Tolerance tolerance{1e-7, 1e-5};
  struct Case {
    Shape shape;
    AttrMap attrs;
    std::string what;
  };
  const Case cases[] = {
      {{13, 77}, {}, "last axis"},
      {{3, 17, 5}, makeAttrs({{"axis", int64_t{1}}}), "middle axis"},
      {{2, 3, 19, 19}, makeAttrs({{"causal", true}}), "causal"},
      {{2, 2000}, {}, "long rows"},
      // The warp-per-row path: rows of a multiple of 8 up to 1024.
      {{4, 64, 64}, makeAttrs({{"causal", true}}), "causal rows of 64"},
      {{3, 1024}, {}, "rows of 1024"},
      {{3, 8}, {}, "rows of 8"},
  };
  unsigned seed = 1;
  for (const Case &c : cases) {
    // y a softmax output, so the gradient has its usual magnitudes.
    HostTensor logits = randomTensor(DType::F32, c.shape, seed++, -4.0, 4.0);
    HostTensor y(DType::F32, c.shape);
    findCpuKernel("nn.softmax")(c.attrs, {logits.ref}, {y.ref});
    HostTensor dy = randomTensor(DType::F32, c.shape, seed++);
    expectMatchesCpu("nn.softmax_grad", c.attrs, {&dy, &y},
                     {{DType::F32, c.shape}}, tolerance, c.what);
    expectMatchesCpu("nn.softmax_grad", c.attrs, {&dy, &y},
                     {{DType::F32, c.shape, 0}}, tolerance,
                     c.what + " over dy");
    expectMatchesCpu("nn.softmax_grad", c.attrs, {&dy, &y},
                     {{DType::F32, c.shape, 1}}, tolerance, c.what + " over y");
  }
  HostTensor y16 = randomTensor(DType::BF16, {5, 40}, 10, 0.0, 0.05);
  HostTensor dy16 = randomTensor(DType::BF16, {5, 40}, 11);
  expectMatchesCpu("nn.softmax_grad", {}, {&dy16, &y16},
                   {{DType::BF16, {5, 40}}}, tolerance, "bf16");
}

TEST_F(CudaKernelsBackward, CrossEntropyGrad) {
  Tolerance tolerance{1e-8, 1e-5};
  HostTensor gradLoss = makeTensor(DType::F32, {}, {0.7});
  HostTensor logits = randomTensor(DType::F32, {17, 29}, 1, -5.0, 5.0);
  HostTensor labels = randomIndices(DType::I64, {17}, 2, 29);
  expectMatchesCpu("nn.cross_entropy_grad", {}, {&gradLoss, &logits, &labels},
                   {{DType::F32, {17, 29}}}, tolerance);
  expectMatchesCpu("nn.cross_entropy_grad", makeAttrs({{"count", int64_t{64}}}),
                   {&gradLoss, &logits, &labels}, {{DType::F32, {17, 29}, 1}},
                   tolerance, "in place over the logits");
  HostTensor gradLoss16 = makeTensor(DType::BF16, {1}, {1.0});
  HostTensor logits3 = randomTensor(DType::BF16, {4, 5, 11}, 3, -5.0, 5.0);
  HostTensor labels3 = randomIndices(DType::I32, {4, 5}, 4, 11);
  expectMatchesCpu("nn.cross_entropy_grad", {},
                   {&gradLoss16, &logits3, &labels3},
                   {{DType::BF16, {4, 5, 11}}}, tolerance, "bf16 rank 3");
  HostTensor many = randomTensor(DType::F32, {8, 5000}, 5, -5.0, 5.0);
  HostTensor manyLabels = randomIndices(DType::I64, {8}, 6, 5000);
  expectMatchesCpu("nn.cross_entropy_grad", {}, {&gradLoss, &many, &manyLabels},
                   {{DType::F32, {8, 5000}}}, tolerance, "5000 classes");
}

TEST_F(CudaKernelsBackward, EmbeddingGradAddsInTheCpusOrder) {
  // Rows add in the order of the ids on both sides: the same bits. Many
  // repeated ids, vocabularies larger and smaller than the partitions.
  struct Case {
    int64_t vocab, dim, tokens;
    DType dyType, resultType;
  };
  const Case cases[] = {
      {23, 37, 45, DType::F32, DType::F32},
      {1000, 300, 2048, DType::F32, DType::F32},
      {61, 128, 512, DType::BF16, DType::F32},
      {70000, 8, 600, DType::F32, DType::F32},
      {50, 64, 300, DType::F32, DType::BF16},
      {7, 5, 1, DType::F16, DType::F16},
  };
  unsigned seed = 1;
  for (const Case &c : cases) {
    HostTensor dy = randomTensor(c.dyType, {c.tokens, c.dim}, seed++);
    HostTensor ids = randomIndices(DType::I64, {c.tokens}, seed++, c.vocab);
    expectMatchesCpu("nn.embedding_grad", makeAttrs({{"vocab_size", c.vocab}}),
                     {&dy, &ids}, {{c.resultType, {c.vocab, c.dim}}},
                     exactBits(), "vocab " + std::to_string(c.vocab));
  }
  HostTensor dy = randomTensor(DType::F32, {3, 4, 6}, 50);
  HostTensor ids32 = randomIndices(DType::I32, {3, 4}, 51, 5);
  expectMatchesCpu("nn.embedding_grad", makeAttrs({{"vocab_size", int64_t{5}}}),
                   {&dy, &ids32}, {{DType::F32, {5, 6}}}, exactBits(), "i32");
}

// Each rank of a table split by rows adds only its ids' rows, in the CPU's
// order: (10, 6) over two ranks, and 1000 rows over three (334, 333, 333).
TEST_F(CudaKernelsBackward, EmbeddingGradOfATableSplitByVocabulary) {
  struct Case {
    int64_t vocab, begin, rows, dim, tokens;
  };
  const Case cases[] = {
      {10, 0, 5, 6, 12},           {10, 5, 5, 6, 12},
      {1000, 0, 334, 300, 2048},   {1000, 334, 333, 300, 2048},
      {1000, 667, 333, 300, 2048},
  };
  unsigned seed = 60;
  for (const Case &c : cases) {
    HostTensor dy = randomTensor(DType::F32, {c.tokens, c.dim}, seed++);
    HostTensor ids = randomIndices(DType::I64, {c.tokens}, seed++, c.vocab);
    AttrMap attrs = makeAttrs({{"vocab_size", c.rows},
                               {"global_shape", ints({c.vocab, c.dim})},
                               {"shard_offsets", ints({c.begin, 0})}});
    expectMatchesCpu("nn.embedding_grad", attrs, {&dy, &ids},
                     {{DType::F32, {c.rows, c.dim}}}, exactBits(),
                     "rows " + std::to_string(c.begin) + " of " +
                         std::to_string(c.vocab));
  }
}

/// Three optimizer steps on both sides, each step's results fed back. With
/// `inPlace` the results are the operands' own bytes.
void checkOptimizer(const char *op, const AttrMap &attrs, DType gradType,
                    DType stepType, bool inPlace, int64_t numel) {
  HostTensor param = randomTensor(DType::F32, {numel}, 1);
  HostTensor expAvg(DType::F32, {numel}), expAvgSq(DType::F32, {numel});
  for (int64_t step = 1; step <= 3; ++step) {
    HostTensor grad = randomTensor(gradType, {numel}, 10 + step, -2.0, 2.0);
    HostTensor stepTensor = makeTensor(stepType, {}, {double(step)});
    std::string what = std::string(inPlace ? "in place" : "separate") +
                       " step " + std::to_string(step);
    std::vector<ResultSpec> results = {
        {DType::F32, {numel}}, {DType::F32, {numel}}, {DType::F32, {numel}}};
    if (inPlace) {
      results[0].alias = 0;
      results[1].alias = 2;
      results[2].alias = 3;
    }
    expectMatchesCpu(op, attrs,
                     {&param, &grad, &expAvg, &expAvgSq, &stepTensor}, results,
                     {1e-7, 1e-5}, what);
    // The next step starts from the CPU's state.
    std::vector<TensorRef> operands = {param.ref, grad.ref, expAvg.ref,
                                       expAvgSq.ref, stepTensor.ref};
    findCpuKernel(op)(attrs, operands, {param.ref, expAvg.ref, expAvgSq.ref});
  }
}

TEST_F(CudaKernelsBackward, AdamAndAdamW) {
  AttrMap plain = makeAttrs({{"lr", 1e-2}});
  AttrMap everything = makeAttrs({{"lr", 3e-3},
                                  {"beta1", 0.8},
                                  {"beta2", 0.95},
                                  {"eps", 1e-6},
                                  {"weight_decay", 0.1},
                                  {"grad_scale", 1024.0}});
  for (const char *op : {"nn.adam", "nn.adamw"}) {
    checkOptimizer(op, plain, DType::F32, DType::I64, true, 2501);
    checkOptimizer(op, everything, DType::F32, DType::I64, true, 2501);
    checkOptimizer(op, everything, DType::BF16, DType::I32, false, 777);
    checkOptimizer(op, plain, DType::F16, DType::I64, true, 70001);
  }
}

TEST_F(CudaKernelsBackward, Sgd) {
  HostTensor param = randomTensor(DType::F32, {3001}, 1);
  HostTensor grad = randomTensor(DType::F32, {3001}, 2);
  HostTensor grad16 = randomTensor(DType::BF16, {3001}, 3);
  AttrMap attrs = makeAttrs({{"lr", 0.05}, {"grad_scale", 8.0}});
  expectMatchesCpu("nn.sgd", attrs, {&param, &grad}, {{DType::F32, {3001}}});
  expectMatchesCpu("nn.sgd", attrs, {&param, &grad}, {{DType::F32, {3001}, 0}},
                   {}, "in place");
  expectMatchesCpu("nn.sgd", makeAttrs({{"lr", 0.1}}), {&param, &grad16},
                   {{DType::F32, {3001}, 0}}, {}, "bf16 grad");
}

TEST_F(CudaKernelsBackward, ClipCoefficientAndSelect) {
  AttrMap clip = makeAttrs({{"max_norm", 1.0}, {"grad_scale", 2.0}});
  for (double sumSquares : {16.0, 0.01, 0.0, 1e30, double(NAN)}) {
    HostTensor x = makeTensor(DType::F32, {}, {sumSquares});
    expectMatchesCpu("nn.clip_coefficient", clip, {&x}, {{DType::F32, {}}},
                     exactBits(), std::to_string(sumSquares));
  }
  HostTensor onTrue = randomTensor(DType::BF16, {5, 77}, 1);
  HostTensor onFalse = randomTensor(DType::F32, {5, 77}, 2);
  for (double predicate : {0.0, 1.0, 3.0, double(NAN)}) {
    HostTensor p = makeTensor(DType::F32, {}, {predicate});
    std::string what = "predicate " + std::to_string(predicate);
    expectMatchesCpu("nn.select", {}, {&p, &onTrue, &onFalse},
                     {{DType::F32, {5, 77}}}, exactBits(), what);
    expectMatchesCpu("nn.select", {}, {&p, &onTrue, &onFalse},
                     {{DType::F32, {5, 77}, 2}}, exactBits(),
                     what + " over on_false");
    expectMatchesCpu("nn.select", {}, {&p, &onFalse, &onTrue},
                     {{DType::BF16, {5, 77}, 2}}, exactBits(),
                     what + " bf16 over on_false");
  }
}

TEST_F(CudaKernelsBackward, LossScaleUpdate) {
  struct Case {
    double scale, goodSteps, hysteresisLeft, overflow;
    int64_t hysteresis;
  };
  // Overflow with the hysteresis used up, with some left, at the minimum
  // scale; a clean step that completes the window, one that does not.
  const Case cases[] = {{65536, 7, 1, 1, 2}, {65536, 7, 2, 1, 2},
                        {1.5, 0, 1, 1, 1},   {1024, 999, 1, 0, 2},
                        {1024, 5, 1, 0, 2},  {1024, 5, 2, 2.5, 1}};
  for (const Case &c : cases) {
    AttrMap attrs = makeAttrs({{"window", int64_t{1000}},
                               {"hysteresis", c.hysteresis},
                               {"min_scale", 1.0}});
    HostTensor scale = makeTensor(DType::F32, {}, {c.scale});
    HostTensor good = makeTensor(DType::F32, {}, {c.goodSteps});
    HostTensor left = makeTensor(DType::F32, {}, {c.hysteresisLeft});
    HostTensor overflow = makeTensor(DType::F32, {}, {c.overflow});
    std::string what = "scale " + std::to_string(c.scale) + " overflow " +
                       std::to_string(c.overflow);
    expectMatchesCpu("nn.loss_scale_update", attrs,
                     {&scale, &good, &left, &overflow},
                     {{DType::F32, {}}, {DType::F32, {}}, {DType::F32, {}}},
                     exactBits(), what);
    expectMatchesCpu(
        "nn.loss_scale_update", attrs, {&scale, &good, &left, &overflow},
        {{DType::F32, {}, 0}, {DType::F32, {}, 1}, {DType::F32, {}, 2}},
        exactBits(), what + " in place");
  }
}

/// Device copies of `tensors` and their refs.
struct DeviceCopies {
  explicit DeviceCopies(const std::vector<const HostTensor *> &tensors) {
    for (const HostTensor *tensor : tensors) {
      copies.push_back(std::make_unique<DeviceTensor>(*tensor));
      refs.push_back(copies.back()->ref);
    }
  }
  std::vector<std::unique_ptr<DeviceTensor>> copies;
  std::vector<TensorRef> refs;
};

std::vector<TensorRef> refsOf(const std::vector<const HostTensor *> &tensors) {
  std::vector<TensorRef> refs;
  for (const HostTensor *tensor : tensors)
    refs.push_back(tensor->ref);
  return refs;
}

/// The CPU kernel and the CUDA kernel (eager checks) throw the same error.
void expectSameDeviceError(std::string_view op, const AttrMap &attrs,
                           const std::vector<const HostTensor *> &operands,
                           const std::vector<const HostTensor *> &results,
                           const std::string &part) {
  DeviceCopies deviceOperands(operands), deviceResults(results);
  CudaContext ctx;
  std::string message =
      expectSameError(op, attrs, refsOf(operands), refsOf(results),
                      deviceOperands.refs, deviceResults.refs, ctx);
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(CudaKernelsBackward, BadDeviceDataThrowsTheCpuError) {
  HostTensor table = randomTensor(DType::F32, {5, 2}, 1);
  HostTensor rows(DType::F32, {3, 2});
  for (double id : {5.0, -1.0}) {
    HostTensor ids = makeTensor(DType::I64, {3}, {0, id, 2});
    expectSameDeviceError("nn.embedding", {}, {&table, &ids}, {&rows}, "id ");
  }
  // The first bad id in order is the one named.
  HostTensor ids32 = makeTensor(DType::I32, {3}, {0, 70000, 9});
  expectSameDeviceError("nn.embedding", {}, {&table, &ids32}, {&rows},
                        "id 70000 is out of range for vocab 5");
  HostTensor dy = randomTensor(DType::F32, {3, 2}, 2);
  HostTensor dtable(DType::F32, {5, 2});
  HostTensor badIds = makeTensor(DType::I64, {3}, {0, 9, 2});
  expectSameDeviceError("nn.embedding_grad",
                        makeAttrs({{"vocab_size", int64_t{5}}}), {&dy, &badIds},
                        {&dtable}, "id 9");

  // A split table's ids are checked against the whole vocabulary.
  AttrMap split = makeAttrs(
      {{"global_shape", ints({10, 2})}, {"shard_offsets", ints({5, 0})}});
  for (double id : {10.0, -1.0}) {
    HostTensor ids = makeTensor(DType::I64, {3}, {7, id, 2});
    std::string message = "id " + std::to_string(static_cast<int>(id)) +
                          " is out of range for vocab 10";
    expectSameDeviceError("nn.embedding", split, {&table, &ids}, {&rows},
                          message);
    AttrMap grad = split;
    grad.set("vocab_size", int64_t{5});
    expectSameDeviceError("nn.embedding_grad", grad, {&dy, &ids}, {&dtable},
                          message);
  }

  HostTensor logits = randomTensor(DType::F32, {2, 4}, 3);
  HostTensor labels = makeTensor(DType::I64, {2}, {1, 4});
  HostTensor loss(DType::F32, {});
  expectSameDeviceError("nn.cross_entropy", {}, {&logits, &labels}, {&loss},
                        "label 4 is out of range for 4 classes");
  HostTensor gradLoss = makeTensor(DType::F32, {}, {1});
  HostTensor dx(DType::F32, {2, 4});
  expectSameDeviceError("nn.cross_entropy_grad", {},
                        {&gradLoss, &logits, &labels}, {&dx}, "label 4");

  HostTensor param = randomTensor(DType::F32, {4}, 4);
  HostTensor state(DType::F32, {4});
  for (double step : {0.0, -3.0}) {
    HostTensor stepTensor = makeTensor(DType::I64, {}, {step});
    for (const char *op : {"nn.adam", "nn.adamw"})
      expectSameDeviceError(op, makeAttrs({{"lr", 0.1}}),
                            {&param, &param, &state, &state, &stepTensor},
                            {&param, &state, &state}, "is not positive");
  }
}

TEST_F(CudaKernelsBackward, DeferredChecksThrowAtCheckDeviceErrors) {
  HostTensor table = randomTensor(DType::F32, {5, 2}, 1);
  HostTensor bad = makeTensor(DType::I64, {3}, {0, 7, 2});
  HostTensor good = makeTensor(DType::I64, {3}, {4, 3, 2});
  HostTensor rows(DType::F32, {3, 2});
  DeviceCopies operands({&table, &bad, &good}), results({&rows});
  CudaKernelFn embedding = findCudaKernel("nn.embedding");
  CudaContext ctx;
  ctx.setEagerChecks(false);
  // Neither call waits; the bad one skips its bad row.
  embedding({}, {operands.refs[0], operands.refs[1]}, results.refs, ctx);
  embedding({}, {operands.refs[0], operands.refs[2]}, results.refs, ctx);
  try {
    ctx.checkDeviceErrors();
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "nn.embedding: id 7 is out of range for vocab 5");
  }
  // Raised once; the good call's rows are there.
  EXPECT_NO_THROW(ctx.checkDeviceErrors());
  HostTensor got = results.copies[0]->toHost();
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(got.get(t * 2 + j), table.get(good.get(t) * 2 + j));

  // A bad Adam step changes nothing, in place or into separate results.
  HostTensor param = randomTensor(DType::F32, {1000}, 2);
  HostTensor grad = randomTensor(DType::F32, {1000}, 3);
  HostTensor state = randomTensor(DType::F32, {1000}, 4, 0.0, 1.0);
  HostTensor step = makeTensor(DType::I64, {}, {0});
  HostTensor before = randomTensor(DType::F32, {1000}, 5);
  DeviceCopies adam({&param, &grad, &state, &state, &step}),
      separate({&before, &before, &before});
  CudaKernelFn adamKernel = findCudaKernel("nn.adam");
  AttrMap lr = makeAttrs({{"lr", 0.1}});
  adamKernel(lr, adam.refs, {adam.refs[0], adam.refs[2], adam.refs[3]}, ctx);
  adamKernel(lr, adam.refs, separate.refs, ctx);
  try {
    ctx.checkDeviceErrors();
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "nn.adam: step 0 is not positive");
  }
  expectAgree(adam.copies[0]->toHost(), param, exactBits(), "param");
  expectAgree(adam.copies[2]->toHost(), state, exactBits(), "exp_avg");
  for (int k = 0; k < 3; ++k)
    expectAgree(separate.copies[k]->toHost(), before, exactBits(),
                "separate result " + std::to_string(k));
}

TEST_F(CudaKernelsBackward, FailedCudaCallsNameTheOp) {
  // A split whose result overlaps an input too large for the device: the
  // staging copy cannot be allocated. The tensors claim 2^48 elements of a
  // small allocation; nothing reads them.
  HostTensor small(DType::F32, {16});
  DeviceTensor input(small);
  TensorRef huge = input.ref;
  huge.shape = {int64_t{1} << 48};
  TensorRef half = huge;
  half.shape = {int64_t{1} << 47};
  TensorRef otherHalf = half;
  otherHalf.data = static_cast<char *>(input.ref.data) + 4;
  CudaContext ctx;
  try {
    findCudaKernel("nn.split")(
        makeAttrs({{"axis", int64_t{0}},
                   {"sizes", ints({int64_t{1} << 47, int64_t{1} << 47})}}),
        {huge}, {half, otherHalf}, ctx);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &error) {
    // "nn.split: cudaErrorMemoryAllocation: out of memory".
    std::string message = error.what();
    EXPECT_EQ(message.rfind("nn.split: cudaError", 0), 0u) << message;
    EXPECT_NE(message.find(": ", 10), std::string::npos) << message;
  }
  // The context still works.
  HostTensor x = randomTensor(DType::F32, {100}, 1);
  expectMatchesCpu("nn.relu", {}, {&x}, {{DType::F32, {100}}});
}

} // namespace
} // namespace zerosbp::runtime::gputest
