//===- InProcessComm.cpp - collectives between threads of one process -----===//
//
// Every collective of a group runs through the group's barriers. The first
// (the publish barrier) is where ranks wait for each other: it ends early on
// a failure or at the deadline. Once it has completed, every member only
// reads and reduces memory before the next barriers, so those cannot hang
// and never end early; a rank thus never leaves a collective while a peer
// may still read its buffers.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <set>
#include <sstream>
#include <thread>
#include <type_traits>

namespace zerosbp::runtime {

namespace {

using Clock = std::chrono::steady_clock;

const char *reduceOpName(ReduceOp op) {
  return op == ReduceOp::Sum ? "sum" : "max";
}

/// Adds `bytes` to pointer `base`.
template <typename T> T *advance(T *base, int64_t bytes) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return reinterpret_cast<T *>(reinterpret_cast<Byte *>(base) + bytes);
}

bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  auto begin = [](const void *p) { return reinterpret_cast<uintptr_t>(p); };
  return aBytes && bBytes && begin(a) < begin(b) + bBytes &&
         begin(b) < begin(a) + aBytes;
}

} // namespace

/// What one rank passes to a collective, published to its group.
struct InProcessCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType type = DType::F32;
  int64_t count = 0;
  ReduceOp op = ReduceOp::Sum;
  const void *send = nullptr;
  void *recv = nullptr;

  bool reduces() const {
    return kind == CollectiveKind::AllReduce ||
           kind == CollectiveKind::ReduceScatter;
  }
  std::string describe() const {
    std::string text = describeCollective(kind, type, count);
    if (reduces())
      text += std::string(" (") + reduceOpName(op) + ")";
    return text;
  }
  bool matches(const InProcessCall &other) const {
    return kind == other.kind && type == other.type && count == other.count &&
           (!reduces() || op == other.op);
  }
};

/// A point-to-point message waiting in a mailbox: the sender's bytes, copied
/// so that the sender may go on at once.
struct InProcessMessage {
  DType type = DType::F32;
  int64_t count = 0;
  std::vector<unsigned char> bytes;
};

/// The state a group's members share: a reusable barrier and the calls they
/// published, and the mailboxes of point-to-point messages.
struct InProcessGroupState {
  explicit InProcessGroupState(std::vector<int> members)
      : members(std::move(members)), present(this->members.size(), false),
        calls(this->members.size()) {}

  const std::vector<int> members;
  std::mutex mutex;
  std::condition_variable arrivals;
  int arrived = 0;
  uint64_t generation = 0;
  std::vector<bool> present;
  std::vector<InProcessCall> calls;
  /// Messages sent and not yet received, by (sender, receiver) group
  /// index, oldest first.
  std::map<std::pair<int, int>, std::deque<InProcessMessage>> mailboxes;
};

class InProcessComm::Group : public CommGroup {
public:
  Group(std::vector<int> members, int index, InProcessGroupState &state)
      : CommGroup(std::move(members), index), state(state) {}
  InProcessGroupState &state;
};

//===----------------------------------------------------------------------===//
// InProcessWorld
//===----------------------------------------------------------------------===//

InProcessWorld::InProcessWorld(int size) : worldSize(size) {
  if (size < 1)
    throw RuntimeError("in-process world of " + std::to_string(size) +
                       " ranks: needs at least one");
  for (int rank = 0; rank < size; ++rank)
    comms.push_back(std::make_unique<InProcessComm>(*this, rank));
}

InProcessWorld::~InProcessWorld() = default;

Communicator &InProcessWorld::communicator(int rank) {
  if (rank < 0 || rank >= worldSize)
    throw RuntimeError("rank " + std::to_string(rank) +
                       " out of range for an in-process world of " +
                       std::to_string(worldSize) + " ranks");
  return *comms[rank];
}

