//===- MpiComm.cpp - collectives between MPI processes --------------------===//
//
// Data movement per collective (n ranks in the group, rank i):
//   reduce-scatter: MPI_Ialltoall of the input's parts into a staging buffer
//                   (part j from rank j), then reduceInRankOrder into recv;
//   all-gather:     MPI_Iallgather (MPI_IN_PLACE when the input is the
//                   rank's own part of the output);
//   all-to-all:     MPI_Ialltoall;
//   all-reduce:     MPI_Ialltoallv sends chunk j to rank j, the rank reduces
//                   its chunk in rank order in place, MPI_Iallgatherv
//                   (in place) spreads the chunks;
//   send / recv:    MPI_Isend / MPI_Irecv on the group's communicator, with
//                   a tag of their own (MPI keeps the messages of one
//                   sender, tag and communicator in order). A send copies
//                   its bytes into a buffer of the communicator's, posts
//                   MPI_Isend from it and returns: it never waits for the
//                   receiver. Later calls test the sends in flight and free
//                   the buffers of those done; completeSends() (each step's
//                   end) and the destructor wait for the rest.
// Elements travel as unsigned integers of their width, so counts are in
// elements.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiComm.h"

#include "runtime/comm/LocalRanks.h"
#include "runtime/core/Error.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <set>
#include <string>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace zerosbp::runtime {

namespace {

using Clock = std::chrono::steady_clock;

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

void check(int code, const std::string &what) {
  if (code != MPI_SUCCESS)
    throw RuntimeError(what + ": " + mpiErrorText(code));
}

bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  auto begin = [](const void *p) { return reinterpret_cast<uintptr_t>(p); };
  return aBytes && bBytes && begin(a) < begin(b) + bBytes &&
         begin(b) < begin(a) + aBytes;
}

template <typename T> T *advance(T *base, int64_t bytes) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return reinterpret_cast<T *>(reinterpret_cast<Byte *>(base) + bytes);
}

/// An MPI datatype as wide as an element of `type`: bytes travel unchanged.
MPI_Datatype wireType(DType type) {
  switch (dtypeBytes(type)) {
  case 1:
    return MPI_UINT8_T;
  case 2:
    return MPI_UINT16_T;
  case 4:
    return MPI_UINT32_T;
  default:
    return MPI_UINT64_T;
  }
}

/// "rank 2" or "ranks 1, 3".
std::string rankList(const std::vector<int> &ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

/// "timed out after 5 s waiting for rank 1 in <what>", or when every peer
/// answered that it arrived, "timed out after 5 s in <what> (every rank
/// arrived)".
std::string timeoutMessage(std::chrono::milliseconds timeout,
                           const std::vector<int> &absent,
                           const std::string &what) {
  std::string text = "timed out after " + formatDuration(timeout);
  if (absent.empty())
    return text + " in " + what + " (every rank arrived)";
  return text + " waiting for " + rankList(absent) + " in " + what;
}

} // namespace

/// Who has arrived at a collective, asked when one times out. A process has
/// one, shared by the session and its communicators, so that a rank answers
/// whichever of them it waits in. Each rank counts the collectives it has
/// begun per slot (a communicator's group, the records gather, or the calls
/// of start-up); the rank that timed out asks every peer for its count of
/// the slot, and peers answer while they poll their own waits (or, in a
/// call that cannot be polled, their watchdog answers). A peer that
/// does not answer within a second (five while several are silent; stopped,
/// killed, or busy outside this communicator) or has begun fewer collectives
/// has not arrived; when some do not answer, only they are named, since the
/// ones behind are waiting for them.
///
/// Queries and replies are point-to-point messages on MPI_COMM_WORLD with
/// tags of their own, which nothing else sends there: a duplicate of the
/// world would itself be a collective that a stopped rank can hold.
class RollCall {
public:
  RollCall() = default;

  /// The slot of group `group` of the `owner`th communicator; owner 0 is
  /// the session: group 0 its records gather, group 1 the calls of start-up
  /// over every rank (MPI_Comm_dup, MPI_Comm_split).
  static int64_t slotOf(int64_t owner, int group) {
    return (owner << 32) + group;
  }
  static int64_t recordsSlot() { return slotOf(0, 0); }
  static int64_t startupSlot() { return slotOf(0, 1); }

