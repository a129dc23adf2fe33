//===- VocabParallelLoss.cpp - cross-entropy of logits split by class -----===//
//
// nn.cross_entropy on logits split by class, in four steps with collectives
// between them (runtime/kernels/VocabParallelLossChecks.h). Each step does
// the arithmetic of the unsplit kernels (Loss.cpp) on the rank's classes:
// the max by maxOf, exp(x - max) by fastExp, their sum by sumOf in double.
// So on a whole row, with the sums in f64, the loss and the gradient are
// nn.cross_entropy's and nn.cross_entropy_grad's bits; with f32 sums they
// differ by the sum's rounding to f32.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/SoftmaxChecks.h"
#include "runtime/kernels/VocabParallelLossChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

#include <algorithm>
#include <cmath>

namespace zerosbp::runtime::cpu {

namespace {
using checks::ClassBlock;

/// The labels as int64, each checked against the whole logits' classes.
std::vector<int64_t> checkedLabels(std::string_view op, const TensorRef &labels,
                                   const ClassBlock &block) {
  std::vector<int64_t> values = readIndices(labels);
  for (int64_t label : values)
    if (label < 0 || label >= block.globalClasses)
      fail(op, checks::labelMessage(block.globalClasses).about(label));
  return values;
}

/// The elements of an f32 or f64 tensor, as double.
std::vector<double> readSums(const TensorRef &tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  if (tensor.dtype == DType::F64)
    std::copy_n(tensor.as<const double>(), values.size(), values.begin());
  else
    std::copy_n(tensor.as<const float>(), values.size(), values.begin());
  return values;
}

/// e[j] = exp(x[j] - max) for j < n, as Loss.cpp's shiftedExp computes it.
ZEROSBP_CPU_CLONES
void shiftedExp(const float *__restrict x, float *__restrict e, int64_t n,
                float max) {
  for (int64_t j = 0; j < n; ++j)
    e[j] = fastExp(x[j] - max);
}

/// The max of a row, -infinity for a rank without classes (the identity of
/// the max over ranks).
float rowMax(const float *x, int64_t n) {
  return n > 0 ? maxOf(x, n) : -INFINITY;
}
} // namespace

void crossEntropyMaxKernel(const AttrMap &attrs, const Tensors &operands,
                           const Tensors &results) {
  constexpr std::string_view op = "nn.cross_entropy_max";
  ClassBlock block = checks::checkCrossEntropyMax(op, attrs, operands, results);
  FloatInput x(operands[0]);
  FloatOutput out(results[0], overlapsAny(results[0], operands));
  for (int64_t r = 0; r < block.rows; ++r)
    out.data()[r] = rowMax(x.data() + r * block.classes, block.classes);
  out.finish();
}

void crossEntropySumsKernel(const AttrMap &attrs, const Tensors &operands,
                            const Tensors &results) {
  constexpr std::string_view op = "nn.cross_entropy_sums";
  ClassBlock block =
      checks::checkCrossEntropySums(op, attrs, operands, results);
  const TensorRef &logits = operands[0], &sumexp = results[0];
  std::vector<int64_t> labels = checkedLabels(op, operands[2], block);

  // The results are written once every operand has been read.
  FloatInput x(logits);
  std::vector<float> max(static_cast<size_t>(block.rows));
  widen(operands[1], 0, block.rows, max.data());
  std::vector<double> sums(static_cast<size_t>(block.rows));
  std::vector<float> labelLogits(static_cast<size_t>(block.rows));
  std::vector<float> e(static_cast<size_t>(block.classes));
  for (int64_t r = 0; r < block.rows; ++r) {
    const float *row = x.data() + r * block.classes;
    shiftedExp(row, e.data(), block.classes, max[r]);
    sums[r] = sumOf(e.data(), block.classes);
    int64_t j = block.localClass(labels[r]);
    // Another rank's label adds nothing to the sum over ranks.
    labelLogits[r] = j >= 0 ? row[j] : 0.0f;
  }
  if (sumexp.dtype == DType::F64)
    std::copy(sums.begin(), sums.end(), sumexp.as<double>());
  else
    std::copy(sums.begin(), sums.end(), sumexp.as<float>());
  std::copy(labelLogits.begin(), labelLogits.end(), results[1].as<float>());
}

void crossEntropyLossKernel(const AttrMap &attrs, const Tensors &operands,
                            const Tensors &results) {
  constexpr std::string_view op = "nn.cross_entropy_loss";
  ClassBlock block =
      checks::checkCrossEntropyLoss(op, attrs, operands, results);
  const float *max = operands[0].as<const float>();
  std::vector<double> sums = readSums(operands[1]);
  const float *labelLogits = operands[2].as<const float>();
  // -log softmax(x)[label] = log(sum) + max - x[label], added as Loss.cpp
  // adds it.
  double total = 0.0;
  for (int64_t r = 0; r < block.rows; ++r)
    total += std::log(sums[r]) + static_cast<double>(max[r]) -
             static_cast<double>(labelLogits[r]);
  writeScalar(results[0], static_cast<float>(total / block.count));
}

void crossEntropySplitGradKernel(const AttrMap &attrs, const Tensors &operands,
                                 const Tensors &results) {
  constexpr std::string_view op = "nn.cross_entropy_split_grad";
  ClassBlock block =
      checks::checkCrossEntropySplitGrad(op, attrs, operands, results);
  const TensorRef &gradLoss = operands[0], &logits = operands[1];
  const TensorRef &result = results[0];
  std::vector<int64_t> labels = checkedLabels(op, operands[4], block);

  // dx = dloss (softmax(x) - onehot(label)) / count, on the rank's classes,
  // with nn.cross_entropy_grad's factor and products.
  auto factor = static_cast<float>(static_cast<double>(readScalar(gradLoss)) /
                                   block.count);
  std::vector<float> max(static_cast<size_t>(block.rows));
  widen(operands[2], 0, block.rows, max.data());
  std::vector<double> sums = readSums(operands[3]);
  // The gradient may replace the logits (docs/plan-format.md#values): a row
  // is read whole into `e` before its gradient is written.
  FloatInput x(logits);
  FloatOutput out(result, overlapsOtherThanReplaced(result, operands));
  std::vector<float> e(static_cast<size_t>(block.classes));
  for (int64_t r = 0; r < block.rows; ++r) {
    const float *row = x.data() + r * block.classes;
    float *dx = out.data() + r * block.classes;
    shiftedExp(row, e.data(), block.classes, max[r]);
    auto inverse = static_cast<float>(1.0 / sums[r]);
    for (int64_t j = 0; j < block.classes; ++j)
      dx[j] = e[j] * inverse * factor;
    int64_t j = block.localClass(labels[r]);
    if (j >= 0)
      dx[j] = (e[j] * inverse - 1.0f) * factor;
  }
  out.finish();
}

} // namespace zerosbp::runtime::cpu
