//===- mpi_comm_check.cc - the MPI communicator under mpirun --------------===//
//
// Run with `mpirun -n N mpi_comm_check`. Every rank runs each collective on
// the world and on groups of two consecutive ranks, and checks its result
// and its bytes-sent counter against the rank-order reference and, bit for
// bit, against the in-process backend run in this process; then passes
// messages (send / recv) round a ring, checking their bytes, their order
// and that only senders count them; then round the ring again with every
// rank sending all its messages before it receives any, the largest far
// past MPI's eager limit, and overwriting each one once send() returns:
// a send that waited for its receiver, or sent from the caller's buffer,
// would time out or deliver the new bytes. Rank 0 prints
// "mpi_comm_check: OK" when every rank passed; the exit status is non-zero
// otherwise.
//
// Fault injection (the run must then end non-zero, naming the rank):
//   --abort-rank=R    rank R's second thread calls abort() while its main
//                     thread waits in a collective and the others wait in
//                     another one.
//   --kill-rank=R     the same, but the second thread SIGKILLs the process.
//   --timeout-rank=R  rank R stays away; the others time out after 500 ms
//                     and abort.
//   --recv-timeout-rank=R
//                     the others wait to receive a message from rank R,
//                     which never sends; they time out after 500 ms.
//   --send-timeout-rank=R
//                     the others send rank R a message past MPI's eager
//                     limit, which R never receives: their sends return, and
//                     completeSends() times out after 500 ms naming R.
//   --stop-rank=R --gather-rank=G
//                     rank R stops itself (SIGSTOP); rank G waits in the
//                     session's records gather, the others in a collective:
//                     every message names R alone.
//   --tag=TEXT        ignored; lets a test find its processes.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/comm/MpiComm.h"
#include "runtime/core/Error.h"
#include "tests/unit/runtime/comm/collective_cases.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <unistd.h>

using namespace zerosbp::runtime;
using namespace std::chrono_literals;
namespace cases = zerosbp::runtime::testing;

namespace {

struct Options {
  int abortRank = -1;
  int killRank = -1;
  int timeoutRank = -1;
  int recvTimeoutRank = -1;
  int sendTimeoutRank = -1;
  /// Stops itself (SIGSTOP) after the first collective, while `gatherRank`
  /// waits in the session's records gather and the others in a collective.
  int stopRank = -1;
  int gatherRank = -1;
};

bool parseFlag(const char *arg, const char *name, int &value) {
  size_t length = std::strlen(name);
  if (std::strncmp(arg, name, length) != 0 || arg[length] != '=')
    return false;
  value = std::atoi(arg + length + 1);
  return true;
}

/// The groups a rank belongs to: the world and consecutive pairs (the last
/// one alone when the size is odd).
std::vector<std::vector<int>> groupsOf(int rank, int size) {
  std::vector<int> world(size);
  std::iota(world.begin(), world.end(), 0);
  std::vector<int> pair = {rank - rank % 2};
  if (pair[0] + 1 < size)
    pair.push_back(pair[0] + 1);
  return {world, pair};
}

std::vector<cases::CollectiveCase> allCases() {
  return cases::makeCases(
      {DType::F32, DType::BF16, DType::F64, DType::F16, DType::I64, DType::I32},
      {0, 1, 3, 7, 64, 1001, 100003});
}

uint64_t seedOf(size_t caseIndex, const std::vector<int> &group) {
  return caseIndex * 31 + group[0] * 7 + group.size();
}

/// Every rank's outputs from the in-process backend, [group][case][rank].
std::vector<std::vector<std::vector<cases::Bytes>>>
inProcessOutputs(int size, const std::vector<cases::CollectiveCase> &list) {
  InProcessWorld world(size);
  std::vector<std::vector<std::vector<cases::Bytes>>> outputs(
      2, std::vector<std::vector<cases::Bytes>>(
             list.size(), std::vector<cases::Bytes>(size)));
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        std::vector<std::vector<int>> members = groupsOf(comm.rank(), size);
        for (size_t g = 0; g < members.size(); ++g) {
          CommGroup &group = comm.createGroup(members[g]);
          for (size_t i = 0; i < list.size(); ++i)
            outputs[g][i][comm.rank()] = cases::runCase(
                comm, group, list[i],
                cases::makeInput(list[i], group.size(), group.index(),
                                 seedOf(i, members[g])));
        }
      });
  for (std::exception_ptr &error : errors)
    if (error)
      std::rethrow_exception(error);
  return outputs;
}

