//===- Communicator.h - collectives between ranks ---------------*- C++ -*-===//
//
// The collectives a plan issues, on flat contiguous buffers, within a group
// of ranks. Every backend reduces in rank order (group index 0, 1, 2, ...),
// accumulating f32/f16/bf16 in f32 and f64 in f64, so that a reduction's
// result does not depend on the backend or on how tensors were bucketed:
// element i of a bucket is the same sum whatever else is in the bucket.
//
// Algorithms are direct (each rank sends each peer exactly the part that
// peer needs), so the bytes a rank sends are those of docs/ir.md#boxing:
// all-reduce 2T(n-1)/n (a reduce-scatter then an all-gather), reduce-scatter
// and all-gather T(n-1)/n, all-to-all T(n-1)/n^2 per part... where T is the
// full-size bytes. Each backend counts the bytes it sends, by kind.
//
// Pipeline stages pass activations point to point: send() and recv() move
// one buffer from one group member to another (kind send_recv). Only the
// sender counts its bytes; messages between two members arrive in the order
// they were sent. send() never waits for the receiver: it copies the bytes
// (or, on a device, enqueues them) and returns; completeSends() waits until
// the messages sent so far have left this rank, which the executors call at
// the end of every step. recv() waits, at most the timeout, for its
// message.
//
// A Communicator is used by one thread of its rank at a time (the rank's
// communication stream). Failures: a rank that fails calls abort(); every
// other rank's pending or next collective then throws RuntimeError naming
// the failed rank. A collective that waits longer than the timeout throws
// RuntimeError naming the ranks that did not arrive.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_COMM_COMMUNICATOR_H
#define ZEROSBP_RUNTIME_COMM_COMMUNICATOR_H

#include "runtime/core/DType.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zerosbp::runtime {

enum class CollectiveKind {
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  SendRecv
};
constexpr int kNumCollectiveKinds = 5;
/// Placements have at most three hierarchy axes (Megatron's [pipeline,
/// data, model]; [nodes, ranks per node]): bytes are counted per axis.
constexpr int kMaxHierarchyAxes = 3;
const char *collectiveKindName(CollectiveKind kind); // "all_reduce", ...

enum class ReduceOp { Sum, Max };

/// A set of ranks that run collectives together, made by
/// Communicator::createGroup.
class CommGroup {
public:
  virtual ~CommGroup() = default;
  /// World ranks in group order.
  const std::vector<int> &ranks() const { return members; }
  /// This rank's index in ranks().
  int index() const { return myIndex; }
  int size() const { return static_cast<int>(members.size()); }
  /// The plan's hierarchy axis this group runs collectives over, or -1:
  /// bytes are counted per axis too (intra- against inter-node).
  int axis() const { return hierarchyAxis; }
  void setAxis(int axis) { hierarchyAxis = axis; }

protected:
  CommGroup(std::vector<int> members, int myIndex)
      : members(std::move(members)), myIndex(myIndex) {}

private:
  std::vector<int> members;
  int myIndex;
  int hierarchyAxis = -1;
};

