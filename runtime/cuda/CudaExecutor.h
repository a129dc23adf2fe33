//===- CudaExecutor.h - runs a plan on one rank's GPU -----------*- C++ -*-===//
//
// The CUDA counterpart of RankExecutor. One rank owns one GPU:
//
// - one device arena of the plan's size (one cudaMalloc), laid out by the
//   memory plan exactly as on the CPU;
// - a compute stream, on which the kernels run in plan order with deferred
//   device checks (one wait per step, not per embedding or loss);
// - a communication stream, on which the collectives run over NCCL: a
//   collective_start records an event on the compute stream that the
//   communication stream waits for, and a collective_wait makes the compute
//   stream wait for the bucket's completion event. The host never blocks
//   inside a step, so communication overlaps the kernels between a start
//   and its wait as the schedule says;
// - the optimizer's updates and casts as multi-tensor launches, planned once
//   (MultiTensorPlan.h, zero-run --multi-tensor): within the optimizer's
//   segments the kernels run in an order that keeps every dependency
//   through memory, not the plan's.
//
// Times come from CUDA events: compute phases from events at the phase
// boundaries, `commBusy` from events around every collective, `commWait`
// from events around every collective_wait. The end of a step is polled
// with a timeout, checking NCCL's asynchronous errors, so that a failed
// peer ends the step with an error rather than a hang.
//
// A rank of a pipeline stage enqueues its stage's instructions only and
// writes only its stage's values; a send_recv of both halves is an
// ncclSend or ncclRecv on the communication stream. Its halves run on a
// stream and NCCL communicator per direction of their own: a send half
// copies its operand to a staging buffer on the compute stream (all its
// wait waits for) and sends from there, a receive half receives and its
// wait waits for it; the step's end waits for the sends
// (docs/runtime.md#pipeline-stages).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_CUDAEXECUTOR_H
#define ZEROSBP_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "runtime/exec/Executor.h"

#include <memory>
#include <string>

namespace zerosbp::runtime {

/// Whether `worldSize` ranks share GPU 0 through SharedDeviceComm: they are
/// threads of this process (not under mpirun) and outnumber the GPUs it
/// sees. Throws RuntimeError when there is no usable device.
bool ranksShareDevice(int worldSize);

/// The GPU rank `rank` of `worldSize` uses: 0 when the ranks share it, else
/// its local rank (mpirun's OMPI_COMM_WORLD_LOCAL_RANK, else `rank`) modulo
/// the devices it sees. Throws RuntimeError when there is no usable device
/// ("no CUDA device: ...") or fewer devices than the MPI ranks on this
/// machine.
int cudaDeviceForRank(int rank, int worldSize);

/// Rank `rank`'s executor on its GPU; `hostComm` bootstraps NCCL.
std::unique_ptr<Executor> makeCudaExecutor(const Plan &plan, int rank,
                                           Communicator &hostComm);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CUDA_CUDAEXECUTOR_H