int checkCollectives(MpiSession &session, Communicator &comm) {
  int rank = session.rank(), size = session.size();
  std::vector<cases::CollectiveCase> list = allCases();
  auto reference = inProcessOutputs(size, list);
  std::vector<std::vector<int>> members = groupsOf(rank, size);
  int failures = 0;
  for (size_t g = 0; g < members.size(); ++g) {
    CommGroup &group = comm.createGroup(members[g]);
    for (size_t i = 0; i < list.size(); ++i) {
      const cases::CollectiveCase &c = list[i];
      uint64_t seed = seedOf(i, members[g]);
      comm.resetStats();
      cases::Bytes out = cases::runCase(
          comm, group, c,
          cases::makeInput(c, group.size(), group.index(), seed));
      std::string where = "rank " + std::to_string(rank) + ", group " +
                          std::to_string(g) + ", " + c.name();
      std::string diff = cases::firstDifference(
          c, out, cases::expectedOutput(c, group.size(), group.index(), seed));
      if (!diff.empty()) {
        std::fprintf(stderr, "%s: differs from the reference: %s\n",
                     where.c_str(), diff.c_str());
        ++failures;
      }
      if (out != reference[g][i][rank]) {
        std::fprintf(stderr, "%s: differs from the in-process backend\n",
                     where.c_str());
        ++failures;
      }
      int64_t expected =
          cases::expectedBytesSent(c, group.size(), group.index());
      if (comm.stats().sent(c.kind) != expected ||
          comm.stats().called(c.kind) != 1) {
        std::fprintf(stderr,
                     "%s: counted %lld bytes in %lld calls, expected "
                     "%lld in 1\n",
                     where.c_str(), (long long)comm.stats().sent(c.kind),
                     (long long)comm.stats().called(c.kind),
                     (long long)expected);
        ++failures;
      }
    }
  }
  return failures;
}

/// The messages of the ring: sizes that go eagerly and one that MPI sends
/// only once the receive is posted.
const std::vector<int64_t> kMessageCounts = {1, 1000, 100003};

std::vector<float> messageOf(int sender, size_t message, int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(sender * 100 + message) +
                static_cast<float>(i) * 0.5f;
  return values;
}

/// Every rank sends the ring's messages to the next rank and receives the
/// previous rank's: rank 0 sends first and the others pass on, so that no
/// two ranks wait to send to each other.
int checkSendRecv(MpiSession &session, Communicator &comm) {
  int rank = session.rank(), size = session.size();
  if (size < 2)
    return 0;
  std::vector<int> all(size);
  std::iota(all.begin(), all.end(), 0);
  CommGroup &ring = comm.createGroup(all);
  ring.setAxis(0);
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  comm.resetStats();
  auto sendAll = [&] {
    for (size_t m = 0; m < kMessageCounts.size(); ++m) {
      std::vector<float> data = messageOf(rank, m, kMessageCounts[m]);
      comm.send(ring, DType::F32, data.data(), kMessageCounts[m], next);
    }
  };
  int failures = 0;
  auto receiveAll = [&] {
    for (size_t m = 0; m < kMessageCounts.size(); ++m) {
      std::vector<float> data(kMessageCounts[m], -1.0f);
      comm.recv(ring, DType::F32, data.data(), kMessageCounts[m], previous);
      if (data != messageOf(previous, m, kMessageCounts[m])) {
        std::fprintf(stderr, "rank %d: message %zu from rank %d differs\n",
                     rank, m, previous);
        ++failures;
      }
    }
  };
  if (rank == 0) {
    sendAll();
    receiveAll();
  } else {
    receiveAll();
    sendAll();
  }
  int64_t bytes = 0;
  for (int64_t count : kMessageCounts)
    bytes += count * 4;
  const CommStats &stats = comm.stats();
  int64_t calls = 2 * static_cast<int64_t>(kMessageCounts.size());
  if (stats.sent(CollectiveKind::SendRecv) != bytes ||
      stats.bytesSentOnAxis[0] != bytes ||
      stats.called(CollectiveKind::SendRecv) != calls) {
    std::fprintf(stderr,
                 "rank %d: send_recv counted %lld bytes in %lld calls, "
                 "expected %lld in %lld\n",
                 rank, (long long)stats.sent(CollectiveKind::SendRecv),
                 (long long)stats.called(CollectiveKind::SendRecv),
                 (long long)bytes, (long long)calls);
    ++failures;
  }
  return failures;
}

