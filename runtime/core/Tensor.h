//===- Tensor.h - a typed view of bytes in a rank's arena -------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_CORE_TENSOR_H
#define ZEROSBP_RUNTIME_CORE_TENSOR_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <vector>

namespace zerosbp::runtime {

/// A dense row-major tensor that does not own its bytes.
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t numel() const {
    int64_t count = 1;
    for (int64_t dim : shape)
      count *= dim;
    return count;
  }
  size_t bytes() const {
    return static_cast<size_t>(numel()) * dtypeBytes(dtype);
  }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CORE_TENSOR_H
