//===- Activations.cpp - relu, gelu, tanh and their gradients -------------===//
//
// PyTorch's definitions: relu(NaN) is NaN and relu_grad is 0 where x <= 0;
// GELU is the tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x +
// 0.044715 x^3), evaluated as x sigmoid(2u) (the same function, without the
// cancellation of 1 + tanh(u) for negative u).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/ElementwiseChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

namespace {
constexpr float kGeluBeta = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluKappa = 0.044715f;

using UnaryRow = void (*)(const float *x, float *y, int64_t count);
using GradRow = void (*)(const float *dy, const float *saved, float *dx,
                         int64_t count);

/// sigmoid(2u) = (1 + tanh(u)) / 2 for GELU's u.
inline float geluGate(float x) {
  float u = kGeluBeta * (x + kGeluKappa * (x * x * x));
  return 1.0f / (1.0f + fastExp(-2.0f * u));
}

void reluRow(const float *__restrict x, float *__restrict y, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

ZEROSBP_CPU_CLONES
void geluRow(const float *__restrict x, float *__restrict y, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = x[i] * geluGate(x[i]);
}

ZEROSBP_CPU_CLONES
void tanhRow(const float *__restrict x, float *__restrict y, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = fastTanh(x[i]);
}

void reluGradRow(const float *__restrict dy, const float *__restrict x,
                 float *__restrict dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    dx[i] = x[i] <= 0.0f ? 0.0f : dy[i];
}

/// With s = sigmoid(2u): 1 + tanh(u) = 2s and 1 - tanh(u)^2 = 4s(1 - s), so
/// PyTorch's 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) u' is
/// s + 2 x s (1 - s) u'.
ZEROSBP_CPU_CLONES
void geluGradRow(const float *__restrict dy, const float *__restrict x,
                 float *__restrict dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i];
    float s = geluGate(v);
    float innerDerivative = kGeluBeta * (1.0f + 3.0f * kGeluKappa * (v * v));
    dx[i] = dy[i] * (s + 2.0f * v * s * (1.0f - s) * innerDerivative);
  }
}

void tanhGradRow(const float *__restrict dy, const float *__restrict y,
                 float *__restrict dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

void runUnary(std::string_view op, const Tensors &operands,
              const Tensors &results, UnaryRow row) {
  checks::checkUnaryFloat(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  forEachChunk<1, 1>(input.numel(), {&input}, {&result},
                     [row](const float *const *in, float *const *out,
                           int64_t count) { row(in[0], out[0], count); });
}

/// An activation gradient `dx = row(dy, saved)`.
void runActivationGrad(std::string_view op, const Tensors &operands,
                       const Tensors &results, GradRow row) {
  checks::checkGradPair(op, operands, results, "saved");
  const TensorRef &gradOutput = operands[0], &saved = operands[1];
  const TensorRef &result = results[0];
  forEachChunk<2, 1>(
      gradOutput.numel(), {&gradOutput, &saved}, {&result},
      [row](const float *const *in, float *const *out, int64_t count) {
        row(in[0], in[1], out[0], count);
      });
}
} // namespace

void geluValues(const float *x, float *y, int64_t count) {
  geluRow(x, y, count);
}

void reluKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results) {
  runUnary("nn.relu", operands, results, reluRow);
}

void geluKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results) {
  runUnary("nn.gelu", operands, results, geluRow);
}

void tanhKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results) {
  runUnary("nn.tanh", operands, results, tanhRow);
}

void reluGradKernel(const AttrMap &, const Tensors &operands,
                    const Tensors &results) {
  runActivationGrad("nn.relu_grad", operands, results, reluGradRow);
}

void geluGradKernel(const AttrMap &, const Tensors &operands,
                    const Tensors &results) {
  runActivationGrad("nn.gelu_grad", operands, results, geluGradRow);
}

void tanhGradKernel(const AttrMap &, const Tensors &operands,
                    const Tensors &results) {
  runActivationGrad("nn.tanh_grad", operands, results, tanhGradRow);
}

} // namespace zerosbp::runtime::cpu
