//===- Softmax.cpp - softmax and its gradient -----------------------------===//
//
// Along any axis; with `causal` along the last one, where query i (the
// second-to-last index) sees keys j <= i and the masked entries are 0.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/SoftmaxChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

namespace {
using checks::SoftmaxLayout;

/// The number of unmasked entries of row `row`.
int64_t visible(const SoftmaxLayout &layout, int64_t row) {
  return layout.causal ? row % layout.size + 1 : layout.size;
}

ZEROSBP_CPU_CLONES
void softmaxRow(const float *__restrict x, float *__restrict y, int64_t valid,
                int64_t size) {
  float max = maxOf(x, valid);
  for (int64_t j = 0; j < valid; ++j)
    y[j] = fastExp(x[j] - max);
  auto inverse = static_cast<float>(1.0 / sumOf(y, valid));
  for (int64_t j = 0; j < valid; ++j)
    y[j] *= inverse;
  for (int64_t j = valid; j < size; ++j)
    y[j] = 0.0f;
}

ZEROSBP_CPU_CLONES
void softmaxGradRow(const float *__restrict dy, const float *__restrict y,
                    float *__restrict dx, int64_t valid, int64_t size) {
  auto dot = static_cast<float>(dotOf(dy, y, valid));
  for (int64_t j = 0; j < valid; ++j)
    dx[j] = y[j] * (dy[j] - dot);
  for (int64_t j = valid; j < size; ++j)
    dx[j] = 0.0f;
}

/// Runs `rowFn(inputs..., out, valid, size)` on every softmax row: in place
/// for the last axis, through gathered copies for another.
template <size_t NumIn, typename RowFn>
void forEachRow(const SoftmaxLayout &layout,
                const std::array<const float *, NumIn> &inputs, float *out,
                RowFn rowFn) {
  int64_t size = layout.size, inner = layout.inner;
  if (inner == 1) {
    for (int64_t row = 0; row < layout.outer; ++row) {
      std::array<const float *, NumIn> rowInputs;
      for (size_t k = 0; k < NumIn; ++k)
        rowInputs[k] = inputs[k] + row * size;
      rowFn(rowInputs, out + row * size, visible(layout, row), size);
    }
    return;
  }
  std::vector<float> gathered((NumIn + 1) * static_cast<size_t>(size));
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * size * inner + i;
      std::array<const float *, NumIn> rowInputs;
      for (size_t k = 0; k < NumIn; ++k) {
        float *column = gathered.data() + k * size;
        for (int64_t j = 0; j < size; ++j)
          column[j] = inputs[k][base + j * inner];
        rowInputs[k] = column;
      }
      float *column = gathered.data() + NumIn * size;
      rowFn(rowInputs, column, size, size);
      for (int64_t j = 0; j < size; ++j)
        out[base + j * inner] = column[j];
    }
  }
}
} // namespace

void softmaxKernel(const AttrMap &attrs, const Tensors &operands,
                   const Tensors &results) {
  constexpr std::string_view op = "nn.softmax";
  SoftmaxLayout layout = checks::checkSoftmax(op, attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (input.numel() == 0)
    return;
  FloatInput x(input);
  FloatOutput out(result, overlapsAny(result, operands));
  forEachRow<1>(layout, {x.data()}, out.data(),
                [](const std::array<const float *, 1> &in, float *y,
                   int64_t valid,
                   int64_t size) { softmaxRow(in[0], y, valid, size); });
  out.finish();
}

void softmaxGradKernel(const AttrMap &attrs, const Tensors &operands,
                       const Tensors &results) {
  constexpr std::string_view op = "nn.softmax_grad";
  SoftmaxLayout layout = checks::checkSoftmaxGrad(op, attrs, operands, results);
  const TensorRef &gradOutput = operands[0], &output = operands[1];
  const TensorRef &result = results[0];
  if (output.numel() == 0)
    return;
  FloatInput dy(gradOutput), y(output);
  FloatOutput out(result, overlapsAny(result, operands));
  forEachRow<2>(
      layout, {dy.data(), y.data()}, out.data(),
      [](const std::array<const float *, 2> &in, float *dx, int64_t valid,
         int64_t size) { softmaxGradRow(in[0], in[1], dx, valid, size); });
  out.finish();
}

} // namespace zerosbp::runtime::cpu
