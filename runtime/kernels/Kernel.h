//===- Kernel.h - the kernel interface and registry -------------*- C++ -*-===//
//
// A kernel computes one `nn` op of a plan on one rank: it reads its operands
// and writes its results, all in the rank's arena. Shapes are local (what one
// rank holds). A result may occupy the bytes of an operand it replaces (the
// optimizer updates, elementwise ops); kernels read element i before they
// write it. Kernels throw RuntimeError on a violated precondition (an id out
// of range, a shape the op does not allow).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_KERNEL_H
#define ZEROSBP_RUNTIME_KERNELS_KERNEL_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Tensor.h"

#include <string_view>
#include <vector>

namespace zerosbp::runtime {

using KernelFn = void (*)(const AttrMap &attrs,
                          const std::vector<TensorRef> &operands,
                          const std::vector<TensorRef> &results);

/// The CPU kernel of an op named as in a plan (`nn.matmul`,
/// `shard.all_slice` is not a kernel); nullptr when there is none.
KernelFn findCpuKernel(std::string_view op);

/// Every op name with a CPU kernel, sorted.
std::vector<std::string_view> cpuKernelNames();

/// Sets how many threads the CPU kernels use: the matrix products'
/// (OpenBLAS's pool) and the large optimizer updates' and casts'
/// (runtime/kernels/cpu/HostThreads.h); the
/// cores shared among the ranks on the machine. Other kernels run on the
/// calling thread.
void setCpuKernelThreads(int threads);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_KERNELS_KERNEL_H
