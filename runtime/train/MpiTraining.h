//===- MpiTraining.h - one rank per process under mpirun --------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_TRAIN_MPITRAINING_H
#define ZEROSBP_RUNTIME_TRAIN_MPITRAINING_H

#include "runtime/train/Trainer.h"

#include <memory>
#include <ostream>

namespace zerosbp::runtime {

class MpiSession;

/// This process's rank of an MPI run. A failure on any rank aborts the
/// whole job with a message naming that rank.
class MpiTraining {
public:
  MpiTraining();
  ~MpiTraining();

  int rank() const;
  int size() const;
  /// Trains; only rank 0's result holds every rank's records.
  TrainResult train(const Plan &plan, const TrainOptions &options,
                    std::ostream &progress);

  static bool launchedByMpirun();
  /// Runs `mpirun -n ranks <this command>` and returns its exit status.
  static int relaunchUnderMpirun(int argc, char **argv, int ranks);

private:
  std::unique_ptr<MpiSession> session;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_MPITRAINING_H
