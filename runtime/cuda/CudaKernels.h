//===- CudaKernels.h - the CUDA kernel interface and registry ---*- C++ -*-===//
//
// The CUDA counterpart of runtime/kernels/Kernel.h: one function per `nn` op
// with the CPU kernel's semantics, on tensors whose `data` points to device
// memory. A kernel checks shapes and attributes on the host (throwing the CPU
// kernel's RuntimeError) and enqueues its work on the context's stream
// without waiting for it. As on the CPU, a result may occupy the bytes of the
// operand it replaces. A failed CUDA or cuBLAS call throws RuntimeError
// naming the op and the CUDA error.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_CUDAKERNELS_H
#define ZEROSBP_RUNTIME_CUDA_CUDAKERNELS_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Tensor.h"
#include "runtime/cuda/CudaContext.h"

#include <string_view>
#include <vector>

namespace zerosbp::runtime {

using CudaKernelFn = void (*)(const AttrMap &attrs,
                              const std::vector<TensorRef> &operands,
                              const std::vector<TensorRef> &results,
                              CudaContext &ctx);

/// The CUDA kernel of an op named as in a plan; nullptr when there is none.
CudaKernelFn findCudaKernel(std::string_view op);

/// Every op name with a CUDA kernel, sorted.
std::vector<std::string_view> cudaKernelNames();

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_CUDAKERNELS_H
