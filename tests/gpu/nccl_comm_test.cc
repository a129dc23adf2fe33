//===- nccl_comm_test.cc - NCCL collectives and stream-ordered copies -----===//
//
// NcclComm against the definition of each collective, on device buffers:
// at world size 1 on any GPU (every collective is then a copy, and NCCL's
// real code path runs), and between two in-process ranks where two GPUs
// are visible. Bytes are counted as the CPU backends count them. Also
// StreamMemory's copies against the host's. Without a device every test
// skips itself.
//
//===----------------------------------------------------------------------===//

#include "gpu_test_util.h"

#include "runtime/comm/InProcessComm.h"
#include "runtime/cuda/NcclComm.h"
#include "runtime/cuda/StreamMemory.h"

#include <thread>

namespace zerosbp::runtime::gputest {
namespace {

std::vector<double> iota(int64_t count, double start) {
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = start + static_cast<double>(i);
  return values;
}

std::vector<double> valuesOf(const HostTensor &tensor) {
  std::vector<double> values(tensor.numel());
  for (int64_t i = 0; i < tensor.numel(); ++i)
    values[i] = tensor.get(i);
  return values;
}

using NcclCommTest = CudaDeviceTest;

TEST_F(NcclCommTest, WorldOfOneRunsEveryCollective) {
  InProcessWorld world(1);
  Stream stream;
  NcclComm comm(world.communicator(0), stream.stream);
  CommGroup &group = comm.createGroup({0});
  EXPECT_EQ(group.size(), 1);
  for (DType type : {DType::F32, DType::BF16, DType::F16, DType::I64}) {
    SCOPED_TRACE(dtypeName(type));
    std::vector<double> values = iota(12, -5);
    DeviceTensor data(makeTensor(type, {12}, values));
    DeviceTensor out(makeTensor(type, {12}, std::vector<double>(12, 0)));
    comm.allReduce(group, type, data.ref.data, 12, ReduceOp::Sum);
    stream.sync();
    EXPECT_EQ(valuesOf(data.toHost()), values);
    comm.allReduce(group, type, data.ref.data, 12, ReduceOp::Max);
    comm.reduceScatter(group, type, data.ref.data, out.ref.data, 12,
                       ReduceOp::Sum);
    stream.sync();
    EXPECT_EQ(valuesOf(out.toHost()), values);
    DeviceTensor gathered(makeTensor(type, {12}, std::vector<double>(12, 0)));
    comm.allGather(group, type, out.ref.data, gathered.ref.data, 12);
    DeviceTensor exchanged(makeTensor(type, {12}, std::vector<double>(12, 0)));
    comm.allToAll(group, type, gathered.ref.data, exchanged.ref.data, 12);
    stream.sync();
    EXPECT_EQ(valuesOf(gathered.toHost()), values);
    EXPECT_EQ(valuesOf(exchanged.toHost()), values);
  }
  // One rank sends nothing, as on the CPU.
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather, CollectiveKind::AllToAll}) {
    EXPECT_EQ(comm.stats().sent(kind), 0) << collectiveKindName(kind);
    EXPECT_GE(comm.stats().called(kind), 4) << collectiveKindName(kind);
  }
  EXPECT_NO_THROW(comm.checkAsyncErrors());
}

TEST_F(NcclCommTest, AbortedGroupRefusesWork) {
  InProcessWorld world(1);
  Stream stream;
  NcclComm comm(world.communicator(0), stream.stream);
  CommGroup &group = comm.createGroup({0});
  comm.abort("test");
  DeviceTensor data(makeTensor(DType::F32, {4}, iota(4, 0)));
  try {
    comm.allReduce(group, DType::F32, data.ref.data, 4, ReduceOp::Sum);
    FAIL() << "expected an error";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "nccl: the group [0] was aborted after a failure");
  }
}

TEST_F(NcclCommTest, GroupMustHoldThisRank) {
  InProcessWorld world(1);
  Stream stream;
  NcclComm comm(world.communicator(0), stream.stream);
  EXPECT_THROW(comm.createGroup({1}), RuntimeError);
}

