//===- MpiTraining.h - one rank per process under mpirun --------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_TRAIN_MPITRAINING_H
#define ZEROSBP_RUNTIME_TRAIN_MPITRAINING_H

#include "runtime/train/Trainer.h"

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace zerosbp::runtime {

class MpiSession;

/// This process's rank of an MPI run. A failure on any rank aborts the
/// whole job with a message naming that rank.
class MpiTraining {
public:
  /// Starts MPI; this and every other wait of start-up gives up after
  /// `timeoutSeconds` (--timeout), naming the ranks that did not come.
  explicit MpiTraining(double timeoutSeconds = 300);
  ~MpiTraining();

  int rank() const;
  int size() const;
  /// Trains; only rank 0's result holds every rank's records.
  TrainResult train(const Plan &plan, const TrainOptions &options,
                    std::ostream &progress);

  static bool launchedByMpirun();
  /// Runs `mpirun -n ranks <this command>` and returns its exit status; on
  /// SIGINT or SIGTERM, stops every rank, prints "zero-run: interrupted by
  /// SIGTERM" and returns 128 + the signal.
  static int relaunchUnderMpirun(int argc, char **argv, int ranks,
                                 const std::string &hostfile = "");
  /// `mpirun -n ranks` with the flags for one machine and `dir` (an empty,
  /// private directory) for its session files; the program comes after.
  /// With a `hostfile` (OpenMPI's format, docs/runtime.md#many-machines)
  /// the ranks are placed on its hosts by slot and talk over TCP between
  /// them; mpirun reaches hosts other than this one with ssh. A hostfile
  /// with too few slots or a host that does not resolve is refused here,
  /// in one line, before mpirun could print its own banners.
  static std::vector<std::string>
  mpirunCommand(int ranks, const std::string &dir,
                const std::string &hostfile = "");
  /// The environment mpirun needs here (running as root is allowed).
  static void prepareMpirunEnvironment();
  /// How long mpirun has to stop the ranks after a signal before what is
  /// left is killed.
  static constexpr std::chrono::milliseconds kMpirunGrace{5000};

private:
  std::unique_ptr<MpiSession> session;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_MPITRAINING_H
