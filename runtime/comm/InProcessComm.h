//===- InProcessComm.h - threads of one process as ranks --------*- C++ -*-===//
//
// The embedded default backend: one thread per rank in one process, sharing
// memory. A collective publishes each rank's buffers, waits until the whole
// group has arrived, and then every rank reads what it needs straight from
// its peers' buffers, reducing in rank order; a last barrier keeps every
// buffer untouched until no peer reads it any more.
//
//   InProcessWorld world(4);
//   // on the thread of rank r:
//   Communicator &comm = world.communicator(r);
//   CommGroup &all = comm.createGroup({0, 1, 2, 3});
//   comm.allReduce(all, DType::F32, data, count, ReduceOp::Sum);
//
// Results are bit-identical from run to run, whatever the thread timing.
//
// Algorithms (n ranks in the group, b bytes per element; bytes sent are
// what leaves a rank, as a direct network algorithm would send them):
//   reduce-scatter: rank i reduces part i of every rank's input;
//                   sends (n-1) * count * b.
//   all-gather:     rank i copies part j from rank j; sends (n-1) * count * b.
//   all-to-all:     rank i copies part i of rank j's input into its part j;
//                   sends (n-1) * count * b.
//   all-reduce:     a reduce-scatter over n balanced chunks (larger first)
//                   into each rank's own chunk, then an all-gather of the
//                   chunks; sends (count - c_i) * b + (n-1) * c_i * b with
//                   c_i the rank's chunk, 2 * count * b * (n-1)/n when n
//                   divides count.
// With n = 1 nothing is sent and collectives are local copies.
//
// Point to point: send() copies the bytes into the group's mailbox for the
// (sender, receiver) pair and returns; recv() waits for the oldest message
// of that pair and copies it out. Mailboxes are first in, first out, so
// messages between two members arrive in the order sent.
//
// Buffers: the reduce-scatter output may be the rank's own part of its
// input, and the all-gather input may be the rank's own part of its output
// (in place); otherwise inputs and outputs must not overlap.
//
// Failures: abort() records the failing rank and its reason in the world;
// every collective of every rank that is waiting, or that starts later,
// throws RuntimeError("rank R failed: <reason>"). A rank that waits longer
// than its timeout for its group (or, in recv(), for its peer's message)
// throws RuntimeError naming the ranks that did not arrive and fails the
// world the same way. After a failure the
// world is unusable: every collective throws.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_COMM_INPROCESSCOMM_H
#define ZEROSBP_RUNTIME_COMM_INPROCESSCOMM_H

#include "runtime/comm/Communicator.h"

#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace zerosbp::runtime {

class InProcessComm;
class InProcessRendezvous;
struct InProcessCall;
struct InProcessGroupState;

class InProcessWorld {
public:
  explicit InProcessWorld(int size);
  ~InProcessWorld();
  InProcessWorld(const InProcessWorld &) = delete;
  InProcessWorld &operator=(const InProcessWorld &) = delete;

  int size() const { return worldSize; }
  /// The communicator of `rank`, used by that rank's threads.
  Communicator &communicator(int rank);

  /// Runs `body(communicator(r))` on one new thread per rank and joins
  /// them. Returns what each rank threw (null where it returned).
  std::vector<std::exception_ptr>
  runOnAllRanks(const std::function<void(Communicator &)> &body);

  /// Whether a rank aborted or a collective timed out.
  bool failed() const { return hasFailed.load(); }
  /// The message every collective throws after a failure; empty if none.
  std::string failureMessage() const;
  /// The rank that aborted first, if any.
  std::optional<int> failedRank() const;
  /// Fails the world from outside its ranks (a signal stopping the run):
  /// every waiting or later collective throws RuntimeError(message).
  void interrupt(const std::string &message) { fail(std::nullopt, message); }

private:
  friend class InProcessComm;
  friend class InProcessRendezvous;

  /// Records the first failure and wakes every waiting rank.
  void fail(std::optional<int> rank, const std::string &message);
  /// Throws the failure's RuntimeError if the world has failed.
  void throwIfFailed() const;
  /// Wakes every rank waiting in any group.
  void wakeAll();
  /// The shared state of the `sequence`-th group that `rank` creates.
  InProcessGroupState &joinGroup(int rank, int64_t sequence,
                                 const std::vector<int> &ranks);

  int worldSize;
  std::vector<std::unique_ptr<InProcessComm>> comms;

  std::atomic<bool> hasFailed{false};
  mutable std::mutex failureMutex;
  std::string failure;
  std::optional<int> failingRank;

  std::mutex groupsMutex;
  std::vector<std::unique_ptr<InProcessGroupState>> groups;
  /// groupOfRank[sequence][rank]: the group `rank` joins in its
  /// `sequence`-th createGroup.
  std::map<int64_t, std::vector<InProcessGroupState *>> groupOfRank;
};

class InProcessComm : public Communicator {
public:
  InProcessComm(InProcessWorld &world, int rank);
  ~InProcessComm() override;

  int rank() const override { return myRank; }
  int worldSize() const override { return world.size(); }
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

  void abort(const std::string &reason) override;

private:
  class Group;

  /// Checks the world and the arguments (and for send_recv `peerIndex`);
  /// returns this rank's view of `group`. An invalid call fails the world,
  /// as peers would wait for it.
  Group &begin(CommGroup &group, const InProcessCall &call, int peerIndex = -1);
  /// Fails the world with `message` and throws it.
  [[noreturn]] void failWorld(const std::string &message);

  InProcessWorld &world;
  int myRank;
  std::vector<std::unique_ptr<Group>> groups;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_COMM_INPROCESSCOMM_H
