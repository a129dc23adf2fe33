//===- Support.cpp - host-side checks and buffers of the CUDA kernels -----===//

#include "runtime/cuda/Support.h"

#include <algorithm>

namespace zerosbp::runtime::gpu {

//===----------------------------------------------------------------------===//
// Strided loops
//===----------------------------------------------------------------------===//

void expectDeviceRank(std::string_view op,
                      const std::vector<StridedDim> &dims) {
  if (dims.size() > static_cast<size_t>(kMaxDims))
    fail(op, "needs a loop nest of " + std::to_string(dims.size()) +
                 " dims, the CUDA kernels take at most " +
                 std::to_string(kMaxDims));
}

//===----------------------------------------------------------------------===//
// CUDA status
//===----------------------------------------------------------------------===//

void checkCuda(std::string_view op, cudaError_t status) {
  if (status == cudaSuccess)
    return;
  // The runtime also keeps the failure as its last error; reported here, it
  // must not resurface at the next launch's check.
  (void)cudaGetLastError();
  fail(op, std::string(cudaGetErrorName(status)) + ": " +
               cudaGetErrorString(status));
}

void checkLaunch(std::string_view op) { checkCuda(op, cudaGetLastError()); }

unsigned gridFor(int64_t n, int threads) {
  // Enough blocks to fill an H100 many times over; grid-stride loops do the
  // rest.
  constexpr int64_t kMaxBlocks = 65535;
  int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

//===----------------------------------------------------------------------===//
// Device memory
//===----------------------------------------------------------------------===//

DeviceScratch::DeviceScratch(std::string_view op, CudaContext &ctx,
                             size_t bytes)
    : ctx_(ctx) {
  if (bytes == 0)
    return;
  checkCuda(op, cudaMallocAsync(&data_, bytes, ctx.stream()));
}

DeviceScratch::~DeviceScratch() {
  if (data_)
    (void)cudaFreeAsync(data_, ctx_.stream());
}

void copyDeviceBytes(std::string_view op, CudaContext &ctx, void *dst,
                     const void *src, size_t bytes) {
  if (bytes == 0 || dst == src)
    return;
  auto dstBegin = reinterpret_cast<uintptr_t>(dst);
  auto srcBegin = reinterpret_cast<uintptr_t>(src);
  bool overlap = dstBegin < srcBegin + bytes && srcBegin < dstBegin + bytes;
  if (!overlap) {
    checkCuda(op, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                  ctx.stream()));
    return;
  }
  // cudaMemcpy leaves overlapping ranges undefined: go through a copy.
  DeviceScratch staging(op, ctx, bytes);
  checkCuda(op, cudaMemcpyAsync(staging.data(), src, bytes,
                                cudaMemcpyDeviceToDevice, ctx.stream()));
  checkCuda(op, cudaMemcpyAsync(dst, staging.data(), bytes,
                                cudaMemcpyDeviceToDevice, ctx.stream()));
}

ResultTarget::ResultTarget(std::string_view op, CudaContext &ctx,
                           const TensorRef &result, bool separate,
                           bool keepContents)
    : op_(op), ctx_(ctx), result_(result), target_(result) {
  if (!separate || result.bytes() == 0)
    return;
  scratch_.emplace(op, ctx, result.bytes());
  target_.data = scratch_->data();
  if (keepContents)
    checkCuda(op, cudaMemcpyAsync(target_.data, result.data, result.bytes(),
                                  cudaMemcpyDeviceToDevice, ctx.stream()));
}

void ResultTarget::finish() {
  if (!scratch_)
    return;
  checkCuda(op_, cudaMemcpyAsync(result_.data, target_.data, result_.bytes(),
                                 cudaMemcpyDeviceToDevice, ctx_.stream()));
}

cudaDataType_t cudaDataTypeOf(DType type) {
  switch (type) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

} // namespace zerosbp::runtime::gpu
