//===- Support.h - host checks and buffers of the CUDA kernels --*- C++ -*-===//
//
// The precondition checks of the CUDA kernels, which are the CPU kernels'
// own (runtime/kernels/KernelChecks.h), the CUDA status checks,
// stream-ordered scratch memory, and the rank limit of strided loops. Host
// code only: the .cu files and the host sources include it.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_SUPPORT_H
#define ZEROSBP_RUNTIME_CUDA_SUPPORT_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Error.h"
#include "runtime/core/Tensor.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/kernels/KernelChecks.h"
#include "runtime/kernels/StridedDims.h"

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zerosbp::runtime::gpu {

using Tensors = std::vector<TensorRef>;

//===----------------------------------------------------------------------===//
// Checks (the CPU kernels' messages)
//===----------------------------------------------------------------------===//

// Shared with the CPU kernels (runtime/kernels/KernelChecks.h); the checks
// of whole ops are called as checks::checkSoftmax and so on.
using checks::contiguousStrides;
using checks::expectArity;
using checks::expectIndex;
using checks::expectShape;
using checks::fail;
using checks::overlaps;
using checks::overlapsAny;
using checks::overlapsOtherThanReplaced;
using checks::replaces;

//===----------------------------------------------------------------------===//
// Strided loops
//===----------------------------------------------------------------------===//

/// The most dims a device loop nest takes after merging; plans use five.
constexpr int kMaxDims = 8;

// Shared with the CPU kernels (runtime/kernels/StridedDims.h).
using checks::broadcastStrides;
using checks::simplifyDims;
using checks::StridedDim;

/// Throws when `dims` has more than kMaxDims entries.
void expectDeviceRank(std::string_view op, const std::vector<StridedDim> &dims);

//===----------------------------------------------------------------------===//
// CUDA status
//===----------------------------------------------------------------------===//

/// Throws RuntimeError("<op>: <error name>: <error string>") unless success.
void checkCuda(std::string_view op, cudaError_t status);
/// checkCuda of the last launch's status.
void checkLaunch(std::string_view op);

/// Blocks of `threads` for a grid-stride loop over `n` items, capped so a
/// launch never exceeds the grid limit.
unsigned gridFor(int64_t n, int threads);

/// The CUDA library type of a floating `type` (cuBLAS and cuBLASLt
/// operands): f16, bf16, else f32.
cudaDataType_t cudaDataTypeOf(DType type);

//===----------------------------------------------------------------------===//
// Device memory
//===----------------------------------------------------------------------===//

/// Bytes from the device's stream-ordered pool, freed on the stream when the
/// object goes: kernels enqueued before that may still use them.
class DeviceScratch {
public:
  DeviceScratch(std::string_view op, CudaContext &ctx, size_t bytes);
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;
  void *data() const { return data_; }
  template <typename T> T *as() const { return static_cast<T *>(data_); }

private:
  CudaContext &ctx_;
  void *data_ = nullptr;
};

/// Enqueues a copy of `bytes` from `src` to `dst`, both on the device; the
/// ranges may overlap (memmove).
void copyDeviceBytes(std::string_view op, CudaContext &ctx, void *dst,
                     const void *src, size_t bytes);

/// Where a kernel writes a result: the result's own bytes, or, when
/// `separate`, a scratch tensor of the same type and shape that finish()
/// copies into the result once the kernel has read its operands. With
/// `keepContents` the scratch starts as a copy of the result, for kernels
/// that may write nothing.
class ResultTarget {
public:
  ResultTarget(std::string_view op, CudaContext &ctx, const TensorRef &result,
               bool separate, bool keepContents = false);
  const TensorRef &tensor() const { return target_; }
  void *data() const { return target_.data; }
  void finish();

private:
  std::string_view op_;
  CudaContext &ctx_;
  TensorRef result_;
  TensorRef target_;
  std::optional<DeviceScratch> scratch_;
};

} // namespace zerosbp::runtime::gpu

#endif // ZEROSBP_RUNTIME_CUDA_SUPPORT_H
