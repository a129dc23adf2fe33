//===- StreamMemory.h - collective scratch and copies on a stream -*- C++ -*-=//
//
// The CollectiveMemory of the CUDA executor: the packing copies and the
// scratch of a collective are enqueued on the same stream as its NCCL calls,
// so they run in order with them and never block the host.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_STREAMMEMORY_H
#define ZEROSBP_RUNTIME_CUDA_STREAMMEMORY_H

#include "runtime/exec/Collectives.h"

#include <cuda_runtime_api.h>

namespace zerosbp::runtime {

class StreamMemory : public CollectiveMemory {
public:
  explicit StreamMemory(cudaStream_t stream) : stream(stream) {}
  /// cudaMemcpyAsync, device to device.
  void copy(void *dst, const void *src, size_t bytes) override;
  /// cudaMemcpy2DAsync, device to device.
  void copyRows(void *dst, size_t dstPitch, const void *src, size_t srcPitch,
                size_t rowBytes, size_t rows) override;
  /// The device's stream-ordered pool (cudaMallocAsync / cudaFreeAsync).
  /// cudaMemsetAsync.
  void zero(void *dst, size_t bytes) override;
  void *allocate(size_t bytes) override;
  void release(void *scratch) override;

private:
  cudaStream_t stream;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_STREAMMEMORY_H
