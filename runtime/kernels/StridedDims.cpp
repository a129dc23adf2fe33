//===- StridedDims.cpp - loop nests over strided tensors ------------------===//

#include "runtime/kernels/StridedDims.h"

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

std::vector<StridedDim> simplifyDims(const std::vector<int64_t> &shape,
                                     const std::vector<int64_t> &stridesA,
                                     const std::vector<int64_t> &stridesB) {
  std::vector<StridedDim> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    StridedDim dim{shape[d], stridesA[d], stridesB[d]};
    if (!dims.empty()) {
      StridedDim &last = dims.back();
      if (last.strideA == dim.strideA * dim.size &&
          last.strideB == dim.strideB * dim.size) {
        last = {last.size * dim.size, dim.strideA, dim.strideB};
        continue;
      }
    }
    dims.push_back(dim);
  }
  return dims;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &broadcast) {
  std::vector<int64_t> own = contiguousStrides(shape);
  size_t leading = broadcast.size() - shape.size();
  std::vector<int64_t> strides(broadcast.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d)
    strides[leading + d] = shape[d] == 1 ? 0 : own[d];
  return strides;
}

} // namespace zerosbp::runtime::checks
