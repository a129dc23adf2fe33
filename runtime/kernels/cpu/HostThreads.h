//===- HostThreads.h - the CPU kernels' thread pool -------------*- C++ -*-===//
//
// The optimizers' updates and casts, the elementwise kernels an offloaded
// step runs on the host, split large tensors over a pool of host threads,
// oneTBB's. (The forward's and backward's elementwise kernels stay on the
// calling thread: there the matmuls' OpenBLAS threads hold the cores.) A
// rank sets how many threads it uses with setCpuKernelThreads
// (runtime/kernels/Kernel.h): the machine's cores shared
// among the ranks on it, so ranks that run as threads of one process do not
// oversubscribe the cores. Every element is computed by the same code
// whichever thread runs it, so results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_CPU_HOSTTHREADS_H
#define ZEROSBP_RUNTIME_KERNELS_CPU_HOSTTHREADS_H

#include <cstdint>

namespace zerosbp::runtime::cpu {

/// The threads a parallel kernel uses; 1 until setHostKernelThreads.
int hostKernelThreads();
/// Sets the threads of every parallel kernel in the process (at least 1).
void setHostKernelThreads(int threads);

/// Calls `body(context, begin, end)` on disjoint ranges that together cover
/// [0, count), each a multiple of `grain` long but the last: on the pool
/// when more than one thread is set and there are at least two grains, else
/// once on the calling thread. Returns once every range is done.
void parallelRanges(int64_t count, int64_t grain,
                    void (*body)(void *context, int64_t begin, int64_t end),
                    void *context);

/// The same for a callable `body(begin, end)`.
template <typename Body>
void parallelRanges(int64_t count, int64_t grain, Body &&body) {
  parallelRanges(
      count, grain,
      [](void *context, int64_t begin, int64_t end) {
        (*static_cast<Body *>(context))(begin, end);
      },
      &body);
}

} // namespace zerosbp::runtime::cpu

#endif // ZEROSBP_RUNTIME_KERNELS_CPU_HOSTTHREADS_H