  /// A new communicator's owner number; every rank creates communicators
  /// in the same order, so the numbers agree.
  int64_t newOwner() {
    std::lock_guard<std::recursive_mutex> lock(mutex);
    return ++owners;
  }

  void begin(int64_t slot) {
    std::lock_guard<std::recursive_mutex> lock(mutex);
    ++begun[slot];
  }

  /// Answers the queries that have come; polls at most every 10 ms unless
  /// `now` is set.
  void answer(bool now = false);

  /// The `members` other than `me` that do not answer; when all answer,
  /// those that have not begun as many collectives of `slot` as this rank.
  std::vector<int> absent(const std::vector<int> &members, int me,
                          int64_t slot);

private:
  static constexpr int kQueryTag = 29001;
  static constexpr int kReplyTag = 29002;

  int64_t begunOf(int64_t slot) const {
    auto found = begun.find(slot);
    return found == begun.end() ? 0 : found->second;
  }

  MPI_Comm control = MPI_COMM_WORLD;
  /// The session's threads may wait in several communicators at once.
  std::recursive_mutex mutex;
  int64_t owners = 0;
  std::map<int64_t, int64_t> begun;
  /// Buffers of sends whose requests were freed: they live as long as this.
  std::deque<std::array<int64_t, 2>> sent;
  Clock::time_point lastPoll;
};

