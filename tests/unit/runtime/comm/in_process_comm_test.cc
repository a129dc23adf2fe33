//===- in_process_comm_test.cc - the in-process communicator --------------===//
//
// Every collective against the rank-order reference for 1 to 4 ranks,
// uneven counts, Sum and Max; groups; the bytes-sent counters; failures
// (abort, timeout, mismatched calls) and run-to-run reproducibility.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/core/Error.h"
#include "tests/unit/runtime/comm/collective_cases.h"
#include "tests/unit/runtime/comm/rank_threads_test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <regex>
#include <thread>

namespace zerosbp::runtime {
namespace {

using namespace std::chrono_literals;
using testing::Bytes;
using testing::CollectiveCase;
using Clock = std::chrono::steady_clock;

using testing::allRanks;
using testing::expectNoErrors;
using testing::messageOf;

struct Params {
  int size;
  DType type;
};

class CollectiveTest : public ::testing::TestWithParam<Params> {};

TEST_P(CollectiveTest, MatchesRankOrderReference) {
  int size = GetParam().size;
  std::vector<CollectiveCase> cases = testing::makeCases(
      {GetParam().type}, {0, 1, 2, 3, 5, 7, 16, 100, 1001, 4099});
  InProcessWorld world(size);
  std::vector<std::vector<Bytes>> outputs(size);
  std::vector<std::vector<CommStats>> stats(size);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    CommGroup &group = comm.createGroup(allRanks(size));
    for (size_t i = 0; i < cases.size(); ++i) {
      comm.resetStats();
      Bytes input = testing::makeInput(cases[i], size, group.index(), i);
      outputs[comm.rank()].push_back(
          testing::runCase(comm, group, cases[i], input));
      stats[comm.rank()].push_back(comm.stats());
    }
  }));
  for (int rank = 0; rank < size; ++rank) {
    ASSERT_EQ(outputs[rank].size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      const CollectiveCase &c = cases[i];
      Bytes expected = testing::expectedOutput(c, size, rank, i);
      EXPECT_EQ(testing::firstDifference(c, outputs[rank][i], expected), "")
          << c.name() << " on rank " << rank << " of " << size;
      const CommStats &counted = stats[rank][i];
      EXPECT_EQ(counted.sent(c.kind), testing::expectedBytesSent(c, size, rank))
          << c.name() << " on rank " << rank << " of " << size;
      for (int k = 0; k < kNumCollectiveKinds; ++k) {
        auto kind = static_cast<CollectiveKind>(k);
        EXPECT_EQ(counted.called(kind), kind == c.kind ? 1 : 0) << c.name();
        if (kind != c.kind)
          EXPECT_EQ(counted.sent(kind), 0) << c.name();
      }
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<Params> &info) {
  return "n" + std::to_string(info.param.size) + "_" +
         dtypeName(info.param.type);
}

std::vector<Params> allParams() {
  std::vector<Params> params;
  for (int size : {1, 2, 3, 4})
    for (DType type : {DType::F32, DType::BF16, DType::F64, DType::F16,
                       DType::I64, DType::I32, DType::I8})
      params.push_back({size, type});
  return params;
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectiveTest,
                         ::testing::ValuesIn(allParams()), paramName);

TEST(InProcessComm, BytesSentMatchDesignFormulas) {
  // T = full-size tensor bytes: all-reduce 2T(n-1)/n, reduce-scatter and
  // all-gather T(n-1)/n, all-to-all T(n-1)/n^2 with T the logical tensor
  // (each rank holds T/n).
  constexpr int kSize = 4;
  constexpr int64_t kCount = 1024; // elements per part
  InProcessWorld world(kSize);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    CommGroup &group = comm.createGroup(allRanks(kSize));
    std::vector<float> full(kSize * kCount, 1.0f), part(kCount, 1.0f);
    comm.allReduce(group, DType::F32, full.data(), kSize * kCount,
                   ReduceOp::Sum);
    comm.reduceScatter(group, DType::F32, full.data(), part.data(), kCount,
                       ReduceOp::Sum);
    comm.allGather(group, DType::F32, part.data(), full.data(), kCount);
    std::vector<float> exchanged(kSize * kCount);
    comm.allToAll(group, DType::F32, full.data(), exchanged.data(), kCount);
    int64_t t = kSize * kCount * 4;
    const CommStats &stats = comm.stats();
    EXPECT_EQ(stats.sent(CollectiveKind::AllReduce), 2 * t * 3 / 4);
    EXPECT_EQ(stats.sent(CollectiveKind::ReduceScatter), t * 3 / 4);
    EXPECT_EQ(stats.sent(CollectiveKind::AllGather), t * 3 / 4);
    int64_t logical = kSize * t; // the all-to-all's whole tensor
    EXPECT_EQ(stats.sent(CollectiveKind::AllToAll), logical * 3 / 16);
    for (int k = 0; k < kNumCollectiveKinds; ++k)
      EXPECT_EQ(stats.calls[k],
                static_cast<CollectiveKind>(k) == CollectiveKind::SendRecv ? 0
                                                                           : 1);
  }));
}

