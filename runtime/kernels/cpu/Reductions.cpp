//===- Reductions.cpp - reduce_sum and reduce_mean ------------------------===//
//
// Sums accumulate in double, visiting the input in row-major order, so the
// result does not depend on anything but the input. reduce_mean divides by
// `count` when it is set (the global count), else by the number of elements
// reduced locally.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/ReductionChecks.h"
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
  checks::ReduceShape reduce =
      checks::checkReduce(op, attrs, operands, results, mean);
  const TensorRef &input = operands[0], &result = results[0];

  // The result's strides as seen from the input's dims: 0 along a reduced
  // dim.
  int64_t rank = input.rank();
  std::vector<int64_t> outStrides(static_cast<size_t>(rank), 0);
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (reduce.reduced[d])
      continue;
    outStrides[d] = stride;
    stride *= input.shape[d];
  }

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

  std::vector<float> values(static_cast<size_t>(outNumel));
  for (int64_t i = 0; i < outNumel; ++i)
    values[i] = static_cast<float>(sums[i] / reduce.divisor);
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