void RollCall::answer(bool now) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  Clock::time_point at = Clock::now();
  if (!now && at - lastPoll < std::chrono::milliseconds(10))
    return;
  lastPoll = at;
  while (true) {
    int found = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, control, &found, &status) !=
            MPI_SUCCESS ||
        !found)
      return;
    std::array<int64_t, 2> query{};
    if (MPI_Recv(query.data(), 2, MPI_INT64_T, status.MPI_SOURCE, kQueryTag,
                 control, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    int64_t slot = query[0];
    sent.push_back({slot, begunOf(slot)});
    MPI_Request request;
    if (MPI_Isend(sent.back().data(), 2, MPI_INT64_T, status.MPI_SOURCE,
                  kReplyTag, control, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
}

std::vector<int> RollCall::absent(const std::vector<int> &members, int me,
                                  int64_t slot) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  int64_t mine = begunOf(slot);
  std::vector<int> peers;
  for (int member : members)
    if (member != me)
      peers.push_back(member);
  size_t n = peers.size();
  std::vector<std::array<int64_t, 2>> replies(n);
  std::vector<MPI_Request> receives(n, MPI_REQUEST_NULL);
  std::vector<bool> answered(n, false);
  for (size_t i = 0; i < n; ++i) {
    sent.push_back({slot, mine});
    MPI_Request request;
    if (MPI_Isend(sent.back().data(), 2, MPI_INT64_T, peers[i], kQueryTag,
                  control, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
    MPI_Irecv(replies[i].data(), 2, MPI_INT64_T, peers[i], kReplyTag, control,
              &receives[i]);
  }
  // Peers that wait answer within milliseconds; a second is for loaded
  // machines. A peer in a long kernel answers only at its next wait: while
  // more than one is silent, give them up to 5 s, so that a stopped rank is
  // named alone rather than with a busy one.
  Clock::time_point start = Clock::now();
  auto deadline = [&](size_t silent) {
    return start + std::chrono::seconds(silent > 1 ? 5 : 1);
  };
  size_t left = n;
  while (left > 0 && Clock::now() < deadline(left)) {
    answer(/*now=*/true); // Peers that timed out too ask this rank.
    for (size_t i = 0; i < n; ++i) {
      int done = 0;
      if (!answered[i] && receives[i] != MPI_REQUEST_NULL &&
          MPI_Test(&receives[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
          done) {
        answered[i] = true;
        --left;
      }
    }
    if (left > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> silent, behind;
  for (size_t i = 0; i < n; ++i) {
    if (!answered[i] && receives[i] != MPI_REQUEST_NULL) {
      // A reply may come between the last test and the cancel.
      MPI_Status status;
      MPI_Cancel(&receives[i]);
      MPI_Wait(&receives[i], &status);
      int cancelled = 0;
      MPI_Test_cancelled(&status, &cancelled);
      answered[i] = !cancelled;
    }
    if (!answered[i])
      silent.push_back(peers[i]);
    else if (replies[i][0] != slot || replies[i][1] < mine)
      behind.push_back(peers[i]);
  }
  // Peers that timed out at about the same time are asking this rank too:
  // answer them a while longer before this rank stops, so that they do not
  // take it for a silent one.
  Clock::time_point linger = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < linger) {
    answer(/*now=*/true);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // A peer that answers but is behind is itself waiting, in an earlier
  // collective, for one that does not answer: that one is the cause.
  return silent.empty() ? behind : silent;
}

namespace {

/// Prints "zero-run: rank R failed: <reason>" and ends the job: MPI_Abort
/// once MPI is initialized (mpirun then ends every rank), else this process
/// alone (mpirun ends the others when it sees it exit). Any thread.
[[noreturn]] void failRank(int rank, const std::string &reason,
                           bool initialized) {
  std::fprintf(stderr, "zero-run: rank %d failed: %s\n", rank, reason.c_str());
  std::fflush(stderr);
  if (initialized)
    MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

int envInt(const char *name, int fallback) {
  const char *text = std::getenv(name);
  return text ? std::atoi(text) : fallback;
}

} // namespace

/// Bounds the MPI calls that block with no request to poll (MPI_Init,
/// MPI_Comm_dup, MPI_Comm_split): MPI cannot cancel them, so a thread
/// watches. While one runs it answers the roll call for this rank, whose
/// own thread cannot; when one has waited longer than its timeout it names
/// the ranks that have not arrived, as a collective's timeout does, and
/// ends the job. Between these calls the thread sleeps.
class MpiWatchdog {
public:
  MpiWatchdog() : rank(envInt("OMPI_COMM_WORLD_RANK", 0)) {
    thread = std::thread([this] { run(); });
    pthread_setname_np(thread.native_handle(), kMpiWatchdogThreadName);
  }
  ~MpiWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    thread.join();
  }
  MpiWatchdog(const MpiWatchdog &) = delete;
  MpiWatchdog &operator=(const MpiWatchdog &) = delete;

  /// MPI_Init returned: this rank's number, the world's size, and the roll
  /// call to answer and ask.
  void initialized(int worldRank, int worldSize,
                   std::shared_ptr<RollCall> calls) {
    std::lock_guard<std::mutex> lock(mutex);
    rank = worldRank;
    size = worldSize;
    roll = std::move(calls);
  }

  /// Watches `call` ("MPI_Init", ...), a call every rank makes, for up to
  /// `timeout`.
  template <typename Call>
  void watch(const std::string &what, std::chrono::milliseconds timeout,
             Call call) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (roll)
        roll->begin(RollCall::startupSlot());
      current = what;
      limit = timeout;
      deadline = Clock::now() + timeout;
      ++generation;
    }
    wake.notify_all();
    struct Done {
      MpiWatchdog &watchdog;
      ~Done() {
        std::lock_guard<std::mutex> lock(watchdog.mutex);
        watchdog.current.clear();
      }
    } done{*this};
    call();
  }

private:
  void run();
  /// The call has run past its deadline: names the absent ranks and ends
  /// the job, unless the call returned meanwhile.
  void expire(std::unique_lock<std::mutex> &lock);

  std::mutex mutex;
  std::condition_variable wake;
  int rank;
  int size = 0;
  std::shared_ptr<RollCall> roll;
  /// The call being watched ("" when none), its timeout and deadline, and
  /// how many have begun (to tell one call from the next).
  std::string current;
  std::chrono::milliseconds limit{0};
  Clock::time_point deadline;
  int64_t generation = 0;
  bool stopping = false;
  std::thread thread;
};

void MpiWatchdog::run() {
  std::unique_lock<std::mutex> lock(mutex);
  Clock::time_point lastPoll = Clock::now();
  while (!stopping) {
    if (current.empty()) {
      wake.wait(lock);
      lastPoll = Clock::now();
      continue;
    }
    // A poll that comes a second late means that this process was stopped
    // (SIGSTOP, then SIGCONT from mpirun ending the job): that time was not
    // spent waiting for the peers.
    Clock::time_point now = Clock::now();
    if (now - lastPoll > std::chrono::seconds(1))
      deadline += now - lastPoll;
    lastPoll = now;
    if (now >= deadline) {
      expire(lock);
      lastPoll = Clock::now();
      continue;
    }
    if (std::shared_ptr<RollCall> answering = roll) {
      lock.unlock();
      answering->answer(/*now=*/true);
      lock.lock();
    }
    wake.wait_for(lock, std::chrono::milliseconds(10));
  }
}

void MpiWatchdog::expire(std::unique_lock<std::mutex> &lock) {
  std::string what = current;
  std::chrono::milliseconds timeout = limit;
  int64_t started = generation;
  std::shared_ptr<RollCall> asked = roll;
  int me = rank;
  int worldSize = size;
  lock.unlock();
  std::string reason;
  if (!asked) {
    // In MPI_Init: only this host's ranks can be seen.
    std::vector<int> absent = localRanksNotInMpiInit(me);
    reason = !absent.empty()
                 ? timeoutMessage(timeout, absent, what)
                 : "timed out after " + formatDuration(timeout) + " in " +
                       what + " (every rank on this host has begun it)";
  } else {
    std::vector<int> all(worldSize);
    for (int r = 0; r < worldSize; ++r)
      all[r] = r;
    reason = timeoutMessage(
        timeout, asked->absent(all, me, RollCall::startupSlot()), what);
  }
  lock.lock();
  if (current.empty() || generation != started)
    return; // It returned while the peers were asked: every rank came.
  failRank(me, reason, asked != nullptr);
}

namespace {

class MpiGroup : public CommGroup {
public:
  MpiGroup(std::vector<int> members, int index, MPI_Comm comm, int slot)
      : CommGroup(std::move(members), index), comm(comm), slot(slot) {}
  ~MpiGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }
  MPI_Comm comm;
  /// The group's place among its communicator's groups: its slot in the
  /// roll call, the same on every member.
  int slot;
};

class MpiComm : public Communicator {
public:
  MpiComm(MPI_Comm world, std::shared_ptr<RollCall> roll,
          std::shared_ptr<MpiWatchdog> watchdog)
      : world(world), roll(std::move(roll)), watchdog(std::move(watchdog)),
        owner(this->roll->newOwner()) {
    MPI_Comm_rank(world, &myRank);
    MPI_Comm_size(world, &mySize);
  }
  ~MpiComm() override {
    int done = 0;
    MPI_Finalized(&done);
    if (!done && !sending.empty()) {
      // MPI may still read the buffers of sends in flight: wait for them
      // (at most the timeout), and keep those it never finishes.
      try {
        if (broken.empty())
          completeSends();
      } catch (const std::exception &error) {
        std::fprintf(stderr, "zero-run: rank %d: %s\n", myRank, error.what());
      }
      for (PendingSend &left : sending)
        MPI_Request_free(&left.request);
      auto *kept = new std::list<PendingSend>(std::move(sending));
      (void)kept; // Never freed: MPI may still read them.
    }
    groups.clear();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&world);
  }

  int rank() const override { return myRank; }
  int worldSize() const override { return mySize; }
  CommGroup &createGroup(const std::vector<int> &ranks) override;

  void allReduce(CommGroup &group, DType type, void *data, int64_t count,
                 ReduceOp op) override;
  void reduceScatter(CommGroup &group, DType type, const void *send, void *recv,
                     int64_t count, ReduceOp op) override;
  void allGather(CommGroup &group, DType type, const void *send, void *recv,
                 int64_t count) override;
  void allToAll(CommGroup &group, DType type, const void *send, void *recv,
                int64_t count) override;
  void send(CommGroup &group, DType type, const void *data, int64_t count,
            int peerIndex) override;
  void recv(CommGroup &group, DType type, void *data, int64_t count,
            int peerIndex) override;
  void completeSends() override;

  void abort(const std::string &reason) override;

private:
  /// A send in flight: its own copy of the message, which MPI reads until
  /// the request completes.
  struct PendingSend {
    std::vector<char> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
    MpiGroup *group = nullptr;
    int peerIndex = -1;
  };
  /// Tests the sends in flight and frees those done (MPI_Test also moves
  /// them on).
  void testSends();

  /// Checks the communicator and the arguments; returns the MPI group.
  MpiGroup &begin(CommGroup &group, CollectiveKind kind, DType type,
                  int64_t count, bool hasBuffers);
  /// begin()'s checks without the roll call's count (which counts the
  /// group's collectives, that every member begins) and, for send_recv,
  /// those of `peerIndex`.
  MpiGroup &validate(CommGroup &group, CollectiveKind kind, DType type,
                     int64_t count, bool hasBuffers, int peerIndex = -1);
  /// Completes `request`, polling so that the timeout can fire.
  void wait(MPI_Request &request, CollectiveKind kind, MpiGroup &group,
            Clock::time_point deadline);
  /// Completes a send's or receive's `request` likewise; a timeout names
  /// the peer, the one rank it waits for.
  void waitForPeer(MPI_Request &request, MpiGroup &group, int peerIndex,
                   Clock::time_point deadline, MPI_Status &status);

  /// The tag of send_recv messages on a group's communicator.
  static constexpr int kSendRecvTag = 1;

  MPI_Comm world;
  int myRank = 0;
  int mySize = 1;
  std::vector<std::unique_ptr<MpiGroup>> groups;
  std::shared_ptr<RollCall> roll;
  std::shared_ptr<MpiWatchdog> watchdog;
  /// This communicator's number in the roll call's slots.
  int64_t owner;
  /// Set when a collective timed out; every later call throws it.
  std::string broken;
  /// Sends posted and not yet known to be done, oldest first.
  std::list<PendingSend> sending;
};

CommGroup &MpiComm::createGroup(const std::vector<int> &ranks) {
  std::string where = "createGroup " + formatRanks(ranks) + " on rank " +
                      std::to_string(myRank);
  int index = memberIndex(ranks, myRank, mySize, where);
  // Groups of one call are disjoint, so their smallest ranks tell them apart.
  int color = *std::min_element(ranks.begin(), ranks.end());
  MPI_Comm comm = MPI_COMM_NULL;
  int code = MPI_SUCCESS;
  watchdog->watch("MPI_Comm_split making group " + formatRanks(ranks), timeout,
                  [&] { code = MPI_Comm_split(world, color, index, &comm); });
  check(code, where);
  auto group = std::make_unique<MpiGroup>(ranks, index, comm,
                                          static_cast<int>(groups.size()));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  // Every member must have asked for the same group.
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> actual(size);
  MPI_Group worldGroup, newGroup;
  MPI_Comm_group(world, &worldGroup);
  MPI_Comm_group(comm, &newGroup);
  std::vector<int> local(size);
  for (int i = 0; i < size; ++i)
    local[i] = i;
  MPI_Group_translate_ranks(newGroup, size, local.data(), worldGroup,
                            actual.data());
  MPI_Group_free(&newGroup);
  MPI_Group_free(&worldGroup);
  if (actual != ranks)
    throw RuntimeError(where + ": the ranks with the same first member form " +
                       formatRanks(actual));
  groups.push_back(std::move(group));
  return *groups.back();
}

void MpiComm::abort(const std::string &reason) {
  failRank(myRank, reason, /*initialized=*/true);
}

MpiGroup &MpiComm::begin(CommGroup &group, CollectiveKind kind, DType type,
                         int64_t count, bool hasBuffers) {
  MpiGroup &found = validate(group, kind, type, count, hasBuffers);
  testSends();
  roll->begin(RollCall::slotOf(owner, found.slot));
  return found;
}

MpiGroup &MpiComm::validate(CommGroup &group, CollectiveKind kind, DType type,
                            int64_t count, bool hasBuffers, int peerIndex) {
  std::string what = "rank " + std::to_string(myRank) + ": " +
                     describeCollective(kind, type, count);
  if (!broken.empty())
    throw RuntimeError(what + ": communicator unusable after: " + broken);
  MpiGroup *found = nullptr;
  for (auto &candidate : groups)
    if (candidate.get() == &group)
      found = candidate.get();
  if (!found)
    throw RuntimeError(what + " on a group this rank did not create");
  if (count < 0)
    throw RuntimeError(what + ": negative element count");
  if (count > 0 && !hasBuffers)
    throw RuntimeError(what + ": null buffer");
  // MPI counts are int; all-reduce's displacements reach `count`, as does
  // a message; the other collectives' counts are per part.
  int64_t limit =
      kind == CollectiveKind::AllReduce || kind == CollectiveKind::SendRecv
          ? count
          : count * static_cast<int64_t>(found->size());
  if (limit > INT_MAX)
    throw RuntimeError(what + ": more than " + std::to_string(INT_MAX) +
                       " elements for MPI");
  if (kind == CollectiveKind::SendRecv &&
      (peerIndex < 0 || peerIndex >= found->size() ||
       peerIndex == found->index()))
    throw RuntimeError(what + ": peer index " + std::to_string(peerIndex) +
                       " is not another member of group " +
                       formatRanks(found->ranks()));
  return *found;
}

void MpiComm::wait(MPI_Request &request, CollectiveKind kind, MpiGroup &group,
                   Clock::time_point deadline) {
  // Progress needs MPI_Test calls: a large collective moves a chunk per
  // call, so sleeping between polls throttles it. Yield instead, which
  // still leaves the core to oversubscribed ranks; only a wait that has
  // lasted (a slow peer, not a transfer) polls less often.
  Clock::time_point start = Clock::now();
  while (true) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE),
          std::string("MPI error in ") + collectiveKindName(kind));
    if (done)
      return;
    roll->answer();
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      broken = timeoutMessage(timeout,
                              roll->absent(group.ranks(), myRank,
                                           RollCall::slotOf(owner, group.slot)),
                              std::string(collectiveKindName(kind)) +
                                  " on group " + formatRanks(group.ranks()));
      throw RuntimeError(broken);
    }
    if (now - start < std::chrono::milliseconds(50))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void MpiComm::waitForPeer(MPI_Request &request, MpiGroup &group, int peerIndex,
                          Clock::time_point deadline, MPI_Status &status) {
  Clock::time_point start = Clock::now();
  while (true) {
    int done = 0;
    check(MPI_Test(&request, &done, &status), "MPI error in send_recv");
    if (done)
      return;
    roll->answer();
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      // Only the peer can hold a message up, whether it is alive or not.
      broken =
          timeoutMessage(timeout, {group.ranks()[peerIndex]},
                         "send_recv on group " + formatRanks(group.ranks()));
      throw RuntimeError(broken);
    }
    if (now - start < std::chrono::milliseconds(50))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void MpiComm::send(CommGroup &group, DType type, const void *data,
                   int64_t count, int peerIndex) {
  CollectiveKind kind = CollectiveKind::SendRecv;
  MpiGroup &own =
      validate(group, kind, type, count, data != nullptr, peerIndex);
  testSends();
  // The caller may overwrite `data` once this returns, and MPI sends a
  // large message only once the receiver has posted its receive: the
  // message goes from a copy, and nothing here waits for the receiver.
  PendingSend message;
  message.bytes.resize(static_cast<size_t>(count) * dtypeBytes(type));
  if (!message.bytes.empty())
    std::memcpy(message.bytes.data(), data, message.bytes.size());
  message.group = &own;
  message.peerIndex = peerIndex;
  sending.push_back(std::move(message));
  PendingSend &posted = sending.back();
  int code =
      MPI_Isend(posted.bytes.data(), static_cast<int>(count), wireType(type),
                peerIndex, kSendRecvTag, own.comm, &posted.request);
  if (code != MPI_SUCCESS) {
    sending.pop_back();
    check(code, "MPI_Isend in send_recv");
  }
  countCollective(kind, type, count, own, own.index());
}

void MpiComm::testSends() {
  for (auto it = sending.begin(); it != sending.end();) {
    int done = 0;
    check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE),
          "MPI error in send_recv");
    it = done ? sending.erase(it) : std::next(it);
  }
}

void MpiComm::completeSends() {
  if (sending.empty())
    return;
  if (!broken.empty())
    throw RuntimeError(
        "rank " + std::to_string(myRank) +
        ": completing sends: communicator unusable after: " + broken);
  auto deadline = Clock::now() + timeout;
  while (!sending.empty()) {
    PendingSend &oldest = sending.front();
    MPI_Status status;
    // A timeout names the peer that does not receive.
    waitForPeer(oldest.request, *oldest.group, oldest.peerIndex, deadline,
                status);
    sending.pop_front();
  }
}

void MpiComm::recv(CommGroup &group, DType type, void *data, int64_t count,
                   int peerIndex) {
  CollectiveKind kind = CollectiveKind::SendRecv;
  MpiGroup &own =
      validate(group, kind, type, count, data != nullptr, peerIndex);
  testSends();
  auto deadline = Clock::now() + timeout;
  MPI_Request request;
  MPI_Status status;
  check(MPI_Irecv(data, static_cast<int>(count), wireType(type), peerIndex,
                  kSendRecvTag, own.comm, &request),
        "MPI_Irecv in send_recv");
  waitForPeer(request, own, peerIndex, deadline, status);
  // A longer message fails the receive (truncation); a shorter one is
  // caught here.
  int received = 0;
  MPI_Get_count(&status, wireType(type), &received);
  if (received != count)
    throw RuntimeError("rank " + std::to_string(myRank) + ": " +
                       describeCollective(kind, type, count) + " from rank " +
                       std::to_string(own.ranks()[peerIndex]) + " got " +
                       std::to_string(received) + " elements");
  countCollective(kind, type, count, own, peerIndex);
}

void MpiComm::reduceScatter(CommGroup &group, DType type, const void *send,
                            void *recv, int64_t count, ReduceOp op) {
  CollectiveKind kind = CollectiveKind::ReduceScatter;
  MpiGroup &own = begin(group, kind, type, count, send && recv);
  auto deadline = Clock::now() + timeout;
  int n = own.size();
  int64_t partBytes = count * static_cast<int64_t>(dtypeBytes(type));
  if (n == 1) {
    if (count && send != recv)
      std::memmove(recv, send, partBytes);
    return countCollective(kind, type, count, own);
  }
  std::vector<char> staging(static_cast<size_t>(n * partBytes));
  MPI_Request request;
  int elements = static_cast<int>(count);
  check(MPI_Ialltoall(send, elements, wireType(type), staging.data(), elements,
                      wireType(type), own.comm, &request),
        "MPI_Ialltoall in reduce_scatter");
  wait(request, kind, own, deadline);
  std::vector<const void *> sources(n);
  for (int j = 0; j < n; ++j)
    sources[j] = staging.data() + j * partBytes;
  reduceInRankOrder(type, sources, recv, count, op);
  countCollective(kind, type, count, own);
}

void MpiComm::allGather(CommGroup &group, DType type, const void *send,
                        void *recv, int64_t count) {
  CollectiveKind kind = CollectiveKind::AllGather;
  MpiGroup &own = begin(group, kind, type, count, send && recv);
  auto deadline = Clock::now() + timeout;
  int n = own.size(), me = own.index();
  int64_t partBytes = count * static_cast<int64_t>(dtypeBytes(type));
  if (n == 1) {
    if (count && send != recv)
      std::memmove(recv, send, partBytes);
    return countCollective(kind, type, count, own);
  }
  bool inPlace = send == advance(recv, me * partBytes);
  if (!inPlace && overlaps(send, partBytes, recv, n * partBytes))
    throw RuntimeError("rank " + std::to_string(myRank) + ": " +
                       describeCollective(kind, type, count) +
                       ": input overlaps the output");
  MPI_Request request;
  int elements = static_cast<int>(count);
  check(MPI_Iallgather(inPlace ? MPI_IN_PLACE : send, elements, wireType(type),
                       recv, elements, wireType(type), own.comm, &request),
        "MPI_Iallgather in all_gather");
  wait(request, kind, own, deadline);
  countCollective(kind, type, count, own);
}

void MpiComm::allToAll(CommGroup &group, DType type, const void *send,
                       void *recv, int64_t count) {
  CollectiveKind kind = CollectiveKind::AllToAll;
  MpiGroup &own = begin(group, kind, type, count, send && recv);
  auto deadline = Clock::now() + timeout;
  int n = own.size();
  int64_t partBytes = count * static_cast<int64_t>(dtypeBytes(type));
  if (overlaps(send, n * partBytes, recv, n * partBytes))
    throw RuntimeError("rank " + std::to_string(myRank) + ": " +
                       describeCollective(kind, type, count) +
                       ": input overlaps the output");
  if (n == 1) {
    if (count)
      std::memcpy(recv, send, partBytes);
    return countCollective(kind, type, count, own);
  }
  MPI_Request request;
  int elements = static_cast<int>(count);
  check(MPI_Ialltoall(send, elements, wireType(type), recv, elements,
                      wireType(type), own.comm, &request),
        "MPI_Ialltoall in all_to_all");
  wait(request, kind, own, deadline);
  countCollective(kind, type, count, own);
}

void MpiComm::allReduce(CommGroup &group, DType type, void *data, int64_t count,
                        ReduceOp op) {
  CollectiveKind kind = CollectiveKind::AllReduce;
  MpiGroup &own = begin(group, kind, type, count, data != nullptr);
  auto deadline = Clock::now() + timeout;
  int n = own.size(), me = own.index();
  int64_t elementBytes = static_cast<int64_t>(dtypeBytes(type));
  PartRange mine = balancedPart(count, n, me);
  if (n == 1)
    return countCollective(kind, type, count, own);
  // Reduce-scatter: chunk j to rank j; this rank receives its chunk from
  // every rank, in rank order, and reduces it into place.
  std::vector<int> sendCounts(n), sendOffsets(n), recvCounts(n), recvOffsets(n);
  for (int j = 0; j < n; ++j) {
    PartRange part = balancedPart(count, n, j);
    sendCounts[j] = static_cast<int>(part.size);
    sendOffsets[j] = static_cast<int>(part.offset);
    recvCounts[j] = static_cast<int>(mine.size);
    recvOffsets[j] = static_cast<int>(j * mine.size);
  }
  std::vector<char> staging(static_cast<size_t>(n * mine.size * elementBytes));
  MPI_Request request;
  check(MPI_Ialltoallv(data, sendCounts.data(), sendOffsets.data(),
                       wireType(type), staging.data(), recvCounts.data(),
                       recvOffsets.data(), wireType(type), own.comm, &request),
        "MPI_Ialltoallv in all_reduce");
  wait(request, kind, own, deadline);
  std::vector<const void *> sources(n);
  for (int j = 0; j < n; ++j)
    sources[j] = staging.data() + j * mine.size * elementBytes;
  reduceInRankOrder(type, sources, advance(data, mine.offset * elementBytes),
                    mine.size, op);
  // All-gather of the reduced chunks, in place.
  check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data,
                        sendCounts.data(), sendOffsets.data(), wireType(type),
                        own.comm, &request),
        "MPI_Iallgatherv in all_reduce");
  wait(request, kind, own, deadline);
  countCollective(kind, type, count, own);
}

} // namespace

