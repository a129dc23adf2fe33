//===- HostThreads.cpp - the CPU kernels' thread pool ---------------------===//

#include "runtime/kernels/cpu/HostThreads.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

namespace zerosbp::runtime::cpu {

namespace {
std::atomic<int> threadCount{1};
std::mutex controlMutex;
// oneTBB's limit on the threads of the whole process.
std::unique_ptr<tbb::global_control> threadLimit;
} // namespace

int hostKernelThreads() { return threadCount.load(std::memory_order_relaxed); }

void setHostKernelThreads(int threads) {
  threads = std::max(threads, 1);
  std::lock_guard<std::mutex> lock(controlMutex);
  threadLimit.reset();
  if (threads > 1)
    threadLimit = std::make_unique<tbb::global_control>(
        tbb::global_control::max_allowed_parallelism,
        static_cast<size_t>(threads));
  threadCount.store(threads, std::memory_order_relaxed);
}

void parallelRanges(int64_t count, int64_t grain,
                    void (*body)(void *context, int64_t begin, int64_t end),
                    void *context) {
  grain = std::max<int64_t>(grain, 1);
  int64_t grains = (count + grain - 1) / grain;
  if (hostKernelThreads() < 2 || grains < 2) {
    if (count > 0)
      body(context, 0, count);
    return;
  }
  // Memory-bound loops: one even share per thread, no stealing.
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, grains),
      [&](const tbb::blocked_range<int64_t> &range) {
        body(context, range.begin() * grain,
             std::min(count, range.end() * grain));
      },
      tbb::static_partitioner());
}

} // namespace zerosbp::runtime::cpu
