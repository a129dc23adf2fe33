//===- Dropout.cu - dropout from a counter-based generator ----------------===//
//
// The CPU kernel's mask and arithmetic (runtime/kernels/cpu/Dropout.cpp):
// each thread finds the global index of its element of the rank's block,
// draws Philox4x32-10 for it (runtime/kernels/Philox.h) and writes
// x * float(1 / (1 - p)) in f32 or +0. The step is read on the device, so
// nothing waits for the host.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/DropoutChecks.h"

namespace zerosbp::runtime::gpu {

namespace {
/// The block's local sizes and the global strides of its dims.
struct BlockShape {
  int rank;
  int64_t sizes[kMaxDims];
  int64_t globalStrides[kMaxDims];
};

__global__ void dropoutKernelImpl(philox::DropoutStream stream, float scale,
                                  const void *step, DType stepType,
                                  const void *in, DType inType, void *out,
                                  DType outType, BlockShape shape, int64_t base,
                                  int64_t n) {
  auto count = static_cast<uint64_t>(loadIndex(step, stepType, 0));
  ZEROSBP_GRID_LOOP(i, n) {
    int64_t global = base, rest = i;
    // Unrolled with constant indices, so the arrays stay kernel parameters.
#pragma unroll
    for (int k = 0; k < kMaxDims; ++k) {
      int d = kMaxDims - 1 - k;
      if (d < shape.rank) {
        global += (rest % shape.sizes[d]) * shape.globalStrides[d];
        rest /= shape.sizes[d];
      }
    }
    float x = loadFloat(in, inType, i);
    bool keep =
        philox::dropoutKeeps(stream, static_cast<uint64_t>(global), count);
    storeFloat(out, outType, i, keep ? x * scale : 0.0f);
  }
}
} // namespace

void dropoutKernel(const AttrMap &attrs, const Tensors &operands,
                   const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.dropout";
  checks::DropoutLayout layout =
      checks::checkDropout(op, attrs, operands, results);
  const TensorRef &input = operands[0], &step = operands[1];
  const TensorRef &result = results[0];
  if (input.rank() > kMaxDims)
    fail(op, "rank " + std::to_string(input.rank()) + " exceeds " +
                 std::to_string(kMaxDims));
  int64_t numel = input.numel();
  if (numel == 0)
    return;
  BlockShape shape{static_cast<int>(input.rank()), {}, {}};
  for (int d = 0; d < shape.rank; ++d) {
    shape.sizes[d] = input.shape[d];
    shape.globalStrides[d] = layout.globalStrides[d];
  }
  // A thread reads element i before writing it: the result may replace the
  // input; any other overlap goes through a separate buffer.
  ResultTarget target(op, ctx, result,
                      overlapsOtherThanReplaced(result, {input, step}));
  constexpr int kThreads = 256;
  dropoutKernelImpl<<<gridFor(numel, kThreads), kThreads, 0, ctx.stream()>>>(
      layout.stream, layout.scale, step.data, step.dtype, input.data,
      input.dtype, target.data(), result.dtype, shape, layout.base, numel);
  checkLaunch(op);
  target.finish();
}

} // namespace zerosbp::runtime::gpu
