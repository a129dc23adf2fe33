//===- LocalRanks.h - an MPI job's ranks on this host -----------*- C++ -*-===//
//
// Until MPI_Init returns, MPI cannot say which rank is missing from it; the
// processes of this host can still be looked at. An MPI rank names a thread
// of its own kMpiWatchdogThreadName before it calls MPI_Init, so that its
// peers can tell that it has begun (runtime/comm/MpiComm.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_COMM_LOCALRANKS_H
#define ZEROSBP_RUNTIME_COMM_LOCALRANKS_H

#include <vector>

namespace zerosbp::runtime {

/// The name (at most 15 characters) of the thread that shows that a rank
/// has begun MPI_Init.
constexpr const char *kMpiWatchdogThreadName = "zerosbp-watch";

/// The ranks other than `me` of this process's OpenMPI job on this host
/// (the children of this process's parent, mpirun or its daemon, with this
/// job's id) that are stopped (SIGSTOP, a debugger), or when none is, those
/// that have not begun MPI_Init. Ranks on other hosts cannot be seen.
std::vector<int> localRanksNotInMpiInit(int me);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_COMM_LOCALRANKS_H
