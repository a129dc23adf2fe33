//===- NcclComm.h - collectives between GPUs over NCCL ----------*- C++ -*-===//
//
// The Communicator of the CUDA executor. Its buffers are device pointers and
// its collectives are enqueued on one CUDA stream (the rank's communication
// stream): a call returns once the work is enqueued, and the work is done
// when the stream reaches it. Everything else follows Communicator.h: the
// same groups, the same collectives, and the same bytes counted per kind as
// the CPU backends (the direct algorithms' bytes, whatever NCCL's own ring
// or tree moves), so that a plan's reported traffic does not depend on the
// device.
//
// One thing differs: NCCL sums in its own order, not in rank order, so with
// more than one rank a reduction can differ from the CPU's in the last bits.
// At world size 1 every collective is a copy and results are exact.
//
// Bootstrap: each group's first rank makes an NCCL unique id, and the ids
// travel over the host communicator (threads or MPI) that the run already
// has. No TCP store or extra launcher is needed.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_NCCLCOMM_H
#define ZEROSBP_RUNTIME_CUDA_NCCLCOMM_H

#include "runtime/cuda/DeviceComm.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

namespace zerosbp::runtime {

class NcclGroup;

class NcclComm : public DeviceComm {
public:
  /// This rank's side of `host`'s world, on the current CUDA device, with
  /// collectives enqueued on `stream`.
  NcclComm(Communicator &host, cudaStream_t stream);
  ~NcclComm() override;

  int rank() const override { return host.rank(); }
  int worldSize() const override { return host.worldSize(); }

  /// Collective over the host world, like Communicator::createGroup; also
  /// initializes the group's NCCL communicator (blocks until every member
  /// has joined).
  CommGroup &createGroup(const std::vector<int> &ranks) override;

  void allReduce(CommGroup &group, DType type, void *data, int64_t count,
                 ReduceOp op) override;
  void reduceScatter(CommGroup &group, DType type, const void *send, void *recv,
                     int64_t count, ReduceOp op) override;
  void allGather(CommGroup &group, DType type, const void *send, void *recv,
                 int64_t count) override;
  void allToAll(CommGroup &group, DType type, const void *send, void *recv,
                int64_t count) override;
  /// ncclSend / ncclRecv to group member `peerIndex`, enqueued on the
  /// stream; NCCL matches them in the order they were enqueued. Neither
  /// waits on the host: send() returns once enqueued, never for the peer.
  /// The stream does wait: NCCL moves a large message only once the peer
  /// receives it, so a send holds up the work behind it on its stream (the
  /// CUDA executor sends send_recv halves from a staging copy, on streams
  /// of their own).
  void send(CommGroup &group, DType type, const void *data, int64_t count,
            int peerIndex) override;
  void recv(CommGroup &group, DType type, void *data, int64_t count,
            int peerIndex) override;

  /// Aborts every NCCL communicator of this rank (their pending work ends)
  /// and tells the host world.
  void abort(const std::string &reason) override;
  const char *backendName() const override { return "nccl"; }
  /// Aborts this rank's NCCL communicators without telling the host world
  /// (another communicator's abort() does).
  void abortGroups() override;

  /// Throws RuntimeError when NCCL has reported an asynchronous error (a
  /// peer that failed, a broken connection) on any of this rank's groups.
  void checkAsyncErrors() override;

private:
  Communicator &host;
  CommGroup *hostWorld = nullptr;
  cudaStream_t stream;
  std::vector<std::unique_ptr<NcclGroup>> groups;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_NCCLCOMM_H