TEST(InProcessComm, SingleRankSendsNothingAndCopies) {
  InProcessWorld world(1);
  Communicator &comm = world.communicator(0);
  CommGroup &group = comm.createGroup({0});
  std::vector<double> data = {1.5, -2.0, 3.25};
  std::vector<double> out(3);
  comm.allReduce(group, DType::F64, data.data(), 3, ReduceOp::Sum);
  EXPECT_EQ(data, (std::vector<double>{1.5, -2.0, 3.25}));
  comm.reduceScatter(group, DType::F64, data.data(), out.data(), 3,
                     ReduceOp::Max);
  EXPECT_EQ(out, data);
  std::fill(out.begin(), out.end(), 0.0);
  comm.allGather(group, DType::F64, data.data(), out.data(), 3);
  EXPECT_EQ(out, data);
  std::fill(out.begin(), out.end(), 0.0);
  comm.allToAll(group, DType::F64, data.data(), out.data(), 3);
  EXPECT_EQ(out, data);
  for (int k = 0; k < kNumCollectiveKinds; ++k) {
    EXPECT_EQ(comm.stats().bytesSent[k], 0);
    EXPECT_EQ(comm.stats().calls[k],
              static_cast<CollectiveKind>(k) == CollectiveKind::SendRecv ? 0
                                                                         : 1);
  }
}

TEST(InProcessComm, InPlaceReduceScatterAndAllGather) {
  constexpr int kSize = 3;
  constexpr int64_t kCount = 5;
  InProcessWorld world(kSize);
  std::vector<std::vector<float>> results(kSize);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    CommGroup &group = comm.createGroup(allRanks(kSize));
    int me = group.index();
    std::vector<float> buffer(kSize * kCount);
    for (size_t i = 0; i < buffer.size(); ++i)
      buffer[i] = static_cast<float>(i) + 0.25f * me;
    float *own = buffer.data() + me * kCount;
    comm.reduceScatter(group, DType::F32, buffer.data(), own, kCount,
                       ReduceOp::Sum);
    comm.allGather(group, DType::F32, own, buffer.data(), kCount);
    results[me] = buffer;
  }));
  for (int rank = 0; rank < kSize; ++rank)
    for (size_t i = 0; i < results[rank].size(); ++i)
      EXPECT_EQ(results[rank][i], 3.0f * i + 0.75f) << "rank " << rank;
}

TEST(InProcessComm, TwoByTwoGroups) {
  // Hierarchy [2, 2]: rank = 2 * row + column. Rows {0,1} {2,3} and columns
  // {0,2} {1,3}.
  InProcessWorld world(4);
  CollectiveCase c{CollectiveKind::AllReduce, DType::BF16, 33, ReduceOp::Sum};
  CollectiveCase scatter{CollectiveKind::ReduceScatter, DType::F32, 9,
                         ReduceOp::Sum};
  std::vector<Bytes> rowOut(4), columnOut(4);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    int row = comm.rank() / 2, column = comm.rank() % 2;
    CommGroup &rowGroup = comm.createGroup({2 * row, 2 * row + 1});
    CommGroup &columnGroup = comm.createGroup({column, column + 2});
    EXPECT_EQ(rowGroup.index(), column);
    EXPECT_EQ(columnGroup.index(), row);
    // Rows run independently: one row is slow to start.
    if (row == 1)
      std::this_thread::sleep_for(20ms);
    for (int repeat = 0; repeat < 5; ++repeat)
      rowOut[comm.rank()] = testing::runCase(
          comm, rowGroup, c,
          testing::makeInput(c, 2, rowGroup.index(), 100 + row));
    columnOut[comm.rank()] = testing::runCase(
        comm, columnGroup, scatter,
        testing::makeInput(scatter, 2, columnGroup.index(), 200 + column));
  }));
  for (int rank = 0; rank < 4; ++rank) {
    int row = rank / 2, column = rank % 2;
    EXPECT_EQ(
        testing::firstDifference(
            c, rowOut[rank], testing::expectedOutput(c, 2, column, 100 + row)),
        "")
        << "rank " << rank;
    EXPECT_EQ(testing::firstDifference(
                  scatter, columnOut[rank],
                  testing::expectedOutput(scatter, 2, row, 200 + column)),
              "")
        << "rank " << rank;
  }
}