/// Every rank sends all the ring's messages to the next rank before it
/// receives the previous rank's: each send() must return before its
/// receiver has posted a receive, and must have copied the message, which
/// the sender overwrites at once. completeSends() then finds nothing left
/// in flight that it cannot finish.
int checkSendsDoNotWait(MpiSession &session, Communicator &comm) {
  int rank = session.rank(), size = session.size();
  if (size < 2)
    return 0;
  std::vector<int> all(size);
  std::iota(all.begin(), all.end(), 0);
  CommGroup &ring = comm.createGroup(all);
  ring.setAxis(0);
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  // A send that waited for its receiver would wait for a rank that waits
  // to send too: every rank would time out instead.
  std::chrono::milliseconds before = comm.getTimeout();
  comm.setTimeout(20s);
  int failures = 0;
  try {
    for (int round = 0; round < 2; ++round) {
      for (size_t m = 0; m < kMessageCounts.size(); ++m) {
        std::vector<float> data = messageOf(rank, m, kMessageCounts[m]);
        comm.send(ring, DType::F32, data.data(), kMessageCounts[m], next);
        std::fill(data.begin(), data.end(), -7.0f);
      }
      for (size_t m = 0; m < kMessageCounts.size(); ++m) {
        std::vector<float> data(kMessageCounts[m], -1.0f);
        comm.recv(ring, DType::F32, data.data(), kMessageCounts[m], previous);
        if (data != messageOf(previous, m, kMessageCounts[m])) {
          std::fprintf(stderr,
                       "rank %d: unwaited message %zu of round %d from rank "
                       "%d differs\n",
                       rank, m, round, previous);
          ++failures;
        }
      }
      comm.completeSends();
    }
  } catch (const RuntimeError &error) {
    std::fprintf(stderr, "rank %d: sending before receiving: %s\n", rank,
                 error.what());
    comm.abort(error.what());
  }
  comm.setTimeout(before);
  return failures;
}

