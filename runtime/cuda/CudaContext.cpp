//===- CudaContext.cpp - the stream and handles CUDA kernels run on -------===//

#include "runtime/cuda/CudaContext.h"

#include "runtime/cuda/Support.h"

#include <cublas_v2.h>

namespace zerosbp::runtime {

namespace {
/// Checks outstanding at once without eager checks; one more waits for them.
constexpr size_t kMaxPendingChecks = 256;
} // namespace

CudaContext::CudaContext(cudaStream_t stream) : stream_(stream) {}

CudaContext::~CudaContext() {
  // Errors here have nowhere to go; the kernels' own calls report them.
  if (blas_)
    (void)cublasDestroy(blas_);
  if (deviceSlots_) {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaFree(deviceSlots_);
    (void)cudaFreeHost(hostSlots_);
  }
}

cublasContext *CudaContext::blas(std::string_view op) {
  if (blas_)
    return blas_;
  cublasHandle_t handle = nullptr;
  cublasStatus_t status = cublasCreate(&handle);
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasSetStream(handle, stream_);
    if (status != CUBLAS_STATUS_SUCCESS)
      (void)cublasDestroy(handle);
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    (void)cudaGetLastError(); // What cuBLAS hit must not fail a later launch.
    gpu::fail(op, std::string("cannot create a cuBLAS handle: ") +
                      cublasGetStatusString(status));
  }
  blas_ = handle;
  return blas_;
}

DeviceCheckSlot *CudaContext::beginCheck(std::string_view op,
                                         std::string prefix,
                                         std::string suffix) {
  if (!deviceSlots_) {
    size_t bytes = kMaxPendingChecks * sizeof(DeviceCheckSlot);
    gpu::checkCuda(op,
                   cudaMalloc(reinterpret_cast<void **>(&deviceSlots_), bytes));
    gpu::checkCuda(
        op, cudaMallocHost(reinterpret_cast<void **>(&hostSlots_), bytes));
  }
  if (pending_.size() == kMaxPendingChecks)
    checkDeviceErrors();
  DeviceCheckSlot *slot = deviceSlots_ + pending_.size();
  // All ones: kNoFailure, which atomicMin lowers to the first failure.
  gpu::checkCuda(op,
                 cudaMemsetAsync(slot, 0xff, sizeof(DeviceCheckSlot), stream_));
  pending_.push_back({std::move(prefix), std::move(suffix)});
  return slot;
}

void CudaContext::endCheck() {
  if (eager_)
    checkDeviceErrors();
}

void CudaContext::checkDeviceErrors() {
  if (pending_.empty())
    return;
  std::vector<PendingCheck> checks;
  checks.swap(pending_);
  constexpr std::string_view where = "device check";
  gpu::checkCuda(where, cudaMemcpyAsync(hostSlots_, deviceSlots_,
                                        checks.size() * sizeof(DeviceCheckSlot),
                                        cudaMemcpyDeviceToHost, stream_));
  gpu::checkCuda(where, cudaStreamSynchronize(stream_));
  for (size_t k = 0; k < checks.size(); ++k)
    if (hostSlots_[k].position != DeviceCheckSlot::kNoFailure)
      throw RuntimeError(checks[k].prefix +
                         std::to_string(hostSlots_[k].value) +
                         checks[k].suffix);
}

} // namespace zerosbp::runtime