TEST(InProcessComm, ReproducibleBitForBit) {
  constexpr int kSize = 4;
  std::vector<CollectiveCase> cases =
      testing::makeCases({DType::F32, DType::BF16}, {4097});
  auto run = [&](unsigned jitterSeed) {
    InProcessWorld world(kSize);
    std::vector<Bytes> outputs(kSize);
    expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
      std::mt19937 jitter(jitterSeed + comm.rank());
      CommGroup &group = comm.createGroup(allRanks(kSize));
      for (size_t i = 0; i < cases.size(); ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(jitter() % 300));
        Bytes out = testing::runCase(
            comm, group, cases[i],
            testing::makeInput(cases[i], kSize, group.index(), 7));
        outputs[comm.rank()].insert(outputs[comm.rank()].end(), out.begin(),
                                    out.end());
      }
    }));
    return outputs;
  };
  std::vector<Bytes> first = run(1), second = run(2);
  for (int rank = 0; rank < kSize; ++rank) {
    ASSERT_FALSE(first[rank].empty());
    EXPECT_TRUE(first[rank] == second[rank]) << "rank " << rank;
  }
}

TEST(InProcessComm, AbortFailsEveryOtherRankPromptly) {
  constexpr int kSize = 4;
  InProcessWorld world(kSize);
  std::vector<Clock::duration> waited(kSize);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        CommGroup &group = comm.createGroup(allRanks(kSize));
        std::vector<float> data(64, 1.0f);
        comm.allReduce(group, DType::F32, data.data(), 64, ReduceOp::Sum);
        if (comm.rank() == 1) {
          std::this_thread::sleep_for(100ms);
          comm.abort("injected failure");
          return;
        }
        auto start = Clock::now();
        try {
          comm.allReduce(group, DType::F32, data.data(), 64, ReduceOp::Sum);
        } catch (...) {
          waited[comm.rank()] = Clock::now() - start;
          throw;
        }
      });
  EXPECT_FALSE(errors[1]);
  for (int rank : {0, 2, 3}) {
    EXPECT_EQ(messageOf(errors[rank]), "rank 1 failed: injected failure")
        << "rank " << rank;
    EXPECT_LT(waited[rank], 1s) << "rank " << rank;
  }
  EXPECT_TRUE(world.failed());
  EXPECT_EQ(world.failedRank(), 1);
  // The world stays unusable.
  std::vector<std::exception_ptr> later =
      world.runOnAllRanks([&](Communicator &comm) {
        CommGroup &group = comm.createGroup(allRanks(kSize));
        float value = 1;
        comm.allReduce(group, DType::F32, &value, 1, ReduceOp::Sum);
      });
  for (int rank = 0; rank < kSize; ++rank)
    EXPECT_EQ(messageOf(later[rank]), "rank 1 failed: injected failure");
}

TEST(InProcessComm, AbortFromAnotherThreadDuringACollective) {
  // Rank 2's compute thread fails while its communication thread waits in
  // a collective that the other ranks have not reached.
  constexpr int kSize = 3;
  InProcessWorld world(kSize);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        CommGroup &group = comm.createGroup(allRanks(kSize));
        std::vector<double> data(10, 2.0), out(30);
        std::thread failing;
        if (comm.rank() == 2)
          failing = std::thread([&] {
            std::this_thread::sleep_for(50ms);
            comm.abort("out of memory");
          });
        else
          std::this_thread::sleep_for(200ms);
        try {
          comm.allGather(group, DType::F64, data.data(), out.data(), 10);
        } catch (...) {
          if (failing.joinable())
            failing.join();
          throw;
        }
        if (failing.joinable())
          failing.join();
      });
  for (int rank = 0; rank < kSize; ++rank)
    EXPECT_EQ(messageOf(errors[rank]), "rank 2 failed: out of memory")
        << "rank " << rank;
}

