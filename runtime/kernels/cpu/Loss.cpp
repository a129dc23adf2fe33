//===- Loss.cpp - softmax cross-entropy and its gradient ------------------===//
//
// The loss is the sum of the per-sample losses divided by `count` when it is
// set (the global sample count), else by the local sample count.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/SoftmaxChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

#include <cmath>

namespace zerosbp::runtime::cpu {

namespace {
std::vector<int64_t> checkedLabels(std::string_view op, const TensorRef &labels,
                                   int64_t classes) {
  std::vector<int64_t> values = readIndices(labels);
  for (int64_t label : values)
    if (label < 0 || label >= classes)
      fail(op, checks::labelMessage(classes).about(label));
  return values;
}

/// e[j] = exp(x[j] - max(x)), n > 0; returns sum(e) and sets `max`.
ZEROSBP_CPU_CLONES
double shiftedExp(const float *__restrict x, float *__restrict e, int64_t n,
                  float &max) {
  max = maxOf(x, n);
  for (int64_t j = 0; j < n; ++j)
    e[j] = fastExp(x[j] - max);
  return sumOf(e, n);
}
} // namespace

void crossEntropyKernel(const AttrMap &attrs, const Tensors &operands,
                        const Tensors &results) {
  constexpr std::string_view op = "nn.cross_entropy";
  checks::LossLayout layout =
      checks::checkCrossEntropy(op, attrs, operands, results);
  const TensorRef &logits = operands[0], &result = results[0];
  int64_t classes = layout.classes;
  std::vector<int64_t> labels = checkedLabels(op, operands[1], classes);

  FloatInput x(logits);
  std::vector<float> e(static_cast<size_t>(classes));
  double total = 0.0;
  for (int64_t s = 0; s < layout.samples; ++s) {
    const float *row = x.data() + s * classes;
    float max;
    double sum = shiftedExp(row, e.data(), classes, max);
    // -log softmax(x)[label] = log(sum) + max - x[label]
    total += std::log(sum) + static_cast<double>(max) -
             static_cast<double>(row[labels[s]]);
  }
  writeScalar(result, static_cast<float>(total / layout.count));
}

void crossEntropyGradKernel(const AttrMap &attrs, const Tensors &operands,
                            const Tensors &results) {
  constexpr std::string_view op = "nn.cross_entropy_grad";
  checks::LossLayout layout =
      checks::checkCrossEntropyGrad(op, attrs, operands, results);
  const TensorRef &gradLoss = operands[0], &logits = operands[1];
  const TensorRef &result = results[0];
  int64_t classes = layout.classes;
  std::vector<int64_t> labels = checkedLabels(op, operands[2], classes);

  // dx = dloss (softmax(x) - onehot(label)) / count
  auto factor = static_cast<float>(static_cast<double>(readScalar(gradLoss)) /
                                   layout.count);
  // The memory plan may put the gradient over the logits
  // (docs/plan-format.md#values): a row is read whole into `e` before its
  // gradient is written, so replacing the logits needs no full-size copy.
  FloatInput x(logits);
  FloatOutput out(result, overlapsOtherThanReplaced(result, operands));
  std::vector<float> e(static_cast<size_t>(classes));
  for (int64_t s = 0; s < layout.samples; ++s) {
    const float *row = x.data() + s * classes;
    float *dx = out.data() + s * classes;
    float max;
    double sum = shiftedExp(row, e.data(), classes, max);
    auto inverse = static_cast<float>(1.0 / sum);
    float atLabel = e[labels[s]] * inverse;
    for (int64_t j = 0; j < classes; ++j)
      dx[j] = e[j] * inverse * factor;
    dx[labels[s]] = (atLabel - 1.0f) * factor;
  }
  out.finish();
}

} // namespace zerosbp::runtime::cpu
