//===- CudaExecutorRegistration.cpp - "cuda" in the executor registry -----===//
//
// Linked (alwayslink) into the binaries built with the CUDA toolkit, so that
// findExecutor("cuda") finds the CUDA executor there and nowhere else.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaExecutor.h"

namespace zerosbp::runtime {
namespace {
const bool registered = registerExecutor("cuda", makeCudaExecutor);
} // namespace
} // namespace zerosbp::runtime
