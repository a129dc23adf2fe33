//===- StreamMemory.cpp - collective scratch and copies on a stream -------===//

#include "runtime/cuda/StreamMemory.h"

#include "runtime/cuda/Support.h"

#include <string>

namespace zerosbp::runtime {

using gpu::checkCuda;

void StreamMemory::copy(void *dst, const void *src, size_t bytes) {
  if (dst != src && bytes)
    checkCuda(
        "collective copy",
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

void StreamMemory::zero(void *dst, size_t bytes) {
  if (bytes)
    checkCuda("collective zero", cudaMemsetAsync(dst, 0, bytes, stream));
}

void StreamMemory::copyRows(void *dst, size_t dstPitch, const void *src,
                            size_t srcPitch, size_t rowBytes, size_t rows) {
  if (rowBytes && rows)
    checkCuda("collective copy",
              cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, rowBytes, rows,
                                cudaMemcpyDeviceToDevice, stream));
}

void *StreamMemory::allocate(size_t bytes) {
  void *scratch = nullptr;
  checkCuda("collective scratch of " + std::to_string(bytes) + " bytes",
            cudaMallocAsync(&scratch, bytes ? bytes : 1, stream));
  return scratch;
}

void StreamMemory::release(void *scratch) {
  // Freed in stream order: work enqueued before may still read it.
  (void)cudaFreeAsync(scratch, stream);
}

} // namespace zerosbp::runtime
