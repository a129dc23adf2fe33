//===- SharedDeviceComm.cpp - ranks that share one GPU --------------------===//

#include "runtime/cuda/SharedDeviceComm.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/NcclComm.h"
#include "runtime/cuda/RankOrderReduce.h"
#include "runtime/cuda/Support.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

namespace zerosbp::runtime {

namespace {

cudaEvent_t makeEvent(const std::string &what) {
  cudaEvent_t event = nullptr;
  gpu::checkCuda(what,
                 cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

/// What a group's members share: the rendezvous of its collectives and the
/// mailboxes of its messages.
struct GroupState {
  explicit GroupState(const std::vector<int> &members)
      : members(members), arrivals(members.size()), present(members.size(), 0) {
  }
  ~GroupState() {
    if (done)
      (void)cudaEventDestroy(done);
    for (auto &[pair, box] : mailboxes)
      for (Message &message : box) {
        (void)cudaEventDestroy(message.sent);
        (void)cudaFree(message.staging);
      }
  }

  struct Arrival {
    const void *send = nullptr;
    void *recv = nullptr;
    cudaEvent_t ready = nullptr;
  };
  struct Message {
    void *staging = nullptr;
    cudaEvent_t sent = nullptr;
    size_t bytes = 0;
  };

  std::vector<int> members;
  std::mutex mutex;
  std::condition_variable changed;
  /// This collective's arrivals, by group index.
  std::vector<Arrival> arrivals;
  std::vector<char> present;
  int arrived = 0;
  /// Collectives done so far.
  int64_t generation = 0;
  /// Recorded after each collective's work, on its last arriver's stream.
  cudaEvent_t done = nullptr;
  /// Set once a member fails: every later or waiting call throws it.
  std::string failure;
  /// Per (sender, receiver) group index: messages in the order sent.
  std::map<std::pair<int, int>, std::deque<Message>> mailboxes;

  std::string missing() const {
    std::string who;
    int count = 0;
    for (size_t i = 0; i < members.size(); ++i)
      if (!present[i])
        who += (count++ ? ", " : "") + std::to_string(members[i]);
    return std::string(count > 1 ? "ranks " : "rank ") + who;
  }
};

} // namespace

class SharedDeviceGroup : public CommGroup {
public:
  SharedDeviceGroup(std::vector<int> members, int myIndex,
                    std::shared_ptr<GroupState> state, cudaEvent_t ready)
      : CommGroup(std::move(members), myIndex), state(std::move(state)),
        ready(ready) {}
  ~SharedDeviceGroup() override {
    if (ready)
      (void)cudaEventDestroy(ready);
  }
  std::shared_ptr<GroupState> state;
  /// Where this rank's buffers are ready, on its stream.
  cudaEvent_t ready;
};

namespace {

SharedDeviceGroup &sharedGroup(CommGroup &group) {
  return static_cast<SharedDeviceGroup &>(group);
}

/// Runs `work(arrivals, stream)` once for the whole group, on the stream of
/// its last member to arrive, after every member's buffers are ready; then
/// every member's stream waits for it.
template <typename Work>
void rendezvous(SharedDeviceGroup &group, cudaStream_t stream,
                std::chrono::milliseconds timeout, CollectiveKind kind,
                const std::string &what, const void *send, void *recv,
                Work &&work) {
  GroupState &state = *group.state;
  gpu::checkCuda(what, cudaEventRecord(group.ready, stream));
  std::unique_lock<std::mutex> lock(state.mutex);
  if (!state.failure.empty())
    throw RuntimeError(state.failure);
  int me = group.index();
  state.arrivals[me] = {send, recv, group.ready};
  state.present[me] = 1;
  if (++state.arrived == group.size()) {
    try {
      for (const GroupState::Arrival &arrival : state.arrivals)
        gpu::checkCuda(what, cudaStreamWaitEvent(stream, arrival.ready, 0));
      work(state.arrivals, stream);
      gpu::checkCuda(what, cudaEventRecord(state.done, stream));
    } catch (const std::exception &error) {
      state.failure = "rank " + std::to_string(group.ranks()[me]) +
                      " failed: " + error.what();
      state.changed.notify_all();
      throw;
    }
    state.arrived = 0;
    std::fill(state.present.begin(), state.present.end(), 0);
    ++state.generation;
    state.changed.notify_all();
  } else {
    int64_t generation = state.generation;
    bool done = state.changed.wait_for(lock, timeout, [&] {
      return state.generation != generation || !state.failure.empty();
    });
    if (!state.failure.empty())
      throw RuntimeError(state.failure);
    if (!done) {
      state.failure = "timed out after " + formatDuration(timeout) +
                      " waiting for " + state.missing() + " in " +
                      collectiveKindName(kind);
      state.changed.notify_all();
      throw RuntimeError(state.failure);
    }
  }
  // The next collective's last arriver records `done` again only once this
  // member has arrived there, after this wait is enqueued.
  cudaEvent_t done = state.done;
  lock.unlock();
  gpu::checkCuda(what, cudaStreamWaitEvent(stream, done, 0));
}

const char *at(const void *base, int64_t part, size_t partBytes) {
  return static_cast<const char *>(base) + part * partBytes;
}

char *at(void *base, int64_t part, size_t partBytes) {
  return static_cast<char *>(base) + part * partBytes;
}

void copyOnDevice(const std::string &what, void *to, const void *from,
                  size_t bytes, cudaStream_t stream) {
  if (to != from && bytes > 0)
    gpu::checkCuda(what, cudaMemcpyAsync(to, from, bytes,
                                         cudaMemcpyDeviceToDevice, stream));
}

} // namespace

SharedDeviceComm::SharedDeviceComm(Communicator &host, cudaStream_t stream)
    : host(host), stream(stream) {
  setTimeout(host.getTimeout());
  std::vector<int> everyone(host.worldSize());
  for (int r = 0; r < host.worldSize(); ++r)
    everyone[r] = r;
  hostWorld = &host.createGroup(everyone);
}

SharedDeviceComm::~SharedDeviceComm() = default;

CommGroup &SharedDeviceComm::createGroup(const std::vector<int> &ranks) {
  int myIndex = memberIndex(ranks, rank(), worldSize(), "shared-device group");
  if (ranks.size() > static_cast<size_t>(gpu::kMaxReduceRanks))
    throw RuntimeError("shared-device group " + formatRanks(ranks) +
                       ": at "
                       "most " +
                       std::to_string(gpu::kMaxReduceRanks) +
                       " ranks share one GPU");
  // The group's first rank makes the state and passes its address, in a
  // holder that it frees once every member has its own reference.
  std::unique_ptr<std::shared_ptr<GroupState>> holder;
  int64_t mine = 0;
  if (myIndex == 0) {
    auto state = std::make_shared<GroupState>(ranks);
    state->done = makeEvent("shared-device group " + formatRanks(ranks));
    holder = std::make_unique<std::shared_ptr<GroupState>>(std::move(state));
    mine = static_cast<int64_t>(reinterpret_cast<intptr_t>(holder.get()));
  }
  std::vector<int64_t> all(worldSize());
  host.allGather(*hostWorld, DType::I64, &mine, all.data(), 1);
  std::shared_ptr<GroupState> state =
      *reinterpret_cast<std::shared_ptr<GroupState> *>(
          static_cast<intptr_t>(all[ranks[0]]));
  host.allGather(*hostWorld, DType::I64, &mine, all.data(), 1);
  holder.reset();
  cudaEvent_t ready = makeEvent("shared-device group " + formatRanks(ranks));
  groups.push_back(std::make_unique<SharedDeviceGroup>(
      ranks, myIndex, std::move(state), ready));
  return *groups.back();
}

void SharedDeviceComm::allReduce(CommGroup &group, DType type, void *data,
                                 int64_t count, ReduceOp op) {
  std::string what = describeCollective(CollectiveKind::AllReduce, type, count);
  rendezvous(
      sharedGroup(group), stream, getTimeout(), CollectiveKind::AllReduce, what,
      data, data,
      [&](const std::vector<GroupState::Arrival> &arrivals, cudaStream_t on) {
        std::vector<const void *> sources;
        std::vector<void *> outputs;
        for (const GroupState::Arrival &arrival : arrivals) {
          sources.push_back(arrival.recv);
          outputs.push_back(arrival.recv);
        }
        gpu::reduceInRankOrderOnDevice(type, sources, outputs, count, op, on);
      });
  countCollective(CollectiveKind::AllReduce, type, count, group);
}

void SharedDeviceComm::reduceScatter(CommGroup &group, DType type,
                                     const void *send, void *recv,
                                     int64_t count, ReduceOp op) {
  std::string what =
      describeCollective(CollectiveKind::ReduceScatter, type, count);
  size_t partBytes = static_cast<size_t>(count) * dtypeBytes(type);
  rendezvous(
      sharedGroup(group), stream, getTimeout(), CollectiveKind::ReduceScatter,
      what, send, recv,
      [&](const std::vector<GroupState::Arrival> &arrivals, cudaStream_t on) {
        // Part i of every member's input into member i's output; a
        // member's output may be its own part i (in place).
        for (size_t i = 0; i < arrivals.size(); ++i) {
          std::vector<const void *> sources;
          for (const GroupState::Arrival &arrival : arrivals)
            sources.push_back(at(arrival.send, i, partBytes));
          gpu::reduceInRankOrderOnDevice(type, sources, {arrivals[i].recv},
                                         count, op, on);
        }
      });
  countCollective(CollectiveKind::ReduceScatter, type, count, group);
}

void SharedDeviceComm::allGather(CommGroup &group, DType type, const void *send,
                                 void *recv, int64_t count) {
  std::string what = describeCollective(CollectiveKind::AllGather, type, count);
  size_t partBytes = static_cast<size_t>(count) * dtypeBytes(type);
  rendezvous(
      sharedGroup(group), stream, getTimeout(), CollectiveKind::AllGather, what,
      send, recv,
      [&](const std::vector<GroupState::Arrival> &arrivals, cudaStream_t on) {
        // Member j's input into part j of every output; in place, a
        // member's input is its own part j, which no copy writes.
        for (size_t i = 0; i < arrivals.size(); ++i)
          for (size_t j = 0; j < arrivals.size(); ++j)
            copyOnDevice(what, at(arrivals[i].recv, j, partBytes),
                         arrivals[j].send, partBytes, on);
      });
  countCollective(CollectiveKind::AllGather, type, count, group);
}

void SharedDeviceComm::allToAll(CommGroup &group, DType type, const void *send,
                                void *recv, int64_t count) {
  std::string what = describeCollective(CollectiveKind::AllToAll, type, count);
  size_t partBytes = static_cast<size_t>(count) * dtypeBytes(type);
  rendezvous(
      sharedGroup(group), stream, getTimeout(), CollectiveKind::AllToAll, what,
      send, recv,
      [&](const std::vector<GroupState::Arrival> &arrivals, cudaStream_t on) {
        for (size_t i = 0; i < arrivals.size(); ++i)
          for (size_t j = 0; j < arrivals.size(); ++j)
            copyOnDevice(what, at(arrivals[i].recv, j, partBytes),
                         at(arrivals[j].send, i, partBytes), partBytes, on);
      });
  countCollective(CollectiveKind::AllToAll, type, count, group);
}

void SharedDeviceComm::send(CommGroup &group, DType type, const void *data,
                            int64_t count, int peerIndex) {
  std::string what = describeCollective(CollectiveKind::SendRecv, type, count);
  SharedDeviceGroup &shared = sharedGroup(group);
  GroupState::Message message;
  message.bytes = static_cast<size_t>(count) * dtypeBytes(type);
  gpu::checkCuda(what,
                 cudaMallocAsync(&message.staging,
                                 message.bytes ? message.bytes : 1, stream));
  copyOnDevice(what, message.staging, data, message.bytes, stream);
  message.sent = makeEvent(what);
  gpu::checkCuda(what, cudaEventRecord(message.sent, stream));
  {
    std::lock_guard<std::mutex> lock(shared.state->mutex);
    shared.state->mailboxes[{group.index(), peerIndex}].push_back(message);
  }
  shared.state->changed.notify_all();
  countCollective(CollectiveKind::SendRecv, type, count, group, group.index());
}

void SharedDeviceComm::recv(CommGroup &group, DType type, void *data,
                            int64_t count, int peerIndex) {
  std::string what = describeCollective(CollectiveKind::SendRecv, type, count);
  SharedDeviceGroup &shared = sharedGroup(group);
  GroupState &state = *shared.state;
  GroupState::Message message;
  {
    std::unique_lock<std::mutex> lock(state.mutex);
    std::deque<GroupState::Message> &box =
        state.mailboxes[{peerIndex, group.index()}];
    bool arrived = state.changed.wait_for(lock, getTimeout(), [&] {
      return !box.empty() || !state.failure.empty();
    });
    if (!state.failure.empty())
      throw RuntimeError(state.failure);
    if (!arrived) {
      state.failure = "timed out after " + formatDuration(getTimeout()) +
                      " waiting for rank " +
                      std::to_string(group.ranks()[peerIndex]) +
                      " in send_recv";
      state.changed.notify_all();
      throw RuntimeError(state.failure);
    }
    message = box.front();
    box.pop_front();
  }
  size_t bytes = static_cast<size_t>(count) * dtypeBytes(type);
  if (message.bytes != bytes)
    throw RuntimeError(what + ": rank " +
                       std::to_string(group.ranks()[peerIndex]) + " sent " +
                       std::to_string(message.bytes) + " bytes, " +
                       std::to_string(bytes) + " expected");
  gpu::checkCuda(what, cudaStreamWaitEvent(stream, message.sent, 0));
  copyOnDevice(what, data, message.staging, bytes, stream);
  gpu::checkCuda(what, cudaFreeAsync(message.staging, stream));
  gpu::checkCuda(what, cudaEventDestroy(message.sent));
  countCollective(CollectiveKind::SendRecv, type, count, group, peerIndex);
}

void SharedDeviceComm::abort(const std::string &reason) {
  for (auto &group : groups) {
    GroupState &state = *group->state;
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.failure.empty())
      state.failure = "rank " + std::to_string(rank()) + " failed: " + reason;
    state.changed.notify_all();
  }
  host.abort(reason);
}

void SharedDeviceComm::abortGroups() {
  for (auto &group : groups) {
    GroupState &state = *group->state;
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.failure.empty())
      state.failure = "rank " + std::to_string(rank()) + " stopped";
    state.changed.notify_all();
  }
}

void SharedDeviceComm::checkAsyncErrors() {
  for (auto &group : groups) {
    GroupState &state = *group->state;
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.failure.empty())
      throw RuntimeError(state.failure);
  }
}

std::unique_ptr<DeviceComm> makeDeviceComm(Communicator &host,
                                           cudaStream_t stream, bool shared) {
  if (shared)
    return std::make_unique<SharedDeviceComm>(host, stream);
  return std::make_unique<NcclComm>(host, stream);
}

} // namespace zerosbp::runtime
