//===- MpirunSupervisor.h - runs mpirun and ends all it started -*- C++ -*-===//
//
// What `zero-run --backend mpi` and `python3 -m zerosbp.launch` do with the
// mpirun they start: wait for it, forward SIGINT and SIGTERM to it (mpirun
// then stops every rank), and make sure that no process it started outlives
// it, so that a signal never leaves ranks running as orphans
// (docs/runtime.md#signals). If the supervising process is killed outright
// (SIGKILL), mpirun gets SIGTERM (PR_SET_PDEATHSIG) and stops the ranks.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TRAIN_MPIRUNSUPERVISOR_H
#define ZEROSBP_RUNTIME_TRAIN_MPIRUNSUPERVISOR_H

#include <chrono>
#include <string>
#include <vector>

namespace zerosbp::runtime {

struct MpirunOutcome {
  /// The status to exit with: mpirun's exit status, 128 + the signal that
  /// interrupted the run, or 1 when mpirun was killed by a signal itself.
  int status = 0;
  /// SIGINT or SIGTERM when one interrupted the run, else 0.
  int signal = 0;
  /// Processes still running `grace` after the signal (or after mpirun
  /// exited), which were killed with SIGKILL.
  int killed = 0;
  /// The signal that killed mpirun itself (not forwarded by this process),
  /// else 0.
  int mpirunSignal = 0;
};

/// Runs `command` (mpirun and its arguments) and returns once it and every
/// process it started have ended. While it runs, SIGINT and SIGTERM are
/// caught and forwarded to mpirun; what is still running `grace` later
/// (a second signal: at once) is killed with SIGKILL. The calling process
/// is a child subreaper meanwhile, so ranks that outlive mpirun are adopted
/// and ended too: it must have no other child processes. The previous
/// signal handlers are restored before returning. Throws RuntimeError when
/// mpirun cannot be started ("cannot run mpirun (install openmpi-bin)").
MpirunOutcome superviseMpirun(const std::vector<std::string> &command,
                              std::chrono::milliseconds grace);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_MPIRUNSUPERVISOR_H
