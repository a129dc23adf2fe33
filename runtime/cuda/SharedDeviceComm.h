//===- SharedDeviceComm.h - ranks that share one GPU ------------*- C++ -*-===//
//
// The device communicator of ranks that are threads of one process on the
// same GPU (zero-run --device cuda --ranks N on fewer GPUs than ranks),
// where NCCL refuses to run. A collective is a rendezvous on the host: each
// rank records an event on its communication stream where its buffers are
// ready and publishes them; the last to arrive enqueues the whole
// collective on its own stream, after every rank's event (device copies,
// and reductions in rank order by RankOrderReduce.h, so results equal the
// in-process CPU backend's bit for bit), records an event when it is done,
// and every rank's stream waits for that event. So, as with NCCL, a call
// returns once the work is enqueued. Bytes are counted as every backend
// counts them (Communicator.h).
//
// Point to point: send() copies the message into a staging buffer on the
// sender's stream and posts it to the (sender, receiver) mailbox; recv()
// takes the oldest, its stream waits for the copy and copies it out.
//
// Groups are made over the host communicator: a group's first rank makes
// the group's shared state and passes its address to the others in a host
// all-gather, as NCCL's unique id travels.
//
// Failures: abort() marks every group of this rank failed (waiting peers
// throw "rank R failed: ...") and tells the host world; a rank that waits
// longer than the timeout for its group names the ranks that did not come.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_SHAREDDEVICECOMM_H
#define ZEROSBP_RUNTIME_CUDA_SHAREDDEVICECOMM_H

#include "runtime/cuda/DeviceComm.h"

#include <memory>
#include <string>
#include <vector>

namespace zerosbp::runtime {

class SharedDeviceGroup;

class SharedDeviceComm : public DeviceComm {
public:
  /// This rank's side of `host`'s world (threads of one process), on the
  /// current CUDA device, with collectives enqueued on `stream`.
  SharedDeviceComm(Communicator &host, cudaStream_t stream);
  ~SharedDeviceComm() override;

  int rank() const override { return host.rank(); }
  int worldSize() const override { return host.worldSize(); }
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

  const char *backendName() const override { return "shared_device"; }
  void abortGroups() override;
  void checkAsyncErrors() override;

private:
  Communicator &host;
  CommGroup *hostWorld = nullptr;
  cudaStream_t stream;
  std::vector<std::unique_ptr<SharedDeviceGroup>> groups;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_SHAREDDEVICECOMM_H
