//===- MpiComm.h - collectives between MPI processes ------------*- C++ -*-===//
//
// The multi-process CPU backend: one process per rank, launched by mpirun
// (OpenMPI). MPI only moves bytes (nonblocking all-to-all and all-gather on
// raw element types); every reduction is the local reduceInRankOrder, so
// results equal the in-process backend's bit for bit, and the bytes counted
// are the same as there.
//
//   MpiSession session(&argc, &argv);
//   std::unique_ptr<Communicator> comm = session.communicator();
//   CommGroup &all = comm->createGroup(allRanks);
//
// Waits poll MPI_Test with short sleeps, so a collective that waits longer
// than the communicator's timeout throws RuntimeError naming the collective,
// the time and the ranks that did not arrive; the communicator is unusable
// afterwards (MPI cannot cancel a collective), and its buffers may still be
// written: the caller should abort(). To name those ranks, the rank that
// timed out asks every peer, in messages of its own, how many
// collectives of the group it has begun; peers answer while they wait in
// theirs. The peers that do not answer (stopped with SIGSTOP, killed, or
// busy elsewhere) are named; when all answer, those that have begun fewer
// (docs/runtime.md#communicators).
//
// The calls of start-up that MPI cannot poll (MPI_Init, MPI_Comm_dup,
// MPI_Comm_split) wait no longer than the session's timeout: a watchdog
// thread answers the roll call for its rank while one runs, and when one
// waits too long it names the ranks that did not arrive (in MPI_Init, the
// ranks of this host that are stopped or have not begun it) and ends the
// job.
//
// abort() prints "zero-run: rank R failed: <reason>" to stderr and calls
// MPI_Abort, which makes mpirun end every rank; it may be called from any
// thread.
// A rank started by mpirun dies with it (PR_SET_PDEATHSIG).
//
// Communicators must be destroyed before their session.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_COMM_MPICOMM_H
#define ZEROSBP_RUNTIME_COMM_MPICOMM_H

#include "runtime/comm/Communicator.h"

#include <chrono>
#include <memory>
#include <vector>

namespace zerosbp::runtime {

class MpiWatchdog;
class RollCall;

/// MPI_Init_thread (MPI_THREAD_MULTIPLE) for its lifetime, MPI_Finalize at
/// the end. At most one per process.
class MpiSession {
public:
  /// `argc` and `argv` may be null. MPI_Init, the world communicator's
  /// duplicate and its communicators' groups wait at most `timeout` for the
  /// other ranks; then this rank prints the ranks missing and ends the job.
  MpiSession(int *argc = nullptr, char ***argv = nullptr,
             std::chrono::milliseconds timeout = std::chrono::minutes(5));
  ~MpiSession();
  MpiSession(const MpiSession &) = delete;
  MpiSession &operator=(const MpiSession &) = delete;

  int rank() const { return worldRank; }
  int size() const { return worldSize; }

  /// Whether this process was started by OpenMPI's mpirun (it sets
  /// OMPI_COMM_WORLD_SIZE).
  static bool launchedByMpirun();

  /// A communicator over MPI_COMM_WORLD (a duplicate of it), with the
  /// session's timeout. Collective: every rank calls it.
  std::unique_ptr<Communicator> communicator();

  /// Every rank's `mine` (equal sizes on every rank), in rank order, over
  /// MPI_COMM_WORLD: for records that must not count as training traffic.
  /// Collective; waiting longer than `timeout` throws RuntimeError naming
  /// the ranks that did not arrive, and the caller should then abort.
  std::vector<double>
  gatherRecords(const std::vector<double> &mine,
                std::chrono::milliseconds timeout = std::chrono::hours(24));

private:
  std::chrono::milliseconds timeout;
  int worldRank = 0;
  int worldSize = 1;
  /// Bounds the calls that cannot be polled; shared with the communicators.
  std::shared_ptr<MpiWatchdog> watchdog;
  /// Shared with the communicators (see RollCall in MpiComm.cpp).
  std::shared_ptr<RollCall> roll;
  /// The records gather's buffer: it outlives a gather that timed out,
  /// which MPI may still write.
  std::vector<double> gathered;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_COMM_MPICOMM_H