MpiSession::MpiSession(int *argc, char ***argv,
                       std::chrono::milliseconds timeout)
    : timeout(timeout) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    throw RuntimeError("MPI is already initialized: one MpiSession per "
                       "process");
  // A rank whose mpirun (or its daemon) dies, even by SIGKILL, goes with it
  // instead of training on as an orphan.
  if (launchedByMpirun())
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  watchdog = std::make_shared<MpiWatchdog>();
  int provided = 0;
  int code = MPI_SUCCESS;
  watchdog->watch("MPI_Init", timeout, [&] {
    code = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  });
  check(code, "MPI_Init_thread");
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw RuntimeError("the MPI library does not provide "
                       "MPI_THREAD_MULTIPLE (provided level " +
                       std::to_string(provided) + ")");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  roll = std::make_shared<RollCall>();
  watchdog->initialized(worldRank, worldSize, roll);
}

MpiSession::~MpiSession() {
  watchdog.reset(); // Its thread polls MPI only while a call is watched.
  roll.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

bool MpiSession::launchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
}

std::unique_ptr<Communicator> MpiSession::communicator() {
  MPI_Comm comm = MPI_COMM_NULL;
  int code = MPI_SUCCESS;
  watchdog->watch("MPI_Comm_dup of the world", timeout,
                  [&] { code = MPI_Comm_dup(MPI_COMM_WORLD, &comm); });
  check(code, "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  auto made = std::make_unique<MpiComm>(comm, roll, watchdog);
  made->setTimeout(timeout);
  return made;
}

std::vector<double>
MpiSession::gatherRecords(const std::vector<double> &mine,
                          std::chrono::milliseconds timeout) {
  // Nonblocking and polled like the collectives, so that a rank that never
  // comes (stopped between its last collective and this gather) is named
  // instead of holding the others forever.
  roll->begin(RollCall::recordsSlot());
  gathered.assign(mine.size() * worldSize, 0.0);
  MPI_Request request;
  check(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                       gathered.data(), static_cast<int>(mine.size()),
                       MPI_DOUBLE, MPI_COMM_WORLD, &request),
        "MPI_Iallgather");
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + timeout;
  while (true) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE),
          "MPI error in the gather of step records");
    if (done)
      return gathered;
    roll->answer();
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      std::vector<int> all(worldSize);
      for (int r = 0; r < worldSize; ++r)
        all[r] = r;
      throw RuntimeError(timeoutMessage(
          timeout, roll->absent(all, worldRank, RollCall::recordsSlot()),
          "the gather of step records"));
    }
    if (now - start < std::chrono::milliseconds(50))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

} // namespace zerosbp::runtime
