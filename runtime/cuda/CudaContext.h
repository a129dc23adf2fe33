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
#include <memory>
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

/// A check of device data enqueued but not yet read: its failure reads
/// `prefix + value + suffix`.
struct DeviceCheck {
  std::string prefix;
  std::string suffix;
};

/// What a group of kernels keeps for as long as the context lives (the
/// matmul epilogues' cuBLASLt handle and chosen algorithms); destroyed with
/// it, after the stream has finished.
class CudaContextCache {
public:
  virtual ~CudaContextCache() = default;
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

  /// The cuBLAS handle, created on first use and bound to the stream, with
  /// a workspace of its own (kBlasWorkspaceBytes) so that cuBLAS allocates
  /// nothing when its calls are captured into a CUDA graph and picks the
  /// same algorithms captured or not. Throws RuntimeError naming `op` when
  /// it cannot be created.
  cublasContext *blas(std::string_view op);
  /// cuBLAS's recommended workspace on Hopper.
  static constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
  /// Device bytes held for cuBLAS (0 before the handle is made).
  size_t blasWorkspaceBytes() const {
    return blasWorkspace_ ? kBlasWorkspaceBytes : 0;
  }
  /// That workspace (making the handle first): cuBLASLt calls enqueued on
  /// the same stream use it too (MatmulEpilogue.cpp).
  void *blasWorkspace(std::string_view op) {
    blas(op);
    return blasWorkspace_;
  }
  /// The cuBLASLt handle and the algorithm chosen for each shape of the
  /// matmul epilogues (MatmulEpilogue.cpp), made there on first use.
  std::unique_ptr<CudaContextCache> &matmulEpilogueCache() {
    return matmulEpilogueCache_;
  }

  /// With TF32 allowed, matmuls whose operands are both f32 compute with
  /// CUBLAS_COMPUTE_32F_FAST_TF32 (zero-run --allow-tf32); off by default,
  /// as in PyTorch. f16 and bf16 products are unaffected.
  void setAllowTf32(bool allow) { allowTf32_ = allow; }
  bool allowTf32() const { return allowTf32_; }

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

  // For an executor that captures its work into a CUDA graph, where
  // nothing may wait for the stream.

  /// Checks begun since the context was made: a step's count is the
  /// difference.
  uint64_t checksBegun() const { return checksBegun_; }
  /// Makes room for `count` checks pending at once, so that a captured
  /// step never has to wait for the stream. Call with none pending.
  void reserveChecks(size_t count);
  /// Hands over the pending checks, after enqueuing (without waiting) the
  /// copy of their results to the host. Captured into a graph, the checks
  /// and the copy are replayed with it: after each replay, once the stream
  /// has passed it, raiseChecks() reads the copy. Nothing is pending after.
  std::vector<DeviceCheck> takeChecks();
  /// Throws RuntimeError for the first failure among `checks` (from
  /// takeChecks) in the host copy of their results.
  void raiseChecks(const std::vector<DeviceCheck> &checks) const;
  /// Forgets the pending checks (a capture that was abandoned).
  void discardChecks() { pending_.clear(); }

private:
  /// Replaces the slots (none pending) by `count` new ones.
  void allocateSlots(std::string_view op, size_t count);

  cudaStream_t stream_;
  cublasContext *blas_ = nullptr;
  void *blasWorkspace_ = nullptr;
  bool allowTf32_ = false;
  bool eager_ = true;
  DeviceCheckSlot *deviceSlots_ = nullptr;
  DeviceCheckSlot *hostSlots_ = nullptr;
  size_t capacity_ = 0; // Slots allocated.
  uint64_t checksBegun_ = 0;
  std::vector<DeviceCheck> pending_;
  // Destroyed after the destructor's body has synchronized the stream.
  std::unique_ptr<CudaContextCache> matmulEpilogueCache_;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_CUDACONTEXT_H