struct CommStats {
  std::array<int64_t, kNumCollectiveKinds> bytesSent{};
  std::array<int64_t, kNumCollectiveKinds> calls{};
  /// The same bytes by the hierarchy axis of their group.
  std::array<int64_t, kMaxHierarchyAxes> bytesSentOnAxis{};
  int64_t &sent(CollectiveKind kind) {
    return bytesSent[static_cast<int>(kind)];
  }
  int64_t sent(CollectiveKind kind) const {
    return bytesSent[static_cast<int>(kind)];
  }
  int64_t &called(CollectiveKind kind) { return calls[static_cast<int>(kind)]; }
  int64_t called(CollectiveKind kind) const {
    return calls[static_cast<int>(kind)];
  }
};

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;

  /// Collective over the whole world: every rank calls it with the same
  /// groups in the same order (each rank passes the group it belongs to,
  /// `ranks` in group order). The group lives as long as the communicator.
  virtual CommGroup &createGroup(const std::vector<int> &ranks) = 0;

  /// `data` holds `count` elements; every rank ends with the reduction.
  virtual void allReduce(CommGroup &group, DType type, void *data,
                         int64_t count, ReduceOp op) = 0;
  /// `send` holds n parts of `count` elements; rank i gets the reduction of
  /// part i in `recv` (`count` elements).
  virtual void reduceScatter(CommGroup &group, DType type, const void *send,
                             void *recv, int64_t count, ReduceOp op) = 0;
  /// `send` holds `count` elements; `recv` gets n parts, part j from rank j.
  virtual void allGather(CommGroup &group, DType type, const void *send,
                         void *recv, int64_t count) = 0;
  /// `send` holds n parts of `count` elements, part j for rank j; `recv`
  /// gets n parts, part j from rank j.
  virtual void allToAll(CommGroup &group, DType type, const void *send,
                        void *recv, int64_t count) = 0;

  /// Point to point within `group`: `data` holds `count` elements for group
  /// member `peerIndex`, which takes them with recv(). The bytes are counted
  /// here, under send_recv. Returns without waiting for the peer to
  /// receive; `data` may be reused at once (a device backend: once the
  /// stream has reached the send).
  virtual void send(CommGroup &group, DType type, const void *data,
                    int64_t count, int peerIndex) = 0;
  /// Receives into `data` the next message group member `peerIndex` sent
  /// this rank; it must hold `count` elements of `type`. Waits at most the
  /// timeout, naming the peer when it has not sent.
  virtual void recv(CommGroup &group, DType type, void *data, int64_t count,
                    int peerIndex) = 0;

  /// Waits until every message send() has sent so far has left this rank
  /// (its peer received it, or the transport holds it), so that nothing is
  /// in flight: the end of a step, before a checkpoint. Waits at most the
  /// timeout, naming a peer that does not receive. Nothing to do for a
  /// backend whose send() completes at once.
  virtual void completeSends() {}

  /// Tells every other rank that this one failed (best effort, never
  /// throws); their collectives then fail with a message naming this rank.
  virtual void abort(const std::string &reason) = 0;

  void setTimeout(std::chrono::milliseconds value) { timeout = value; }
  std::chrono::milliseconds getTimeout() const { return timeout; }
  const CommStats &stats() const { return counters; }
  void resetStats() { counters = CommStats(); }

protected:
  /// Counts one collective over `group`, `count` as the collective's own
  /// argument, with directBytesSent: every backend counts the same bytes.
  /// For send_recv, `sourceIndex` is the sending member's group index.
  void countCollective(CollectiveKind kind, DType type, int64_t count,
                       const CommGroup &group, int sourceIndex = -1);

  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  CommStats counters;
};

/// Reduces `sources` (one pointer per group rank, in rank order) into
/// `out`, element by element in rank order: the one reduction every backend
/// uses. `out` may alias sources[0].
void reduceInRankOrder(DType type, const std::vector<const void *> &sources,
                       void *out, int64_t count, ReduceOp op);

/// Part `index` of `count` elements cut into `parts` balanced parts (sizes
/// differ by at most one, larger parts first): all-reduce's chunks.
struct PartRange {
  int64_t offset;
  int64_t size;
};
PartRange balancedPart(int64_t count, int parts, int index);

/// The index of `myRank` in the group `ranks` of a world of `worldSize`;
/// throws RuntimeError prefixed by `where` when the group is empty, holds a
/// rank outside the world or twice, or does not hold `myRank`.
int memberIndex(const std::vector<int> &ranks, int myRank, int worldSize,
                const std::string &where);

/// The bytes rank `groupIndex` of a group of `groupSize` sends in one
/// collective with the direct algorithms (docs/ir.md#boxing); `count` is
/// the collective's own argument (all elements for an all-reduce, one
/// rank's part for the others, the message for send_recv). A send_recv
/// sends its `count` elements from group index `sourceIndex`; its
/// receiver sends nothing.
int64_t directBytesSent(CollectiveKind kind, DType type, int64_t count,
                        int groupSize, int groupIndex, int sourceIndex = -1);

/// "[0, 1, 3]".
std::string formatRanks(const std::vector<int> &ranks);
/// "5 s", or "1500 ms" when not whole seconds.
std::string formatDuration(std::chrono::milliseconds value);

/// "all_reduce of 10 f32 elements": the collective a message is about.
std::string describeCollective(CollectiveKind kind, DType type, int64_t count);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_COMM_COMMUNICATOR_H
