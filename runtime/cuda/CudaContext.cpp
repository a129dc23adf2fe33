//===- CudaContext.cpp - the stream and handles CUDA kernels run on -------===//

#include "runtime/cuda/CudaContext.h"

#include "runtime/cuda/Support.h"

#include <cublas_v2.h>

#include <algorithm>

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
  if (blasWorkspace_ || deviceSlots_)
    (void)cudaStreamSynchronize(stream_);
  if (blasWorkspace_)
    (void)cudaFree(blasWorkspace_);
  if (deviceSlots_) {
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
  // After cublasSetStream, which resets the workspace to cuBLAS's own.
  void *workspace = nullptr;
  cudaError_t allocated = cudaMalloc(&workspace, kBlasWorkspaceBytes);
  if (allocated != cudaSuccess) {
    (void)cublasDestroy(handle);
    gpu::checkCuda(op, allocated);
  }
  status = cublasSetWorkspace(handle, workspace, kBlasWorkspaceBytes);
  if (status != CUBLAS_STATUS_SUCCESS) {
    (void)cublasDestroy(handle);
    (void)cudaFree(workspace);
    (void)cudaGetLastError();
    gpu::fail(op, std::string("cannot set the cuBLAS workspace: ") +
                      cublasGetStatusString(status));
  }
  blas_ = handle;
  blasWorkspace_ = workspace;
  return blas_;
}

void CudaContext::allocateSlots(std::string_view op, size_t count) {
  if (deviceSlots_) {
    // Kernels enqueued earlier may still write the old slots.
    gpu::checkCuda(op, cudaStreamSynchronize(stream_));
    gpu::checkCuda(op, cudaFree(deviceSlots_));
    gpu::checkCuda(op, cudaFreeHost(hostSlots_));
    deviceSlots_ = hostSlots_ = nullptr;
    capacity_ = 0;
  }
  size_t bytes = count * sizeof(DeviceCheckSlot);
  gpu::checkCuda(op,
                 cudaMalloc(reinterpret_cast<void **>(&deviceSlots_), bytes));
  gpu::checkCuda(op,
                 cudaMallocHost(reinterpret_cast<void **>(&hostSlots_), bytes));
  capacity_ = count;
}

DeviceCheckSlot *CudaContext::beginCheck(std::string_view op,
                                         std::string prefix,
                                         std::string suffix) {
  if (!deviceSlots_)
    allocateSlots(op, kMaxPendingChecks);
  if (pending_.size() == capacity_) {
    // Waiting would end a capture: a captured step reserves its checks.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &capture) != cudaSuccess)
      (void)cudaGetLastError();
    if (capture != cudaStreamCaptureStatusNone)
      gpu::fail(op, "more than " + std::to_string(capacity_) +
                        " checks of device data in one captured step");
    checkDeviceErrors();
  }
  DeviceCheckSlot *slot = deviceSlots_ + pending_.size();
  // All ones: kNoFailure, which atomicMin lowers to the first failure.
  gpu::checkCuda(op,
                 cudaMemsetAsync(slot, 0xff, sizeof(DeviceCheckSlot), stream_));
  pending_.push_back({std::move(prefix), std::move(suffix)});
  ++checksBegun_;
  return slot;
}

void CudaContext::endCheck() {
  if (eager_)
    checkDeviceErrors();
}

void CudaContext::reserveChecks(size_t count) {
  checkDeviceErrors();
  if (count > capacity_)
    allocateSlots("device check", std::max(count, kMaxPendingChecks));
}

std::vector<DeviceCheck> CudaContext::takeChecks() {
  std::vector<DeviceCheck> checks;
  checks.swap(pending_);
  if (!checks.empty())
    gpu::checkCuda("device check",
                   cudaMemcpyAsync(hostSlots_, deviceSlots_,
                                   checks.size() * sizeof(DeviceCheckSlot),
                                   cudaMemcpyDeviceToHost, stream_));
  return checks;
}

void CudaContext::raiseChecks(const std::vector<DeviceCheck> &checks) const {
  for (size_t k = 0; k < checks.size(); ++k)
    if (hostSlots_[k].position != DeviceCheckSlot::kNoFailure)
      throw RuntimeError(checks[k].prefix +
                         std::to_string(hostSlots_[k].value) +
                         checks[k].suffix);
}

void CudaContext::checkDeviceErrors() {
  if (pending_.empty())
    return;
  std::vector<DeviceCheck> checks = takeChecks();
  gpu::checkCuda("device check", cudaStreamSynchronize(stream_));
  raiseChecks(checks);
}

} // namespace zerosbp::runtime
