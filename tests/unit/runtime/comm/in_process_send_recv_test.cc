//===- in_process_send_recv_test.cc - point to point between threads ------===//
//
// send() and recv() of the in-process communicator, as pipeline stages use
// them: the bytes arrive whole and in the order sent, between 2 and 4 ranks
// and within groups of a [stages, data] grid; only the sender counts bytes
// (kind send_recv, on its group's axis); a receive whose peer never sends
// times out naming it, an abort ends it at once, and a mismatched or bad
// call fails every rank. Every wait here is bounded by a short timeout.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/core/Error.h"
#include "tests/unit/runtime/comm/rank_threads_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

namespace zerosbp::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::allRanks;
using testing::expectNoErrors;
using testing::messageOf;

/// `count` floats that differ per (tag, element).
std::vector<float> payload(int tag, int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(tag) * 1000.0f + static_cast<float>(i);
  return values;
}

TEST(InProcessSendRecv, TwoRanksMoveTheBytesAndOnlyTheSenderCounts) {
  constexpr int64_t kCount = 1001;
  InProcessWorld world(2);
  std::vector<CommStats> stats(2);
  std::vector<float> received(kCount, -1.0f);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    comm.setTimeout(5s);
    CommGroup &group = comm.createGroup(allRanks(2));
    group.setAxis(0);
    if (comm.rank() == 0) {
      std::vector<float> data = payload(7, kCount);
      comm.send(group, DType::F32, data.data(), kCount, 1);
      // The message was copied: the sender may reuse its buffer at once.
      std::fill(data.begin(), data.end(), 0.0f);
    } else {
      comm.recv(group, DType::F32, received.data(), kCount, 0);
    }
    stats[comm.rank()] = comm.stats();
  }));
  EXPECT_EQ(received, payload(7, kCount));
  EXPECT_EQ(stats[0].sent(CollectiveKind::SendRecv), kCount * 4);
  EXPECT_EQ(stats[0].bytesSentOnAxis[0], kCount * 4);
  EXPECT_EQ(stats[0].called(CollectiveKind::SendRecv), 1);
  EXPECT_EQ(stats[1].sent(CollectiveKind::SendRecv), 0);
  EXPECT_EQ(stats[1].bytesSentOnAxis[0], 0);
  EXPECT_EQ(stats[1].called(CollectiveKind::SendRecv), 1);
  for (CommStats &counted : stats)
    for (int k = 0; k < kNumCollectiveKinds; ++k)
      if (static_cast<CollectiveKind>(k) != CollectiveKind::SendRecv)
        EXPECT_EQ(counted.calls[k], 0);
}

TEST(InProcessSendRecv, FourStagesForwardAndBackward) {
  // A pipeline's step in miniature: each stage adds its rank and passes the
  // activation on; the last sends a gradient back down the chain.
  constexpr int kSize = 4;
  constexpr int64_t kCount = 5;
  InProcessWorld world(kSize);
  std::vector<double> gradient(kCount, 0.0);
  std::vector<CommStats> stats(kSize);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    comm.setTimeout(5s);
    CommGroup &group = comm.createGroup(allRanks(kSize));
    group.setAxis(0);
    int me = group.index();
    std::vector<double> activation(kCount, 0.0);
    if (me > 0)
      comm.recv(group, DType::F64, activation.data(), kCount, me - 1);
    for (double &value : activation)
      value += me + 1;
    if (me + 1 < kSize)
      comm.send(group, DType::F64, activation.data(), kCount, me + 1);
    std::vector<double> back = activation;
    if (me + 1 < kSize)
      comm.recv(group, DType::F64, back.data(), kCount, me + 1);
    for (double &value : back)
      value *= 2;
    if (me > 0)
      comm.send(group, DType::F64, back.data(), kCount, me - 1);
    else
      gradient = back;
    stats[comm.rank()] = comm.stats();
  }));
  // Forward: 1 + 2 + 3 + 4 = 10; backward doubles it at every stage.
  EXPECT_EQ(gradient, std::vector<double>(kCount, 10.0 * 16));
  for (int rank = 0; rank < kSize; ++rank) {
    int sends = (rank + 1 < kSize) + (rank > 0);
    EXPECT_EQ(stats[rank].sent(CollectiveKind::SendRecv), sends * kCount * 8)
        << "rank " << rank;
    EXPECT_EQ(stats[rank].called(CollectiveKind::SendRecv), 2 * sends)
        << "rank " << rank;
  }
}

