//===- Elementwise.cpp - broadcasting arithmetic, scale and cast ----------===//

#include "runtime/kernels/ElementwiseChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

namespace {
struct Add {
  static float apply(float a, float b) { return a + b; }
};
struct Sub {
  static float apply(float a, float b) { return a - b; }
};
struct Mul {
  static float apply(float a, float b) { return a * b; }
};
struct Div {
  static float apply(float a, float b) { return a / b; }
};

/// out[i] = Op(a[i * strideA], b[i * strideB]); the common strides are
/// compile-time constants so the loop vectorizes.
template <typename Op, int StrideA, int StrideB>
void applyRow(const float *a, const float *b, float *out, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = Op::apply(a[i * StrideA], b[i * StrideB]);
}

template <typename Op>
void applyRow(const float *a, int64_t strideA, const float *b, int64_t strideB,
              float *out, int64_t count) {
  if (strideA == 1 && strideB == 1)
    return applyRow<Op, 1, 1>(a, b, out, count);
  if (strideA == 1 && strideB == 0)
    return applyRow<Op, 1, 0>(a, b, out, count);
  if (strideA == 0 && strideB == 1)
    return applyRow<Op, 0, 1>(a, b, out, count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = Op::apply(a[i * strideA], b[i * strideB]);
}

template <typename Op>
void runBinary(std::string_view op, const TensorRef &lhs, const TensorRef &rhs,
               const TensorRef &result) {
  std::vector<int64_t> shape = checks::checkBroadcast(op, lhs, rhs, result);
  int64_t numel = result.numel();
  if (numel == 0)
    return;

  if (lhs.shape == rhs.shape) {
    forEachChunk<2, 1>(
        numel, {&lhs, &rhs}, {&result},
        [](const float *const *in, float *const *out, int64_t count) {
          applyRow<Op, 1, 1>(in[0], in[1], out[0], count);
        });
    return;
  }

  // Broadcasting: row by row of the innermost (merged) dim, each row
  // through a local chunk. Reads of element i come before its write, so the
  // result may lie in the bytes of the operand of its own shape; any other
  // overlap goes through a separate buffer.
  FloatInput a(lhs), b(rhs);
  FloatOutput out(result, overlapsOtherThanReplaced(result, {lhs, rhs}));
  std::vector<StridedDim> dims =
      simplifyDims(shape, broadcastStrides(lhs.shape, shape),
                   broadcastStrides(rhs.shape, shape));
  StridedDim inner = {1, 0, 0};
  if (!dims.empty()) {
    inner = dims.back();
    dims.pop_back();
  }
  float *to = out.data();
  alignas(64) float chunk[kChunk];
  forEachOffset(dims, [&](int64_t offsetA, int64_t offsetB) {
    for (int64_t begin = 0; begin < inner.size; begin += kChunk) {
      int64_t count = std::min(kChunk, inner.size - begin);
      applyRow<Op>(a.data() + offsetA + begin * inner.strideA, inner.strideA,
                   b.data() + offsetB + begin * inner.strideB, inner.strideB,
                   chunk, count);
      std::memcpy(to, chunk, static_cast<size_t>(count) * sizeof(float));
      to += count;
    }
  });
  out.finish();
}

template <typename Op>
void runBinaryKernel(std::string_view op, const Tensors &operands,
                     const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  runBinary<Op>(op, operands[0], operands[1], results[0]);
}
} // namespace

void addKernel(const AttrMap &, const Tensors &operands,
               const Tensors &results) {
  runBinaryKernel<Add>("nn.add", operands, results);
}

void subKernel(const AttrMap &, const Tensors &operands,
               const Tensors &results) {
  runBinaryKernel<Sub>("nn.sub", operands, results);
}

void mulKernel(const AttrMap &, const Tensors &operands,
               const Tensors &results) {
  runBinaryKernel<Mul>("nn.mul", operands, results);
}

void divKernel(const AttrMap &, const Tensors &operands,
               const Tensors &results) {
  runBinaryKernel<Div>("nn.div", operands, results);
}

void biasAddKernel(const AttrMap &, const Tensors &operands,
                   const Tensors &results) {
  constexpr std::string_view op = "nn.bias_add";
  checks::checkBiasAdd(op, operands, results);
  runBinary<Add>(op, operands[0], operands[1], results[0]);
}

void scaleKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results) {
  checks::checkUnaryFloat("nn.scale", operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  auto factor = static_cast<float>(attrs.getFloat("factor"));
  forEachChunk<1, 1>(
      input.numel(), {&input}, {&result},
      [factor](const float *const *in, float *const *out, int64_t count) {
        for (int64_t i = 0; i < count; ++i)
          out[0][i] = in[0][i] * factor;
      });
}

void castKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results) {
  checks::checkUnaryFloat("nn.cast", operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (input.dtype == result.dtype) {
    if (input.data != result.data)
      std::memmove(result.data, input.data, input.bytes());
    return;
  }
  forEachChunkInParallel<1, 1>(
      input.numel(), {&input}, {&result},
      [](const float *const *in, float *const *out, int64_t count) {
        std::memcpy(out[0], in[0], static_cast<size_t>(count) * sizeof(float));
      });
}

} // namespace zerosbp::runtime::cpu
