//===- RankOrderReduce.h - collectives' reductions on the device -*- C++
//-*-===//
//
// The reduction of Communicator.h's reduceInRankOrder as a kernel, for the
// communicator of ranks that share one GPU (SharedDeviceComm.h): every
// element is reduced from the sources in rank order, floating point types
// accumulating in f32 (f64 for f64) and rounding once with the CPU's
// rounding, so that results equal the CPU backends' bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_RANKORDERREDUCE_H
#define ZEROSBP_RUNTIME_CUDA_RANKORDERREDUCE_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/DType.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace zerosbp::runtime::gpu {

/// The most ranks one launch reduces over.
constexpr int kMaxReduceRanks = 64;

/// Enqueues on `stream`: element i of every `outputs[k]` becomes the
/// reduction of element i of `sources` (one per rank, in rank order). An
/// output may be a source (in place): each element is read from every
/// source before it is written.
void reduceInRankOrderOnDevice(DType type,
                               const std::vector<const void *> &sources,
                               const std::vector<void *> &outputs,
                               int64_t count, ReduceOp op, cudaStream_t stream);

} // namespace zerosbp::runtime::gpu

#endif // ZEROSBP_RUNTIME_CUDA_RANKORDERREDUCE_H
