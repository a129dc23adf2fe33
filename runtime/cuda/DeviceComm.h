//===- DeviceComm.h - a communicator of GPU buffers -------------*- C++ -*-===//
//
// What the CUDA executor asks of the communicator between its ranks,
// beyond Communicator.h: its buffers are device pointers and its work is
// enqueued on the rank's communication stream. Two backends:
//   - NcclComm: one GPU per rank, over NCCL (ranks in one process or MPI);
//   - SharedDeviceComm: ranks that are threads of one process on one GPU,
//     which NCCL refuses ("Duplicate GPU detected"), with the CPU backends'
//     reductions bit for bit.
// makeDeviceComm picks one (CudaExecutor.h says when).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_DEVICECOMM_H
#define ZEROSBP_RUNTIME_CUDA_DEVICECOMM_H

#include "runtime/comm/Communicator.h"

#include <cuda_runtime_api.h>

#include <memory>

namespace zerosbp::runtime {

class DeviceComm : public Communicator {
public:
  /// "nccl" or "shared_device": the report's `device_comm`.
  virtual const char *backendName() const = 0;
  /// Ends this rank's pending work without telling the host world
  /// (another communicator's abort() does).
  virtual void abortGroups() = 0;
  /// Throws RuntimeError when a peer or the transport has failed since.
  virtual void checkAsyncErrors() = 0;
};

/// Rank `host.rank()`'s device communicator on the current device, its
/// work on `stream`: SharedDeviceComm when `shared`, else NcclComm.
std::unique_ptr<DeviceComm> makeDeviceComm(Communicator &host,
                                           cudaStream_t stream, bool shared);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_DEVICECOMM_H