TEST_F(NcclCommTest, TwoRanksOnTwoGpus) {
  int devices = 0;
  checkCudaCall(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 2)
    GTEST_SKIP() << "needs 2 GPUs, " << devices << " visible";
  InProcessWorld world(2);
  constexpr int64_t kCount = 6; // Elements per rank's part.
  std::vector<std::vector<double>> reduced(2), scattered(2), gathered(2);
  std::vector<CommStats> stats(2);
  std::vector<std::exception_ptr> failures =
      world.runOnAllRanks([&](Communicator &host) {
        int rank = host.rank();
        checkCudaCall(cudaSetDevice(rank), "cudaSetDevice");
        Stream stream;
        NcclComm comm(host, stream.stream);
        CommGroup &group = comm.createGroup({0, 1});
        DeviceTensor data(
            makeTensor(DType::F32, {2 * kCount}, iota(2 * kCount, 100 * rank)));
        DeviceTensor part(
            makeTensor(DType::F32, {kCount}, std::vector<double>(kCount, 0)));
        comm.reduceScatter(group, DType::F32, data.ref.data, part.ref.data,
                           kCount, ReduceOp::Sum);
        DeviceTensor all(makeTensor(DType::F32, {2 * kCount},
                                    std::vector<double>(2 * kCount, 0)));
        comm.allGather(group, DType::F32, part.ref.data, all.ref.data, kCount);
        comm.allReduce(group, DType::F32, data.ref.data, 2 * kCount,
                       ReduceOp::Sum);
        stream.sync();
        reduced[rank] = valuesOf(data.toHost());
        scattered[rank] = valuesOf(part.toHost());
        gathered[rank] = valuesOf(all.toHost());
        stats[rank] = comm.stats();
      });
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
  std::vector<double> sum(2 * kCount);
  for (int64_t i = 0; i < 2 * kCount; ++i)
    sum[i] = 2 * i + 100;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(reduced[rank], sum);
    EXPECT_EQ(gathered[rank], sum);
    EXPECT_EQ(scattered[rank],
              std::vector<double>(sum.begin() + rank * kCount,
                                  sum.begin() + (rank + 1) * kCount));
    // docs/ir.md#boxing: T(n-1)/n, and 2T(n-1)/n for the all-reduce.
    EXPECT_EQ(stats[rank].sent(CollectiveKind::ReduceScatter), kCount * 4);
    EXPECT_EQ(stats[rank].sent(CollectiveKind::AllGather), kCount * 4);
    EXPECT_EQ(stats[rank].sent(CollectiveKind::AllReduce), 2 * kCount * 4);
  }
}

using StreamMemoryTest = CudaDeviceTest;

TEST_F(StreamMemoryTest, CopiesRowsLikeTheHost) {
  // 5 rows of 12 bytes out of rows 20 bytes apart, into rows 16 apart.
  HostTensor source = randomTensor(DType::F32, {25}, 7);
  HostTensor hostTarget =
      makeTensor(DType::F32, {20}, std::vector<double>(20, 0));
  hostCollectiveMemory().copyRows(hostTarget.ref.data, 16, source.ref.data, 20,
                                  12, 5);
  Stream stream;
  StreamMemory memory(stream.stream);
  DeviceTensor deviceSource(source);
  DeviceTensor deviceTarget(
      makeTensor(DType::F32, {20}, std::vector<double>(20, 0)));
  memory.copyRows(deviceTarget.ref.data, 16, deviceSource.ref.data, 20, 12, 5);
  void *scratch = memory.allocate(100);
  memory.copy(scratch, deviceSource.ref.data, 100);
  DeviceTensor roundTrip(
      makeTensor(DType::F32, {25}, std::vector<double>(25, 0)));
  memory.copy(roundTrip.ref.data, scratch, 100);
  memory.release(scratch);
  stream.sync();
  EXPECT_EQ(valuesOf(deviceTarget.toHost()), valuesOf(hostTarget));
  EXPECT_EQ(valuesOf(roundTrip.toHost()), valuesOf(source));
}

} // namespace
} // namespace zerosbp::runtime::gputest