std::vector<std::exception_ptr>
InProcessWorld::runOnAllRanks(const std::function<void(Communicator &)> &body) {
  std::vector<std::exception_ptr> errors(worldSize);
  std::vector<std::thread> threads;
  threads.reserve(worldSize);
  for (int rank = 0; rank < worldSize; ++rank)
    threads.emplace_back([&, rank] {
      try {
        body(*comms[rank]);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  return errors;
}

std::string InProcessWorld::failureMessage() const {
  std::lock_guard<std::mutex> lock(failureMutex);
  return failure;
}

std::optional<int> InProcessWorld::failedRank() const {
  std::lock_guard<std::mutex> lock(failureMutex);
  return failingRank;
}

void InProcessWorld::fail(std::optional<int> rank, const std::string &message) {
  {
    std::lock_guard<std::mutex> lock(failureMutex);
    if (!hasFailed.load()) {
      failure = message;
      failingRank = rank;
      hasFailed.store(true);
    }
  }
  wakeAll();
}

void InProcessWorld::throwIfFailed() const {
  if (hasFailed.load())
    throw RuntimeError(failureMessage());
}

void InProcessWorld::wakeAll() {
  std::lock_guard<std::mutex> lock(groupsMutex);
  for (auto &group : groups) {
    std::lock_guard<std::mutex> groupLock(group->mutex);
    group->arrivals.notify_all();
  }
}

InProcessGroupState &InProcessWorld::joinGroup(int rank, int64_t sequence,
                                               const std::vector<int> &ranks) {
  std::lock_guard<std::mutex> lock(groupsMutex);
  std::vector<InProcessGroupState *> &row = groupOfRank[sequence];
  if (row.empty())
    row.assign(worldSize, nullptr);
  InProcessGroupState *state = nullptr;
  for (int member : ranks) {
    InProcessGroupState *joined = row[member];
    if (!joined)
      continue;
    if (joined->members != ranks)
      throw RuntimeError("createGroup #" + std::to_string(sequence) +
                         ": rank " + std::to_string(rank) + " asks for group " +
                         formatRanks(ranks) + " but rank " +
                         std::to_string(member) + " is in group " +
                         formatRanks(joined->members));
    state = joined;
  }
  if (!state) {
    groups.push_back(std::make_unique<InProcessGroupState>(ranks));
    state = groups.back().get();
    for (int member : ranks)
      row[member] = state;
  }
  return *state;
}

//===----------------------------------------------------------------------===//
// InProcessComm
//===----------------------------------------------------------------------===//

InProcessComm::InProcessComm(InProcessWorld &world, int rank)
    : world(world), myRank(rank) {}

InProcessComm::~InProcessComm() = default;

CommGroup &InProcessComm::createGroup(const std::vector<int> &ranks) {
  std::string where = "createGroup " + formatRanks(ranks) + " on rank " +
                      std::to_string(myRank);
  int index = memberIndex(ranks, myRank, world.size(), where);
  InProcessGroupState &state =
      world.joinGroup(myRank, static_cast<int64_t>(groups.size()), ranks);
  groups.push_back(std::make_unique<Group>(ranks, index, state));
  return *groups.back();
}

void InProcessComm::abort(const std::string &reason) {
  world.fail(myRank, "rank " + std::to_string(myRank) + " failed: " + reason);
}

InProcessComm::Group &InProcessComm::begin(CommGroup &group,
                                           const InProcessCall &call,
                                           int peerIndex) {
  world.throwIfFailed();
  Group *found = nullptr;
  for (auto &candidate : groups)
    if (candidate.get() == &group)
      found = candidate.get();
  std::string problem;
  size_t bytes = static_cast<size_t>(std::max<int64_t>(call.count, 0)) *
                 dtypeBytes(call.type);
  size_t parts = static_cast<size_t>(group.size());
  // send() has only its input, recv() only its output.
  bool pointToPoint = call.kind == CollectiveKind::SendRecv;
  bool nullBuffer =
      pointToPoint ? !call.send && !call.recv : !call.send || !call.recv;
  if (!found)
    problem = "a group that rank " + std::to_string(myRank) + " did not create";
  else if (call.count < 0)
    problem = "a negative element count";
  else if (call.count > 0 && nullBuffer)
    problem = "a null buffer";
  else if (call.kind == CollectiveKind::AllToAll &&
           overlaps(call.send, bytes * parts, call.recv, bytes * parts))
    problem = "overlapping input and output";
  else if (pointToPoint && (peerIndex < 0 || peerIndex >= group.size()))
    problem = "peer index " + std::to_string(peerIndex) +
              ", outside a group of " + std::to_string(group.size());
  else if (pointToPoint && peerIndex == group.index())
    problem = "a peer that is the rank itself";
  if (!problem.empty())
    // Peers would otherwise wait for this rank until they time out.
    failWorld("rank " + std::to_string(myRank) + " failed: " + call.describe() +
              " on " + problem);
  return *found;
}

void InProcessComm::failWorld(const std::string &message) {
  world.fail(myRank, message);
  throw RuntimeError(message);
}

/// One rank's passage through its group's barriers during a collective.
class InProcessRendezvous {
public:
  InProcessRendezvous(InProcessWorld &world, InProcessGroupState &state,
                      int index, std::chrono::milliseconds timeout)
      : world(world), state(state), index(index), timeout(timeout),
        deadline(Clock::now() + timeout) {}

  /// Publishes `call` and waits for every member to publish theirs. Throws
  /// the world's failure, a mismatch between the calls, or a timeout.
  void publish(const InProcessCall &call);

  /// Waits for every member; cannot fail once publish() has returned.
  void sync() {
    std::unique_lock<std::mutex> lock(state.mutex);
    uint64_t generation = arrive();
    state.arrivals.wait(lock, [&] { return state.generation != generation; });
  }

private:
  // These run with the mutex held. arrive() returns the generation that
  // completes when every member has arrived.
  uint64_t arrive() {
    uint64_t generation = state.generation;
    state.present[index] = true;
    if (++state.arrived == static_cast<int>(state.members.size())) {
      state.arrived = 0;
      std::fill(state.present.begin(), state.present.end(), false);
      ++state.generation;
      state.arrivals.notify_all();
    }
    return generation;
  }
  void withdraw() {
    state.present[index] = false;
    --state.arrived;
  }
  std::string mismatch() const;
  std::string timeoutMessage(CollectiveKind kind) const;

  InProcessWorld &world;
  InProcessGroupState &state;
  int index;
  std::chrono::milliseconds timeout;
  Clock::time_point deadline;
};

std::string InProcessRendezvous::mismatch() const {
  const std::vector<InProcessCall> &calls = state.calls;
  for (size_t i = 1; i < calls.size(); ++i)
    if (!calls[i].matches(calls[0]))
      return "mismatched collectives in group " + formatRanks(state.members) +
             ": rank " + std::to_string(state.members[0]) + " calls " +
             calls[0].describe() + ", rank " +
             std::to_string(state.members[i]) + " calls " + calls[i].describe();
  return "";
}

std::string InProcessRendezvous::timeoutMessage(CollectiveKind kind) const {
  std::vector<int> missing;
  for (size_t i = 0; i < state.members.size(); ++i)
    if (!state.present[i])
      missing.push_back(state.members[i]);
  std::string who;
  for (size_t i = 0; i < missing.size(); ++i)
    who += (i ? ", " : "") + std::to_string(missing[i]);
  return "timed out after " + formatDuration(timeout) + " waiting for rank" +
         (missing.size() > 1 ? "s " : " ") + who + " in " +
         collectiveKindName(kind);
}

void InProcessRendezvous::publish(const InProcessCall &call) {
  std::unique_lock<std::mutex> lock(state.mutex);
  world.throwIfFailed();
  state.calls[index] = call;
  if (state.arrived + 1 == static_cast<int>(state.members.size())) {
    // The last to arrive checks that every member called the same thing;
    // on a mismatch nobody proceeds.
    std::string message = mismatch();
    if (!message.empty()) {
      lock.unlock();
      world.fail(std::nullopt, message);
      throw RuntimeError(message);
    }
  }
  uint64_t generation = arrive();
  while (state.generation == generation) {
    // A completed barrier wins over a failure: peers may already read this
    // rank's buffers, so it must take part in the rest of the collective.
    if (world.failed()) {
      withdraw();
      lock.unlock();
      world.throwIfFailed();
    }
    if (Clock::now() >= deadline) {
      std::string message = timeoutMessage(call.kind);
      withdraw();
      lock.unlock();
      world.fail(std::nullopt, message);
      throw RuntimeError(message);
    }
    state.arrivals.wait_until(lock, deadline);
  }
}

void InProcessComm::reduceScatter(CommGroup &group, DType type,
                                  const void *send, void *recv, int64_t count,
                                  ReduceOp op) {
  InProcessCall call{
      CollectiveKind::ReduceScatter, type, count, op, send, recv};
  Group &own = begin(group, call);
  int n = own.size(), me = own.index();
  int64_t partBytes = count * static_cast<int64_t>(dtypeBytes(type));
  if (n == 1) {
    if (count && send != recv)
      std::memmove(recv, send, partBytes);
  } else {
    InProcessRendezvous meeting(world, own.state, me, timeout);
    meeting.publish(call);
    std::vector<const void *> sources(n);
    for (int j = 0; j < n; ++j)
      sources[j] = advance(own.state.calls[j].send, me * partBytes);
    reduceInRankOrder(type, sources, recv, count, op);
    meeting.sync();
  }
  countCollective(call.kind, type, count, group);
}

void InProcessComm::allGather(CommGroup &group, DType type, const void *send,
                              void *recv, int64_t count) {
  InProcessCall call{
      CollectiveKind::AllGather, type, count, ReduceOp::Sum, send, recv};
  Group &own = begin(group, call);
  int n = own.size(), me = own.index();
  int64_t partBytes = count * static_cast<int64_t>(dtypeBytes(type));
  if (n == 1) {
    if (count && send != recv)
      std::memmove(recv, send, partBytes);
  } else {
    InProcessRendezvous meeting(world, own.state, me, timeout);
    meeting.publish(call);
    for (int j = 0; j < n; ++j) {
      const void *source = own.state.calls[j].send;
      void *target = advance(recv, j * partBytes);
      if (partBytes && source != target)
        std::memcpy(target, source, partBytes);
    }
    meeting.sync();
  }
  countCollective(call.kind, type, count, group);
}

void InProcessComm::allToAll(CommGroup &group, DType type, const void *send,
                             void *recv, int64_t count) {
  InProcessCall call{
      CollectiveKind::AllToAll, type, count, ReduceOp::Sum, send, recv};
  Group &own = begin(group, call);
  int n = own.size(), me = own.index();
  int64_t partBytes = count * static_cast<int64_t>(dtypeBytes(type));
  if (n == 1) {
    if (count)
      std::memcpy(recv, send, partBytes);
  } else {
    InProcessRendezvous meeting(world, own.state, me, timeout);
    meeting.publish(call);
    for (int j = 0; j < n; ++j)
      if (partBytes)
        std::memcpy(advance(recv, j * partBytes),
                    advance(own.state.calls[j].send, me * partBytes),
                    partBytes);
    meeting.sync();
  }
  countCollective(call.kind, type, count, group);
}

void InProcessComm::allReduce(CommGroup &group, DType type, void *data,
                              int64_t count, ReduceOp op) {
  InProcessCall call{CollectiveKind::AllReduce, type, count, op, data, data};
  Group &own = begin(group, call);
  int n = own.size(), me = own.index();
  int64_t elementBytes = static_cast<int64_t>(dtypeBytes(type));
  PartRange mine = balancedPart(count, n, me);
  if (n > 1) {
    InProcessRendezvous meeting(world, own.state, me, timeout);
    meeting.publish(call);
    // Reduce-scatter: this rank's chunk of every rank, into its own chunk.
    std::vector<const void *> sources(n);
    for (int j = 0; j < n; ++j)
      sources[j] = advance(own.state.calls[j].send, mine.offset * elementBytes);
    reduceInRankOrder(type, sources, advance(data, mine.offset * elementBytes),
                      mine.size, op);
    meeting.sync();
    // All-gather: chunk j from rank j.
    for (int j = 0; j < n; ++j) {
      PartRange part = balancedPart(count, n, j);
      if (j == me || part.size == 0)
        continue;
      std::memcpy(advance(data, part.offset * elementBytes),
                  advance(own.state.calls[j].send, part.offset * elementBytes),
                  part.size * elementBytes);
    }
    meeting.sync();
  }
  countCollective(call.kind, type, count, group);
}

void InProcessComm::send(CommGroup &group, DType type, const void *data,
                         int64_t count, int peerIndex) {
  InProcessCall call{
      CollectiveKind::SendRecv, type, count, ReduceOp::Sum, data, nullptr};
  Group &own = begin(group, call, peerIndex);
  InProcessMessage message{type, count, {}};
  message.bytes.resize(static_cast<size_t>(count) * dtypeBytes(type));
  if (!message.bytes.empty())
    std::memcpy(message.bytes.data(), data, message.bytes.size());
  {
    std::lock_guard<std::mutex> lock(own.state.mutex);
    own.state.mailboxes[{own.index(), peerIndex}].push_back(std::move(message));
  }
  own.state.arrivals.notify_all();
  countCollective(call.kind, type, count, group, own.index());
}

void InProcessComm::recv(CommGroup &group, DType type, void *data,
                         int64_t count, int peerIndex) {
  InProcessCall call{
      CollectiveKind::SendRecv, type, count, ReduceOp::Sum, nullptr, data};
  Group &own = begin(group, call, peerIndex);
  InProcessGroupState &state = own.state;
  Clock::time_point deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(state.mutex);
  std::deque<InProcessMessage> &box = state.mailboxes[{peerIndex, own.index()}];
  while (box.empty()) {
    // world.fail() wakes every group's waiters, this one included.
    if (world.failed()) {
      lock.unlock();
      world.throwIfFailed();
    }
    if (Clock::now() >= deadline) {
      lock.unlock();
      std::string message =
          "timed out after " + formatDuration(timeout) + " waiting for rank " +
          std::to_string(state.members[peerIndex]) + " in send_recv";
      world.fail(std::nullopt, message);
      throw RuntimeError(message);
    }
    state.arrivals.wait_until(lock, deadline);
  }
  InProcessMessage message = std::move(box.front());
  box.pop_front();
  lock.unlock();
  if (message.type != type || message.count != count) {
    // As for mismatched collectives, neither rank is the one to blame.
    std::string text =
        "mismatched send_recv in group " + formatRanks(state.members) +
        ": rank " + std::to_string(state.members[peerIndex]) + " sends " +
        std::to_string(message.count) + " " + dtypeName(message.type) +
        " elements, rank " + std::to_string(myRank) + " receives " +
        std::to_string(count) + " " + dtypeName(type) + " elements";
    world.fail(std::nullopt, text);
    throw RuntimeError(text);
  }
  if (!message.bytes.empty())
    std::memcpy(data, message.bytes.data(), message.bytes.size());
  countCollective(call.kind, type, count, group, peerIndex);
}

} // namespace zerosbp::runtime