TEST(InProcessSendRecv, MessagesArriveInTheOrderSent) {
  // Rank 0 sends ten messages to rank 1 and ten to rank 2, of growing
  // sizes, before either receives; each receiver reads its own in order.
  constexpr int kMessages = 10;
  InProcessWorld world(3);
  std::vector<std::vector<std::vector<int64_t>>> received(3);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    comm.setTimeout(5s);
    CommGroup &group = comm.createGroup(allRanks(3));
    if (comm.rank() == 0) {
      for (int m = 0; m < kMessages; ++m)
        for (int peer : {1, 2}) {
          std::vector<int64_t> data(m + 1, 100 * peer + m);
          comm.send(group, DType::I64, data.data(), m + 1, peer);
        }
      return;
    }
    std::this_thread::sleep_for(20ms); // Every message is queued by now.
    for (int m = 0; m < kMessages; ++m) {
      std::vector<int64_t> data(m + 1, -1);
      comm.recv(group, DType::I64, data.data(), m + 1, 0);
      received[comm.rank()].push_back(data);
    }
  }));
  for (int peer : {1, 2}) {
    ASSERT_EQ(received[peer].size(), size_t(kMessages));
    for (int m = 0; m < kMessages; ++m)
      EXPECT_EQ(received[peer][m], std::vector<int64_t>(m + 1, 100 * peer + m))
          << "message " << m << " to rank " << peer;
  }
}

TEST(InProcessSendRecv, GroupsOfAGridKeepTheirMessagesApart) {
  // Hierarchy [2, 2] (stages, data): the pipeline groups are {0, 2} and
  // {1, 3}; both send at once, and rank 1 also talks within its data group
  // {0, 1} to rank 0, which must not get the pipeline's messages.
  InProcessWorld world(4);
  std::vector<std::vector<float>> got(4);
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    comm.setTimeout(5s);
    int stage = comm.rank() / 2, column = comm.rank() % 2;
    CommGroup &dataGroup = comm.createGroup({2 * stage, 2 * stage + 1});
    CommGroup &pipeline = comm.createGroup({column, column + 2});
    std::vector<float> buffer = payload(comm.rank(), 3);
    if (stage == 0)
      comm.send(pipeline, DType::F32, buffer.data(), 3, 1);
    if (comm.rank() == 1)
      comm.send(dataGroup, DType::F32, buffer.data(), 2, 0);
    std::vector<float> in(3, -1.0f);
    if (stage == 1)
      comm.recv(pipeline, DType::F32, in.data(), 3, 0);
    if (comm.rank() == 0)
      comm.recv(dataGroup, DType::F32, in.data(), 2, 1);
    got[comm.rank()] = in;
  }));
  EXPECT_EQ(got[2], payload(0, 3));
  EXPECT_EQ(got[3], payload(1, 3));
  EXPECT_EQ(got[0], (std::vector<float>{1000.0f, 1001.0f, -1.0f}));
}

TEST(InProcessSendRecv, EveryTypeArrivesBitForBit) {
  InProcessWorld world(2);
  std::vector<DType> types = {DType::F32, DType::F16, DType::BF16, DType::F64,
                              DType::I64, DType::I32, DType::I1};
  std::vector<std::vector<unsigned char>> sent, received;
  for (DType type : types) {
    std::vector<unsigned char> bytes(7 * dtypeBytes(type));
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<unsigned char>(37 * i + static_cast<int>(type));
    sent.push_back(bytes);
    received.emplace_back(bytes.size(), 0);
  }
  expectNoErrors(world.runOnAllRanks([&](Communicator &comm) {
    comm.setTimeout(5s);
    CommGroup &group = comm.createGroup({0, 1});
    for (size_t t = 0; t < types.size(); ++t) {
      if (comm.rank() == 1)
        comm.send(group, types[t], sent[t].data(), 7, 0);
      else
        comm.recv(group, types[t], received[t].data(), 7, 1);
    }
  }));
  for (size_t t = 0; t < types.size(); ++t)
    EXPECT_EQ(received[t], sent[t]) << dtypeName(types[t]);
}

