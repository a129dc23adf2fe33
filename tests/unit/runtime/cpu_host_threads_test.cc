//===- cpu_host_threads_test.cc - the CPU kernels' parallel ranges --------===//
//
// parallelRanges covers every element once in grain-aligned ranges on
// several threads, and a parallel elementwise kernel whose result overlaps
// its operand other than in place (a narrowing cast into the operand's own
// first bytes) still computes what one thread computes.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/HostThreads.h"
#include "tests/unit/runtime/kernel_test_util.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace zerosbp::runtime::test {
namespace {

class KernelThreads {
public:
  explicit KernelThreads(int threads) { setCpuKernelThreads(threads); }
  ~KernelThreads() { setCpuKernelThreads(1); }
};

TEST(HostThreads, RangesCoverEveryElementOnceAlignedToTheGrain) {
  KernelThreads threads(2);
  EXPECT_EQ(cpu::hostKernelThreads(), 2);
  const int64_t count = 100003, grain = 1000;
  auto seen = std::make_unique<std::atomic<int>[]>(count);
  std::mutex mutex;
  std::set<std::thread::id> workers;
  int ranges = 0;
  cpu::parallelRanges(count, grain, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(begin % grain, 0);
    EXPECT_TRUE(end == count || end % grain == 0) << end;
    EXPECT_LT(begin, end);
    for (int64_t i = begin; i < end; ++i)
      seen[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(mutex);
    workers.insert(std::this_thread::get_id());
    ++ranges;
  });
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(seen[i].load(), 1) << "element " << i;
  EXPECT_GE(ranges, 2);
  EXPECT_LE(workers.size(), 2u);
}

TEST(HostThreads, OneThreadRunsOneRangeOnTheCaller) {
  KernelThreads threads(1);
  int calls = 0;
  std::thread::id caller = std::this_thread::get_id(), ran;
  cpu::parallelRanges(100000, 100, [&](int64_t begin, int64_t end) {
    ++calls;
    ran = std::this_thread::get_id();
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100000);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran, caller);
  // Nothing to do: no call.
  cpu::parallelRanges(0, 100, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(HostThreads, CastIntoItsOperandsFirstBytesRunsAsOneThreadWould) {
  // An f32 -> bf16 cast whose result starts at the operand's first byte:
  // result chunk k lies in operand chunk k / 2, which a thread working on
  // the lower half may not have read yet. The kernel must see the overlap
  // and run in order.
  KernelThreads threads(2);
  const int64_t numel = 1 << 20;
  Buffer source = randomTensor(DType::F32, {numel}, 7);
  Buffer expected(DType::BF16, {numel});
  for (int64_t i = 0; i < numel; ++i)
    expected.set(i, source.get(i)); // Rounds to nearest even.
  for (int attempt = 0; attempt < 10; ++attempt) {
    Buffer operand = source.clone();
    TensorRef result = operand.ref;
    result.dtype = DType::BF16;
    runKernel("nn.cast", AttrMap(), {operand.ref}, {result});
    ASSERT_EQ(std::memcmp(result.data, expected.ref.data, expected.ref.bytes()),
              0)
        << "attempt " << attempt;
  }
}

} // namespace
} // namespace zerosbp::runtime::test
