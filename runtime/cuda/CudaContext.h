//===- CudaContext.h - what CUDA kernels run on -----------------*- C++ -*-===//
//
// What every CUDA kernel is given besides its tensors: the stream it enqueues
// its work on, the cuBLAS handle bound to that stream, and the checks of
// device data (embedding ids, loss labels, the Adam step) whose failures the
// kernels report. Host code includes this header with the host compiler.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_CUDACONTEXT_H
#define ZEROSBP_RUNTIME_CUDA_CUDACONTEXT_H

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// cublasHandle_t is `cublasContext *`; naming the struct keeps cublas_v2.h
// out of every file that includes this one.
struct cublasContext;

namespace zerosbp::runtime {

/// One failed-or-not check of device data, filled by a kernel: `position` is
/// the first element that failed (kNoFailure when none) and `value` its
/// value.
struct DeviceCheckSlot {
  static constexpr unsigned long long kNoFailure = ~0ull;
  unsigned long long position;
  long long value;
};

/// Holds no device memory until a kernel needs it, so that a context can be
/// made (and kernels can reject bad shapes) on a machine without a GPU.
class CudaContext {
public:
  /// Kernels run on `stream` (nullptr: the legacy default stream).
  explicit CudaContext(cudaStream_t stream = nullptr);
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  cudaStream_t stream() const { return stream_; }

  /// The cuBLAS handle, created on first use and bound to the stream. Throws
  /// RuntimeError naming `op` when it cannot be created.
  cublasContext *blas(std::string_view op);

  /// With eager checks (the default) a kernel that validates device data
  /// waits for the check and throws before it computes, like the CPU kernel.
  /// Without, the kernel does not wait: it skips the bad elements and the
  /// failure is thrown by the next checkDeviceErrors().
  void setEagerChecks(bool eager) { eager_ = eager; }
  bool eagerChecks() const { return eager_; }

  /// Waits for the stream when checks are pending and throws RuntimeError
  /// for the first that failed: "<op>: <what> <value><rest>".
  void checkDeviceErrors();

  /// For kernels: a cleared slot for a check whose failure reads
  /// `prefix + value + suffix` (prefix starts with the op). Enqueued on the
  /// stream before the checking kernel.
  DeviceCheckSlot *beginCheck(std::string_view op, std::string prefix,
                              std::string suffix);
  /// For kernels: after the checking kernel is enqueued. Raises the failure
  /// at once when checks are eager.
  void endCheck();

private:
  struct PendingCheck {
    std::string prefix;
    std::string suffix;
  };

  cudaStream_t stream_;
  cublasContext *blas_ = nullptr;
  bool eager_ = true;
  DeviceCheckSlot *deviceSlots_ = nullptr;
  DeviceCheckSlot *hostSlots_ = nullptr;
  std::vector<PendingCheck> pending_;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_CUDACONTEXT_H