TEST(InProcessSendRecv, ReceiveTimesOutNamingThePeerThatNeverSends) {
  InProcessWorld world(3);
  Clock::duration waited{};
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(100ms);
        CommGroup &group = comm.createGroup(allRanks(3));
        if (comm.rank() != 1)
          return; // Rank 2 never sends.
        float value = 0;
        auto start = Clock::now();
        try {
          comm.recv(group, DType::F32, &value, 1, 2);
        } catch (...) {
          waited = Clock::now() - start;
          throw;
        }
      });
  EXPECT_EQ(messageOf(errors[1]),
            "timed out after 100 ms waiting for rank 2 in send_recv");
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 1s);
  EXPECT_FALSE(errors[0]);
  EXPECT_FALSE(errors[2]);
  // As for a collective, the world is failed: nobody waits on.
  EXPECT_TRUE(world.failed());
  EXPECT_EQ(world.failedRank(), std::nullopt);
}

TEST(InProcessSendRecv, AbortEndsAWaitingReceiveAtOnce) {
  InProcessWorld world(2);
  Clock::duration waited{};
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(30s);
        CommGroup &group = comm.createGroup({0, 1});
        if (comm.rank() == 0) {
          std::this_thread::sleep_for(50ms);
          comm.abort("injected failure");
          return;
        }
        float value = 0;
        auto start = Clock::now();
        try {
          comm.recv(group, DType::F32, &value, 1, 0);
        } catch (...) {
          waited = Clock::now() - start;
          throw;
        }
      });
  EXPECT_EQ(messageOf(errors[1]), "rank 0 failed: injected failure");
  EXPECT_LT(waited, 1s);
  // A later send fails too: the world is unusable.
  float value = 1;
  Communicator &comm = world.communicator(0);
  CommGroup &group = comm.createGroup({0, 1});
  EXPECT_THROW(comm.send(group, DType::F32, &value, 1, 1), RuntimeError);
}

TEST(InProcessSendRecv, MismatchedMessageFailsTheWorld) {
  InProcessWorld world(2);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        comm.setTimeout(5s);
        CommGroup &group = comm.createGroup({0, 1});
        std::vector<float> data(8, 1.0f);
        if (comm.rank() == 0)
          comm.send(group, DType::F32, data.data(), 4, 1);
        else
          comm.recv(group, DType::F32, data.data(), 5, 0);
      });
  EXPECT_FALSE(errors[0]);
  EXPECT_EQ(messageOf(errors[1]),
            "mismatched send_recv in group [0, 1]: rank 0 sends 4 f32 "
            "elements, rank 1 receives 5 f32 elements");
  EXPECT_TRUE(world.failed());
}

TEST(InProcessSendRecv, BadPeersAreRefused) {
  for (int peer : {0, 2, -1}) {
    InProcessWorld world(2);
    Communicator &comm = world.communicator(0);
    CommGroup &group = comm.createGroup({0, 1});
    world.communicator(1).createGroup({0, 1});
    float value = 0;
    try {
      comm.send(group, DType::F32, &value, 1, peer);
      ADD_FAILURE() << "peer " << peer << " was accepted";
    } catch (const RuntimeError &error) {
      EXPECT_EQ(std::string(error.what())
                    .rfind("rank 0 failed: send_recv of 1 f32 elements on ", 0),
                0u)
          << error.what();
    }
    // The peer would wait for this rank: the world fails.
    EXPECT_TRUE(world.failed()) << "peer " << peer;
  }
}

} // namespace
} // namespace zerosbp::runtime
