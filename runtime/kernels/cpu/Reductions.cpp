//===- Reductions.cpp - reduce_sum and reduce_mean ------------------------===//
//
// Sums accumulate in double, visiting the input in row-major order, so the
// result does not depend on anything but the input. reduce_mean divides by
// `count` when it is set (the global count), else by the number of elements
// reduced locally.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/FastMath.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

namespace {
/// to[j] += from[j]: one input row added to the sums of a reduction over
/// leading dims (bias gradients); each sum still sees rows in order.
ZEROSBP_CPU_CLONES
void accumulateRow(const float *__restrict from, double *__restrict to,
                   int64_t count) {
  for (int64_t j = 0; j < count; ++j)
    to[j] += static_cast<double>(from[j]);
}

void runReduce(std::string_view op, const AttrMap &attrs,
               const Tensors &operands, const Tensors &results, bool mean) {
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectFloat(op, input, "input");
  expectFloat(op, result, "result");
  int64_t rank = input.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t axis : attrs.getInts("axes")) {
    int64_t d = normalizeAxis(op, axis, rank);
    if (reduced[d])
      fail(op, "axis " + std::to_string(axis) + " is listed twice");
    reduced[d] = true;
  }
  bool keepdim = attrs.flag("keepdim");

  // The result's shape, and its strides as seen from the input's dims: 0
  // along a reduced dim.
  std::vector<int64_t> shape;
  std::vector<int64_t> outStrides(static_cast<size_t>(rank), 0);
  int64_t reducedCount = 1, stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      reducedCount *= input.shape[d];
      continue;
    }
    outStrides[d] = stride;
    stride *= input.shape[d];
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d] || keepdim)
      shape.push_back(reduced[d] ? 1 : input.shape[d]);
  expectShape(op, result, shape, "result");

  int64_t outNumel = result.numel();
  std::vector<double> sums(static_cast<size_t>(outNumel), 0.0);
  if (input.numel() != 0) {
    FloatInput x(input);
    std::vector<StridedDim> dims =
        simplifyDims(input.shape, contiguousStrides(input.shape), outStrides);
    if (dims.empty()) {
      sums[0] = x.data()[0];
    } else {
      StridedDim inner = dims.back();
      dims.pop_back();
      double *acc = sums.data();
      forEachOffset(dims, [&](int64_t inOffset, int64_t outOffset) {
        const float *from = x.data() + inOffset;
        double *to = acc + outOffset;
        if (inner.strideB == 0 && inner.strideA == 1) {
          *to += sumOf(from, inner.size);
        } else if (inner.strideB == 1 && inner.strideA == 1) {
          accumulateRow(from, to, inner.size);
        } else {
          for (int64_t j = 0; j < inner.size; ++j)
            to[j * inner.strideB] +=
                static_cast<double>(from[j * inner.strideA]);
        }
      });
    }
  }

  double divisor = 1.0;
  if (mean) {
    divisor = static_cast<double>(reducedCount);
    if (std::optional<int64_t> count = attrs.findInt("count")) {
      if (*count < 1)
        fail(op, "count " + std::to_string(*count) + " is not positive");
      divisor = static_cast<double>(*count);
    }
  }
  std::vector<float> values(static_cast<size_t>(outNumel));
  for (int64_t i = 0; i < outNumel; ++i)
    values[i] = static_cast<float>(sums[i] / divisor);
  narrow(values.data(), outNumel, result, 0);
}
} // namespace

void reduceSumKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
  runReduce("nn.reduce_sum", attrs, operands, results, /*mean=*/false);
}

void reduceMeanKernel(const AttrMap &attrs, const Tensors &operands,
                      const Tensors &results) {
  runReduce("nn.reduce_mean", attrs, operands, results, /*mean=*/true);
}

} // namespace zerosbp::runtime::cpu
