//===- StridedDims.h - loop nests over strided tensors ----------*- C++ -*-===//
//
// The dims of a loop nest that visits two tensors element by element, with
// contiguous neighbours merged so that the nest is as short as it can be.
// The CPU kernels walk it on the host, the CUDA kernels pass it to a launch.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_STRIDEDDIMS_H
#define ZEROSBP_RUNTIME_KERNELS_STRIDEDDIMS_H

#include <cstdint>
#include <vector>

namespace zerosbp::runtime::checks {

/// One dim of a loop nest over two tensors: its size and the stride (in
/// elements) of each tensor along it.
struct StridedDim {
  int64_t size;
  int64_t strideA;
  int64_t strideB;
};

/// The dims of `shape` with unit dims dropped and neighbours that are
/// contiguous in both tensors merged, outermost first; visiting them
/// row-major visits the same element pairs in the same order.
std::vector<StridedDim> simplifyDims(const std::vector<int64_t> &shape,
                                     const std::vector<int64_t> &stridesA,
                                     const std::vector<int64_t> &stridesB);

/// The strides (in elements) of `shape`, right-aligned to the dims of
/// `broadcast`, with 0 along every dim it is stretched on.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &broadcast);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_STRIDEDDIMS_H
