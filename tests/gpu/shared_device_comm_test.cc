//===- shared_device_comm_test.cc - ranks that share one GPU --------------===//
//
// SharedDeviceComm (2 and 4 in-process ranks on GPU 0) against the
// in-process CPU backend on the same inputs: every collective's results,
// and the bytes counted, equal bit for bit, in f32 (sum and max, with a
// NaN), bf16 and i64, in place and not; messages arrive in order; a rank
// that never comes is named after the timeout. Without a device every test
// skips itself.
//
//===----------------------------------------------------------------------===//

#include "gpu_test_util.h"

#include "runtime/comm/InProcessComm.h"
#include "runtime/cuda/SharedDeviceComm.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace zerosbp::runtime::gputest {
namespace {

constexpr int64_t kCount = 37; // Elements per part: not a multiple of 32.

using Bytes = std::vector<unsigned char>;

Bytes bytesOf(const HostTensor &tensor) {
  const auto *data = static_cast<const unsigned char *>(tensor.ref.data);
  return Bytes(data, data + tensor.ref.bytes());
}

/// Each rank's results of every collective, as bytes, and its counters.
struct RankResults {
  Bytes summed, maxed, scattered, gathered, exchanged, received;
  CommStats stats;
};

/// Rank `rank`'s input of n parts: distinct per rank, with a NaN in f32.
HostTensor inputOf(DType type, int rank, int n) {
  HostTensor input =
      type == DType::I64
          ? test::randomIndices(type, {n * kCount}, 10 + rank, 1000)
          : randomTensor(type, {n * kCount}, 10 + rank, -4.0, 4.0);
  if (type == DType::F32 && rank == 1)
    input.set(3, std::numeric_limits<double>::quiet_NaN());
  return input;
}

/// The collectives of one rank, on `comm`; with `onDevice`, every buffer is
/// device memory and `stream` is the communicator's.
RankResults runRank(Communicator &comm, DType type, bool onDevice,
                    Stream *stream) {
  int rank = comm.rank(), n = comm.worldSize();
  std::vector<int> everyone(n);
  for (int r = 0; r < n; ++r)
    everyone[r] = r;
  CommGroup &group = comm.createGroup(everyone);
  HostTensor input = inputOf(type, rank, n);
  HostTensor zeros =
      makeTensor(type, {n * kCount}, std::vector<double>(n * kCount, 0));
  HostTensor partZeros =
      makeTensor(type, {kCount}, std::vector<double>(kCount, 0));
  // Host or device copies of the buffers.
  std::vector<std::unique_ptr<DeviceTensor>> device;
  std::vector<HostTensor> host;
  auto buffer = [&](const HostTensor &from) -> void * {
    if (onDevice) {
      device.push_back(std::make_unique<DeviceTensor>(from));
      return device.back()->ref.data;
    }
    host.push_back(from.clone());
    return host.back().ref.data;
  };
  void *summed = buffer(input), *maxed = buffer(input);
  void *scattered = buffer(partZeros), *gathered = buffer(zeros);
  void *exchanged = buffer(zeros), *received = buffer(partZeros);
  void *source = buffer(input);
  // In place: the all-reduces, and the all-gather of the rank's own part.
  comm.allReduce(group, type, summed, n * kCount, ReduceOp::Sum);
  if (type != DType::I64)
    comm.allReduce(group, type, maxed, n * kCount, ReduceOp::Max);
  comm.reduceScatter(group, type, source, scattered, kCount, ReduceOp::Sum);
  size_t partBytes = kCount * dtypeBytes(type);
  void *ownPart = static_cast<char *>(gathered) + rank * partBytes;
  if (onDevice)
    checkCudaCall(cudaMemcpyAsync(ownPart, scattered, partBytes,
                                  cudaMemcpyDeviceToDevice, stream->stream),
                  "cudaMemcpyAsync");
  else
    std::memcpy(ownPart, scattered, partBytes);
  comm.allGather(group, type, ownPart, gathered, kCount);
  comm.allToAll(group, type, source, exchanged, kCount);
  // A ring of two messages each: the second overwrites the first.
  for (int round = 0; round < 2; ++round) {
    comm.send(group, type, static_cast<char *>(source) + round * partBytes,
              kCount, (rank + 1) % n);
    comm.recv(group, type, received, kCount, (rank + n - 1) % n);
  }
  if (stream)
    stream->sync();
  RankResults results;
  auto read = [&](void *data, int64_t count) {
    HostTensor out = makeTensor(type, {count}, std::vector<double>(count, 0));
    if (onDevice)
      checkCudaCall(
          cudaMemcpy(out.ref.data, data, out.ref.bytes(), cudaMemcpyDefault),
          "cudaMemcpy to the host");
    else
      std::memcpy(out.ref.data, data, out.ref.bytes());
    return bytesOf(out);
  };
  results.summed = read(summed, n * kCount);
  results.maxed = read(maxed, n * kCount);
  results.scattered = read(scattered, kCount);
  results.gathered = read(gathered, n * kCount);
  results.exchanged = read(exchanged, n * kCount);
  results.received = read(received, kCount);
  results.stats = comm.stats();
  return results;
}

std::vector<RankResults> runWorld(int n, DType type, bool onDevice) {
  InProcessWorld world(n);
  std::vector<RankResults> results(n);
  std::vector<std::exception_ptr> failures =
      world.runOnAllRanks([&](Communicator &host) {
        if (!onDevice) {
          results[host.rank()] = runRank(host, type, false, nullptr);
          return;
        }
        checkCudaCall(cudaSetDevice(0), "cudaSetDevice");
        Stream stream;
        SharedDeviceComm comm(host, stream.stream);
        results[host.rank()] = runRank(comm, type, true, &stream);
      });
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
  return results;
}

using SharedDeviceCommTest = CudaDeviceTest;

TEST_F(SharedDeviceCommTest, EqualsTheCpuBackendBitForBit) {
  for (int n : {2, 4})
    for (DType type : {DType::F32, DType::BF16, DType::I64}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, " + dtypeName(type));
      std::vector<RankResults> cpu = runWorld(n, type, false);
      std::vector<RankResults> gpu = runWorld(n, type, true);
      for (int rank = 0; rank < n; ++rank) {
        SCOPED_TRACE("rank " + std::to_string(rank));
        EXPECT_EQ(gpu[rank].summed, cpu[rank].summed);
        EXPECT_EQ(gpu[rank].maxed, cpu[rank].maxed);
        EXPECT_EQ(gpu[rank].scattered, cpu[rank].scattered);
        EXPECT_EQ(gpu[rank].gathered, cpu[rank].gathered);
        EXPECT_EQ(gpu[rank].exchanged, cpu[rank].exchanged);
        EXPECT_EQ(gpu[rank].received, cpu[rank].received);
        EXPECT_EQ(gpu[rank].stats.bytesSent, cpu[rank].stats.bytesSent);
        EXPECT_EQ(gpu[rank].stats.calls, cpu[rank].stats.calls);
      }
    }
}

TEST_F(SharedDeviceCommTest, NamesTheRankThatDoesNotCome) {
  InProcessWorld world(2);
  std::vector<std::string> messages(2);
  std::vector<std::exception_ptr> failures =
      world.runOnAllRanks([&](Communicator &host) {
        checkCudaCall(cudaSetDevice(0), "cudaSetDevice");
        Stream stream;
        SharedDeviceComm comm(host, stream.stream);
        comm.setTimeout(std::chrono::milliseconds(300));
        CommGroup &group = comm.createGroup({0, 1});
        if (host.rank() == 1)
          return; // Never joins the all-reduce.
        DeviceTensor data(makeTensor(DType::F32, {4}, {1, 2, 3, 4}));
        try {
          comm.allReduce(group, DType::F32, data.ref.data, 4, ReduceOp::Sum);
        } catch (const RuntimeError &error) {
          messages[0] = error.what();
        }
      });
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
  EXPECT_EQ(messages[0],
            "timed out after 300 ms waiting for rank 1 in all_reduce");
}

} // namespace
} // namespace zerosbp::runtime::gputest