/// Fault injection: never returns normally on the failing rank.
void injectFault(MpiSession &session, Communicator &comm,
                 const Options &options) {
  int rank = session.rank();
  std::vector<int> all(session.size());
  std::iota(all.begin(), all.end(), 0);
  CommGroup &world = comm.createGroup(all);
  // A second communicator on which the failing rank waits while the others
  // wait on the first: nobody can complete.
  std::unique_ptr<Communicator> other = session.communicator();
  CommGroup &otherWorld = other->createGroup(all);
  float value = 1.0f;
  comm.allReduce(world, DType::F32, &value, 1, ReduceOp::Sum);

  if (options.recvTimeoutRank >= 0) {
    if (rank == options.recvTimeoutRank) {
      // Never sends: waits elsewhere until the others end the job.
      other->allReduce(otherWorld, DType::F32, &value, 1, ReduceOp::Sum);
      return;
    }
    comm.setTimeout(500ms);
    try {
      comm.recv(world, DType::F32, &value, 1, options.recvTimeoutRank);
    } catch (const RuntimeError &error) {
      comm.abort(error.what());
    }
    return;
  }

  if (options.sendTimeoutRank >= 0) {
    if (rank == options.sendTimeoutRank) {
      // Never receives: waits elsewhere until the others end the job.
      other->allReduce(otherWorld, DType::F32, &value, 1, ReduceOp::Sum);
      return;
    }
    comm.setTimeout(500ms);
    std::vector<float> message(100003, 1.0f);
    try {
      comm.send(world, DType::F32, message.data(),
                static_cast<int64_t>(message.size()), options.sendTimeoutRank);
    } catch (const RuntimeError &error) {
      comm.abort(std::string("the send waited for its receiver: ") +
                 error.what());
    }
    try {
      comm.completeSends();
    } catch (const RuntimeError &error) {
      comm.abort(error.what());
    }
    return;
  }

  if (options.stopRank >= 0) {
    if (rank == options.stopRank) {
      std::fflush(stderr);
      ::raise(SIGSTOP);
      return;
    }
    try {
      if (rank == options.gatherRank) {
        session.gatherRecords({value}, 500ms);
      } else {
        comm.setTimeout(500ms);
        comm.allReduce(world, DType::F32, &value, 1, ReduceOp::Sum);
      }
    } catch (const RuntimeError &error) {
      comm.abort(error.what());
    }
    return;
  }

  int failing =
      std::max({options.abortRank, options.killRank, options.timeoutRank});
  if (rank == failing) {
    std::thread killer;
    if (options.abortRank == rank)
      killer = std::thread([&] {
        std::this_thread::sleep_for(300ms);
        comm.abort("injected failure");
      });
    if (options.killRank == rank)
      killer = std::thread([&] {
        std::this_thread::sleep_for(300ms);
        std::fprintf(stderr, "mpi_comm_check: rank %d kills itself\n", rank);
        std::fflush(stderr);
        ::kill(::getpid(), SIGKILL);
      });
    other->allReduce(otherWorld, DType::F32, &value, 1, ReduceOp::Sum);
    killer.join();
    return;
  }
  if (options.timeoutRank >= 0)
    comm.setTimeout(500ms);
  try {
    comm.allReduce(world, DType::F32, &value, 1, ReduceOp::Sum);
  } catch (const RuntimeError &error) {
    comm.abort(error.what());
  }
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    if (parseFlag(argv[i], "--abort-rank", options.abortRank) ||
        parseFlag(argv[i], "--kill-rank", options.killRank) ||
        parseFlag(argv[i], "--timeout-rank", options.timeoutRank) ||
        parseFlag(argv[i], "--recv-timeout-rank", options.recvTimeoutRank) ||
        parseFlag(argv[i], "--send-timeout-rank", options.sendTimeoutRank) ||
        parseFlag(argv[i], "--stop-rank", options.stopRank) ||
        parseFlag(argv[i], "--gather-rank", options.gatherRank) ||
        std::strncmp(argv[i], "--tag=", 6) == 0)
      continue;
    std::fprintf(stderr, "mpi_comm_check: unknown argument '%s'\n", argv[i]);
    return 2;
  }
  if (!MpiSession::launchedByMpirun())
    std::fprintf(stderr, "mpi_comm_check: not under mpirun; running as one "
                         "rank\n");
  try {
    MpiSession session(&argc, &argv);
    std::unique_ptr<Communicator> comm = session.communicator();
    if (options.abortRank >= 0 || options.killRank >= 0 ||
        options.timeoutRank >= 0 || options.recvTimeoutRank >= 0 ||
        options.sendTimeoutRank >= 0 || options.stopRank >= 0) {
      injectFault(session, *comm, options);
      std::fprintf(stderr,
                   "mpi_comm_check: rank %d: the fault did not stop "
                   "the run\n",
                   session.rank());
      return 1;
    }
    int failures = checkCollectives(session, *comm);
    failures += checkSendRecv(session, *comm);
    failures += checkSendsDoNotWait(session, *comm);
    // Agree on the verdict through the communicator under test.
    std::vector<int> all(session.size());
    std::iota(all.begin(), all.end(), 0);
    CommGroup &world = comm->createGroup(all);
    int64_t total = failures;
    comm->allReduce(world, DType::I64, &total, 1, ReduceOp::Sum);
    if (session.rank() == 0) {
      if (total == 0)
        std::printf("mpi_comm_check: OK (%d ranks, %zu collectives per "
                    "group)\n",
                    session.size(), allCases().size());
      else
        std::printf("mpi_comm_check: %lld failures\n", (long long)total);
    }
    comm.reset();
    return total == 0 ? 0 : 1;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "mpi_comm_check: %s\n", error.what());
    return 1;
  }
}