TEST(InProcessComm, TimeoutNamesTheMissingRank) {
  constexpr int kSize = 4;
  InProcessWorld world(kSize);
  std::vector<Clock::duration> waited(kSize);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(200ms);
        CommGroup &group = comm.createGroup(allRanks(kSize));
        std::vector<float> data(8, 1.0f);
        comm.allReduce(group, DType::F32, data.data(), 8, ReduceOp::Sum);
        if (comm.rank() == 3)
          return; // never calls again
        auto start = Clock::now();
        try {
          comm.allReduce(group, DType::F32, data.data(), 8, ReduceOp::Sum);
        } catch (...) {
          waited[comm.rank()] = Clock::now() - start;
          throw;
        }
      });
  EXPECT_FALSE(errors[3]);
  // Normally "waiting for rank 3"; a rank descheduled for the whole 200 ms
  // is named too.
  std::regex expected(
      "timed out after 200 ms waiting for (rank 3|ranks [0-9, ]*3) in "
      "all_reduce");
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(std::regex_match(messageOf(errors[rank]), expected))
        << "rank " << rank << ": " << messageOf(errors[rank]);
    EXPECT_LT(waited[rank], 200ms + 800ms) << "rank " << rank;
  }
  EXPECT_TRUE(world.failed());
  EXPECT_EQ(world.failedRank(), std::nullopt);
}

TEST(InProcessComm, TimeoutInOneGroupLeavesNoOneHanging) {
  // Group {0, 1} times out waiting for rank 1; rank 1 arrives late and
  // finds the world failed.
  InProcessWorld world(2);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(100ms);
        CommGroup &group = comm.createGroup({0, 1});
        if (comm.rank() == 1)
          std::this_thread::sleep_for(300ms);
        int64_t value = comm.rank();
        comm.allReduce(group, DType::I64, &value, 1, ReduceOp::Sum);
      });
  EXPECT_EQ(messageOf(errors[0]),
            "timed out after 100 ms waiting for rank 1 in all_reduce");
  EXPECT_EQ(messageOf(errors[1]),
            "timed out after 100 ms waiting for rank 1 in all_reduce");
}

TEST(InProcessComm, MismatchedCallsFailEveryRank) {
  InProcessWorld world(2);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        CommGroup &group = comm.createGroup({0, 1});
        std::vector<float> data(8);
        comm.allReduce(group, DType::F32, data.data(), 4 + comm.rank(),
                       ReduceOp::Sum);
      });
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_EQ(messageOf(errors[rank]),
              "mismatched collectives in group [0, 1]: rank 0 calls "
              "all_reduce of 4 f32 elements (sum), rank 1 calls all_reduce "
              "of 5 f32 elements (sum)");
}

TEST(InProcessComm, BadArgumentsFailThePeersToo) {
  InProcessWorld world(2);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        CommGroup &group = comm.createGroup({0, 1});
        std::vector<float> data(8);
        comm.allToAll(group, DType::F32, data.data(),
                      comm.rank() == 0 ? data.data() + 1 : data.data() + 8 - 8,
                      comm.rank() == 0 ? 2 : 0);
      });
  EXPECT_NE(messageOf(errors[0]).find("rank 0 failed: all_to_all"),
            std::string::npos)
      << messageOf(errors[0]);
  EXPECT_NE(messageOf(errors[0]).find("overlapping"), std::string::npos);
  EXPECT_TRUE(errors[1]);
}

TEST(InProcessComm, CreateGroupChecksItsRanks) {
  InProcessWorld world(4);
  Communicator &comm = world.communicator(0);
  EXPECT_THROW(comm.createGroup({}), RuntimeError);
  EXPECT_THROW(comm.createGroup({0, 4}), RuntimeError);
  EXPECT_THROW(comm.createGroup({0, 0}), RuntimeError);
  EXPECT_THROW(comm.createGroup({1, 2}), RuntimeError);
  EXPECT_THROW(world.communicator(4), RuntimeError);
  EXPECT_THROW(InProcessWorld(0), RuntimeError);
  // Rank 1 disagrees about the first group rank 0 made.
  comm.createGroup({0, 1});
  try {
    world.communicator(1).createGroup({1, 2});
    ADD_FAILURE() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_EQ(std::string(error.what()),
              "createGroup #0: rank 1 asks for group [1, 2] but rank 1 is in "
              "group [0, 1]");
  }
}

