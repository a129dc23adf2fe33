//===- StridedCopy.cpp - loop nests over strided tensors ------------------===//
//
// The copies behind pad, transpose, slice, split and concat: memcpy for
// contiguous runs, square tiles for a transposition, an element loop
// otherwise.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

namespace {
/// The general case on elements of type T: `inner` is the last dim (strides
/// A are the destination's, B the source's). `tiled`, when set, is a dim that
/// is contiguous in the source while `inner` is in the destination: the copy
/// goes by square tiles of the two.
template <typename T>
void copyElements(const std::vector<StridedDim> &outer, const StridedDim &inner,
                  const StridedDim *tiled, char *dstBytes,
                  const char *srcBytes) {
  T *dst = reinterpret_cast<T *>(dstBytes);
  const T *src = reinterpret_cast<const T *>(srcBytes);
  if (!tiled) {
    forEachOffset(outer, [&](int64_t dstOffset, int64_t srcOffset) {
      T *to = dst + dstOffset;
      const T *from = src + srcOffset;
      for (int64_t i = 0; i < inner.size; ++i)
        to[i * inner.strideA] = from[i * inner.strideB];
    });
    return;
  }
  // dst[r * rowDst + c] = src[r + c * colSrc]: rows are contiguous in the
  // source, columns in the destination. Within a tile the inner loop takes
  // the smaller of the two strides: a large power-of-two stride maps every
  // access of a tile to the same cache sets.
  constexpr int64_t kTile = 16;
  int64_t rows = tiled->size, cols = inner.size;
  int64_t rowDst = tiled->strideA, colSrc = inner.strideB;
  bool readStrided = colSrc <= rowDst;
  forEachOffset(outer, [&](int64_t dstOffset, int64_t srcOffset) {
    T *to = dst + dstOffset;
    const T *from = src + srcOffset;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      int64_t r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        int64_t c1 = std::min(cols, c0 + kTile);
        if (readStrided) {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c)
              to[r * rowDst + c] = from[r + c * colSrc];
        } else {
          for (int64_t c = c0; c < c1; ++c)
            for (int64_t r = r0; r < r1; ++r)
              to[r * rowDst + c] = from[r + c * colSrc];
        }
      }
    }
  });
}
} // namespace

void copyStrided(const std::vector<int64_t> &shape, char *dst,
                 const std::vector<int64_t> &dstStrides, const char *src,
                 const std::vector<int64_t> &srcStrides, size_t elementBytes) {
  for (int64_t dim : shape)
    if (dim == 0)
      return;
  // Strides A are the destination's, B the source's.
  std::vector<StridedDim> dims = simplifyDims(shape, dstStrides, srcStrides);
  if (dims.empty()) {
    std::memcpy(dst, src, elementBytes);
    return;
  }
  StridedDim inner = dims.back();
  dims.pop_back();
  if (inner.strideA == 1 && inner.strideB == 1) {
    size_t runBytes = static_cast<size_t>(inner.size) * elementBytes;
    auto step = static_cast<int64_t>(elementBytes);
    forEachOffset(dims, [&](int64_t dstOffset, int64_t srcOffset) {
      std::memcpy(dst + dstOffset * step, src + srcOffset * step, runBytes);
    });
    return;
  }
  // A transposition: the dim that is contiguous in the source pairs with the
  // inner one in tiles.
  const StridedDim *tiled = nullptr;
  StridedDim tiledDim{};
  if (inner.strideA == 1) {
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d].strideB == 1) {
        tiledDim = dims[d];
        tiled = &tiledDim;
        dims.erase(dims.begin() + static_cast<int64_t>(d));
        break;
      }
    }
  }
  switch (elementBytes) {
  case 1:
    return copyElements<uint8_t>(dims, inner, tiled, dst, src);
  case 2:
    return copyElements<uint16_t>(dims, inner, tiled, dst, src);
  case 4:
    return copyElements<uint32_t>(dims, inner, tiled, dst, src);
  case 8:
    return copyElements<uint64_t>(dims, inner, tiled, dst, src);
  default:
    throw RuntimeError("cannot copy elements of " +
                       std::to_string(elementBytes) + " bytes");
  }
}

} // namespace zerosbp::runtime::cpu
