//===- Dropout.cpp - dropout from a counter-based generator ---------------===//
//
// Element i of this rank's block is kept when Philox4x32-10 of its global
// index says so (docs/compiler.md, "Dropout"); kept elements are multiplied
// by float(1 / (1 - p)) in f32, the rest are +0.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/DropoutChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

void dropoutKernel(const AttrMap &attrs, const Tensors &operands,
                   const Tensors &results) {
  checks::DropoutLayout layout =
      checks::checkDropout("nn.dropout", attrs, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  auto step = static_cast<uint64_t>(readInteger(operands[1]));
  const std::vector<int64_t> &shape = input.shape;
  const std::vector<int64_t> &strides = layout.globalStrides;
  // Walks the block row-major, carrying the global index along.
  std::vector<int64_t> index(shape.size(), 0);
  int64_t global = layout.base;
  auto advance = [&] {
    for (size_t d = shape.size(); d-- > 0;) {
      global += strides[d];
      if (++index[d] < shape[d])
        return;
      global -= strides[d] * shape[d];
      index[d] = 0;
    }
  };
  const philox::DropoutStream &stream = layout.stream;
  float scale = layout.scale;
  forEachChunk<1, 1>(
      input.numel(), {&input}, {&result},
      [&](const float *const *in, float *const *out, int64_t count) {
        for (int64_t i = 0; i < count; ++i) {
          bool keep =
              philox::dropoutKeeps(stream, static_cast<uint64_t>(global), step);
          out[0][i] = keep ? in[0][i] * scale : 0.0f;
          advance();
        }
      });
}

} // namespace zerosbp::runtime::cpu
