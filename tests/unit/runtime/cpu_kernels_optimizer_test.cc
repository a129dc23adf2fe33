//===- cpu_kernels_optimizer_test.cc - sgd, adam, adamw over a few steps --===//
//
// The optimizer kernels against the torch.optim formulas evaluated in
// double, over three steps, with grad_scale, weight decay, a bf16 gradient
// with an f32 parameter, and the results in the operands' own bytes.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include <cmath>

namespace zerosbp::runtime::test {
namespace {

/// Adam's state in double.
struct AdamState {
  std::vector<double> param, expAvg, expAvgSq;
};

struct AdamConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0, gradScale = 1;
  bool decoupled = false;
};

/// One step of torch.optim.Adam / AdamW (docs/design.md#numerics), in double.
void referenceAdamStep(AdamState &state, const std::vector<double> &grad,
                       int64_t step, const AdamConfig &config) {
  double bc1 = 1 - std::pow(config.beta1, step);
  double bc2 = 1 - std::pow(config.beta2, step);
  for (size_t i = 0; i < grad.size(); ++i) {
    double p = state.param[i];
    double g = grad[i] / config.gradScale;
    if (config.decoupled)
      p *= 1 - config.lr * config.weightDecay;
    else
      g += config.weightDecay * p;
    double m = config.beta1 * state.expAvg[i] + (1 - config.beta1) * g;
    double v = config.beta2 * state.expAvgSq[i] + (1 - config.beta2) * g * g;
    double denom = std::sqrt(v) / std::sqrt(bc2) + config.eps;
    state.param[i] = p - config.lr / bc1 * m / denom;
    state.expAvg[i] = m;
    state.expAvgSq[i] = v;
  }
}

AttrMap adamAttrs(const AdamConfig &config) {
  return makeAttrs({{"lr", config.lr},
                    {"beta1", config.beta1},
                    {"beta2", config.beta2},
                    {"eps", config.eps},
                    {"weight_decay", config.weightDecay},
                    {"grad_scale", config.gradScale}});
}

/// Three steps of the kernel against the double reference. With `inPlace`
/// the results are the operands themselves, as the memory planner lays them
/// out; else separate tensors copied back after each step.
void checkAdam(const char *op, const AdamConfig &config, DType gradType,
               bool inPlace, int64_t numel = 2500) {
  Buffer param = randomTensor(DType::F32, {numel}, 1);
  Buffer expAvg(DType::F32, {numel}), expAvgSq(DType::F32, {numel});
  AdamState state{param.values(), expAvg.values(), expAvgSq.values()};
  for (int64_t step = 1; step <= 3; ++step) {
    Buffer grad = randomTensor(gradType, {numel}, 10 + step, -2.0, 2.0);
    Buffer stepTensor = makeTensor(DType::I64, {}, {double(step)});
    referenceAdamStep(state, grad.values(), step, config);
    std::vector<TensorRef> operands = {param.ref, grad.ref, expAvg.ref,
                                       expAvgSq.ref, stepTensor.ref};
    if (inPlace) {
      runKernel(op, adamAttrs(config), operands,
                {param.ref, expAvg.ref, expAvgSq.ref});
    } else {
      Buffer newParam(DType::F32, {numel}), newExpAvg(DType::F32, {numel}),
          newExpAvgSq(DType::F32, {numel});
      runKernel(op, adamAttrs(config), operands,
                {newParam.ref, newExpAvg.ref, newExpAvgSq.ref});
      param = std::move(newParam);
      expAvg = std::move(newExpAvg);
      expAvgSq = std::move(newExpAvgSq);
    }
    std::string what = std::string(op) + " step " + std::to_string(step);
    expectClose(param.values(), state.param, 1e-6, 1e-6, what + " param");
    expectClose(expAvg.values(), state.expAvg, 1e-7, 1e-5, what + " exp_avg");
    expectClose(expAvgSq.values(), state.expAvgSq, 1e-9, 1e-5,
                what + " exp_avg_sq");
  }
}

TEST(CpuKernelsOptimizer, AdamFirstStepByHand) {
  // Step 1 with the default betas: m = 0.05, v = 2.5e-4, bias corrections
  // 0.1 and 0.001, denom = 0.5 + 1e-8: p = 1 - 0.1 * 0.05 / 0.5 = 0.9.
  Buffer param = makeTensor(DType::F32, {2}, {1.0, -2.0});
  Buffer grad = makeTensor(DType::F32, {2}, {0.5, -0.25});
  Buffer expAvg(DType::F32, {2}), expAvgSq(DType::F32, {2});
  Buffer step = makeTensor(DType::I64, {}, {1});
  runKernel("nn.adam", makeAttrs({{"lr", 0.1}}),
            {param.ref, grad.ref, expAvg.ref, expAvgSq.ref, step.ref},
            {param.ref, expAvg.ref, expAvgSq.ref});
  EXPECT_NEAR(param.get(0), 0.9, 1e-6);
  EXPECT_NEAR(param.get(1), -1.9, 1e-6);
  EXPECT_NEAR(expAvg.get(0), 0.05, 1e-8);
  EXPECT_NEAR(expAvgSq.get(0), 2.5e-4, 1e-10);
  EXPECT_NEAR(expAvg.get(1), -0.025, 1e-8);
  EXPECT_NEAR(expAvgSq.get(1), 6.25e-5, 1e-11);
}

TEST(CpuKernelsOptimizer, AdamWeightDecayAndGradScaleInPlace) {
  AdamConfig config;
  config.lr = 0.01;
  config.weightDecay = 0.1;
  config.gradScale = 4;
  checkAdam("nn.adam", config, DType::F32, /*inPlace=*/true);
}

TEST(CpuKernelsOptimizer, AdamSeparateResults) {
  AdamConfig config;
  config.lr = 0.05;
  config.beta1 = 0.8;
  config.beta2 = 0.99;
  config.eps = 1e-6;
  checkAdam("nn.adam", config, DType::F32, /*inPlace=*/false);
}

TEST(CpuKernelsOptimizer, AdamWDecoupledWeightDecayInPlace) {
  AdamConfig config;
  config.lr = 0.02;
  config.weightDecay = 0.5;
  config.gradScale = 2;
  config.decoupled = true;
  checkAdam("nn.adamw", config, DType::F32, /*inPlace=*/true);
}

TEST(CpuKernelsOptimizer, AdamWBf16GradF32Param) {
  AdamConfig config;
  config.lr = 0.01;
  config.weightDecay = 0.01;
  config.gradScale = 1024;
  config.decoupled = true;
  checkAdam("nn.adamw", config, DType::BF16, /*inPlace=*/true);
}

TEST(CpuKernelsOptimizer, AdamBf16Grad) {
  AdamConfig config;
  config.lr = 0.01;
  config.gradScale = 8;
  checkAdam("nn.adam", config, DType::BF16, /*inPlace=*/false, 300);
}

TEST(CpuKernelsOptimizer, AdamWMatchesAdamWithoutDecay) {
  // weight_decay 0: AdamW and Adam are the same update.
  Buffer param = randomTensor(DType::F32, {100}, 2);
  Buffer grad = randomTensor(DType::F32, {100}, 3);
  Buffer expAvg = randomTensor(DType::F32, {100}, 4);
  Buffer expAvgSq = randomTensor(DType::F32, {100}, 5, 0.0, 1.0);
  Buffer step = makeTensor(DType::I64, {}, {7});
  std::vector<TensorRef> operands = {param.ref, grad.ref, expAvg.ref,
                                     expAvgSq.ref, step.ref};
  Buffer p1(DType::F32, {100}), m1(DType::F32, {100}), v1(DType::F32, {100});
  Buffer p2(DType::F32, {100}), m2(DType::F32, {100}), v2(DType::F32, {100});
  runKernel("nn.adam", makeAttrs({{"lr", 0.1}}), operands,
            {p1.ref, m1.ref, v1.ref});
  runKernel("nn.adamw", makeAttrs({{"lr", 0.1}}), operands,
            {p2.ref, m2.ref, v2.ref});
  expectClose(p1.values(), p2.values(), 0, 0);
  expectClose(m1.values(), m2.values(), 0, 0);
  expectClose(v1.values(), v2.values(), 0, 0);
}

TEST(CpuKernelsOptimizer, SgdWithGradScaleInPlace) {
  const int64_t numel = 2100;
  Buffer param = randomTensor(DType::F32, {numel}, 20);
  std::vector<double> expected = param.values();
  for (int step = 0; step < 3; ++step) {
    Buffer grad = randomTensor(DType::F32, {numel}, 21 + step);
    for (int64_t i = 0; i < numel; ++i)
      expected[i] -= 0.1 * grad.get(i) / 4;
    runKernel("nn.sgd", makeAttrs({{"lr", 0.1}, {"grad_scale", 4.0}}),
              {param.ref, grad.ref}, {param.ref});
    expectClose(param.values(), expected, 1e-6, 1e-6,
                "step " + std::to_string(step));
  }
}

TEST(CpuKernelsOptimizer, SgdBf16GradF32Param) {
  Buffer param = makeTensor(DType::F32, {3}, {1.0, 2.0, -3.0});
  Buffer grad = makeTensor(DType::BF16, {3}, {512.0, -256.0, 1024.0});
  Buffer out(DType::F32, {3});
  // grad / 1024 = 0.5, -0.25, 1; p - 0.5 * g.
  runKernel("nn.sgd", makeAttrs({{"lr", 0.5}, {"grad_scale", 1024.0}}),
            {param.ref, grad.ref}, {out.ref});
  expectClose(out.values(), {0.75, 2.125, -3.5}, 0, 0);
  // grad_scale defaults to 1.
  runKernel("nn.sgd", makeAttrs({{"lr", 1.0 / 1024}}), {param.ref, grad.ref},
            {out.ref});
  expectClose(out.values(), {0.5, 2.25, -4.0}, 0, 0);
}

/// Sets the CPU kernels' threads for one test and back to one after it.
class KernelThreads {
public:
  explicit KernelThreads(int threads) { setCpuKernelThreads(threads); }
  ~KernelThreads() { setCpuKernelThreads(1); }
};

TEST(CpuKernelsOptimizer, AdamOnHostThreadsMatchesReference) {
  // Large enough to be split over the threads (HostThreads.h), in place as
  // offloaded updates run and into separate results, with a bf16 gradient.
  KernelThreads threads(2);
  AdamConfig config;
  config.lr = 0.01;
  config.weightDecay = 0.1;
  config.gradScale = 4;
  checkAdam("nn.adam", config, DType::F32, /*inPlace=*/true, 200003);
  config.decoupled = true;
  checkAdam("nn.adamw", config, DType::BF16, /*inPlace=*/false, 200003);
}

TEST(CpuKernelsOptimizer, AdamOnHostThreadsEqualsOneThreadBitForBit) {
  const int64_t numel = 300001;
  Buffer grad = randomTensor(DType::F32, {numel}, 31);
  Buffer step = makeTensor(DType::I64, {}, {3});
  std::vector<Buffer> params;
  for (int threads : {1, 2}) {
    KernelThreads scope(threads);
    Buffer param = randomTensor(DType::F32, {numel}, 32);
    Buffer expAvg = randomTensor(DType::F32, {numel}, 33);
    Buffer expAvgSq = randomTensor(DType::F32, {numel}, 34, 0.0, 1.0);
    runKernel("nn.adam", makeAttrs({{"lr", 0.1}}),
              {param.ref, grad.ref, expAvg.ref, expAvgSq.ref, step.ref},
              {param.ref, expAvg.ref, expAvgSq.ref});
    params.push_back(std::move(param));
  }
  EXPECT_EQ(std::memcmp(params[0].ref.data, params[1].ref.data,
                        params[0].ref.bytes()),
            0);
}

} // namespace
} // namespace zerosbp::runtime::test