TEST(InProcessComm, GroupFromAnotherCommunicatorIsRejected) {
  InProcessWorld world(2);
  CommGroup &foreign = world.communicator(1).createGroup({1});
  float value = 0;
  EXPECT_THROW(world.communicator(0).allReduce(foreign, DType::F32, &value, 1,
                                               ReduceOp::Sum),
               RuntimeError);
}

//===----------------------------------------------------------------------===//
// reduceInRankOrder
//===----------------------------------------------------------------------===//

TEST(ReduceInRankOrder, Bf16RoundsOnceAfterF32Accumulation) {
  // 1 + 2^-8 is a tie in bf16 (rounds to 1); rounding after every step
  // would lose both halves, one rounding keeps them: 1 + 2^-7.
  std::vector<uint16_t> a = {floatToBf16(1.0f)}, b = {floatToBf16(0x1p-8f)},
                        c = {floatToBf16(0x1p-8f)};
  uint16_t out = 0;
  reduceInRankOrder(DType::BF16, {a.data(), b.data(), c.data()}, &out, 1,
                    ReduceOp::Sum);
  EXPECT_EQ(bf16ToFloat(out), 1.0f + 0x1p-7f);
}

TEST(ReduceInRankOrder, F32SumIsInRankOrder) {
  // In f32, (1e8 + 1) - 1e8 = 0 but (-1e8 + 1e8) + 1 = 1: the rank order
  // decides.
  float a = 1e8f, b = 1.0f, c = -1e8f;
  float out = -1;
  reduceInRankOrder(DType::F32, {&a, &b, &c}, &out, 1, ReduceOp::Sum);
  EXPECT_EQ(out, 0.0f);
  reduceInRankOrder(DType::F32, {&c, &b, &a}, &out, 1, ReduceOp::Sum);
  EXPECT_EQ(out, 0.0f);
  reduceInRankOrder(DType::F32, {&c, &a, &b}, &out, 1, ReduceOp::Sum);
  EXPECT_EQ(out, 1.0f);
}

TEST(ReduceInRankOrder, MaxPropagatesNaN) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, nan, 3}, b = {nan, 2, 5};
  std::vector<float> out(3);
  reduceInRankOrder(DType::F32, {a.data(), b.data()}, out.data(), 3,
                    ReduceOp::Max);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 5.0f);
}

TEST(ReduceInRankOrder, IntegersAndBooleans) {
  std::vector<int32_t> a = {1, -7, INT32_MAX}, b = {2, 3, 1};
  std::vector<int32_t> sum(3), max(3);
  reduceInRankOrder(DType::I32, {a.data(), b.data()}, sum.data(), 3,
                    ReduceOp::Sum);
  reduceInRankOrder(DType::I32, {a.data(), b.data()}, max.data(), 3,
                    ReduceOp::Max);
  EXPECT_EQ(sum, (std::vector<int32_t>{3, -4, INT32_MIN}));
  EXPECT_EQ(max, (std::vector<int32_t>{2, 3, INT32_MAX}));
  std::vector<uint8_t> p = {0, 1, 0}, q = {0, 0, 1}, any(3);
  reduceInRankOrder(DType::I1, {p.data(), q.data()}, any.data(), 3,
                    ReduceOp::Sum);
  EXPECT_EQ(any, (std::vector<uint8_t>{0, 1, 1}));
}

TEST(ReduceInRankOrder, OutputMayAliasASource) {
  std::vector<double> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) {
    a[i] = i;
    b[i] = 0.5 * i;
  }
  reduceInRankOrder(DType::F64, {a.data(), b.data()}, b.data(), 1000,
                    ReduceOp::Sum);
  for (int i = 0; i < 1000; ++i)
    EXPECT_EQ(b[i], 1.5 * i);
}

TEST(BalancedPart, LargerPartsFirst) {
  std::vector<int64_t> sizes, offsets;
  for (int i = 0; i < 4; ++i) {
    sizes.push_back(balancedPart(10, 4, i).size);
    offsets.push_back(balancedPart(10, 4, i).offset);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 3, 6, 8}));
  EXPECT_EQ(balancedPart(2, 4, 3).size, 0);
  EXPECT_EQ(balancedPart(2, 4, 3).offset, 2);
}

} // namespace
} // namespace zerosbp::runtime
