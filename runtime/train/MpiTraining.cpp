//===- MpiTraining.cpp - one rank per process under mpirun ----------------===//

#include "runtime/train/MpiTraining.h"

#include "runtime/comm/MpiComm.h"
#include "runtime/core/Error.h"
#include "runtime/train/Hostfile.h"
#include "runtime/train/Interrupt.h"
#include "runtime/train/MpirunSupervisor.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

namespace zerosbp::runtime {

MpiTraining::MpiTraining(double timeoutSeconds)
    : session(std::make_unique<MpiSession>(
          nullptr, nullptr,
          std::chrono::milliseconds(
              static_cast<int64_t>(timeoutSeconds * 1000)))) {}
MpiTraining::~MpiTraining() = default;

int MpiTraining::rank() const { return session->rank(); }
int MpiTraining::size() const { return session->size(); }

bool MpiTraining::launchedByMpirun() { return MpiSession::launchedByMpirun(); }

TrainResult MpiTraining::train(const Plan &plan, const TrainOptions &options,
                               std::ostream &progress) {
  std::unique_ptr<Communicator> comm = session->communicator();
  // Records for the report travel outside the communicator, so that they
  // are not counted as training traffic.
  auto gather = [&](const std::vector<double> &mine) {
    return session->gatherRecords(
        mine, std::chrono::milliseconds(
                  static_cast<int64_t>(options.timeoutSeconds * 1000)));
  };
  try {
    return trainOneRank(plan, options, *comm, gather, progress);
  } catch (const std::exception &error) {
    comm->abort(error.what()); // Ends every rank; does not return.
    throw;
  }
}

std::vector<std::string>
MpiTraining::mpirunCommand(int ranks, const std::string &dir,
                           const std::string &hostfile) {
  if (!hostfile.empty()) {
    std::vector<HostSlots> hosts = readHostfile(hostfile);
    ranksToHosts(hosts, ranks, hostfile); // Enough slots, or one line.
    checkHostsResolve(hosts, hostfile);
    // Slots are what the hostfile gives: no oversubscription. Shared memory
    // within a host, TCP between hosts; no cross-memory attach (containers
    // refuse its ptrace). mpirun starts ranks on other hosts with ssh, so
    // `plm isolated` stays only when every host is this one.
    std::vector<std::string> command = {"mpirun",
                                        "-n",
                                        std::to_string(ranks),
                                        "--hostfile",
                                        hostfile,
                                        "--map-by",
                                        "slot",
                                        "--bind-to",
                                        "none",
                                        "--mca",
                                        "btl",
                                        "self,vader,tcp",
                                        "--mca",
                                        "pml",
                                        "ob1",
                                        "--mca",
                                        "btl_vader_single_copy_mechanism",
                                        "none"};
    if (hostsAreLocal(hosts))
      for (const char *word : {"--mca", "plm", "isolated"})
        command.push_back(word);
    for (const char *flag :
         {"orte_tmpdir_base", "btl_vader_backing_directory"}) {
      command.push_back("--mca");
      command.push_back(flag);
      command.push_back(dir);
    }
    return command;
  }
  // One machine (runs across machines start mpirun themselves, with a
  // hostfile): shared memory between the ranks, no core binding, no ssh,
  // and no cross-memory attach (containers refuse its ptrace). The same
  // flags as runtime/comm/mpirun_flags.sh, which explains each.
  std::vector<std::string> command = {"mpirun",
                                      "-n",
                                      std::to_string(ranks),
                                      "--oversubscribe",
                                      "--bind-to",
                                      "none",
                                      "--mca",
                                      "btl",
                                      "self,vader",
                                      "--mca",
                                      "pml",
                                      "ob1",
                                      "--mca",
                                      "btl_vader_single_copy_mechanism",
                                      "none",
                                      "--mca",
                                      "plm",
                                      "isolated"};
  // A private session directory and shared-memory backing directory: jobs
  // started at the same time in PID namespaces (test sandboxes) can get the
  // same job id, and OpenMPI names its segments after it.
  for (const char *flag : {"orte_tmpdir_base", "btl_vader_backing_directory"}) {
    command.push_back("--mca");
    command.push_back(flag);
    command.push_back(dir);
  }
  return command;
}

void MpiTraining::prepareMpirunEnvironment() {
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  setenv("OMPI_MCA_btl_base_warn_component_unused", "0", 1);
}

int MpiTraining::relaunchUnderMpirun(int argc, char **argv, int ranks,
                                     const std::string &hostfile) {
  prepareMpirunEnvironment();
  char session[] = "/tmp/zerosbp-mpi.XXXXXX";
  if (!mkdtemp(session))
    throw RuntimeError("cannot create a directory for mpirun under /tmp");
  std::vector<std::string> command;
  try {
    command = mpirunCommand(ranks, session, hostfile);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(session, ignored);
    throw;
  }
  // /proc/self/exe: the same binary, wherever it was started from.
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  command.push_back(length > 0 ? std::string(self, length)
                               : std::string(argv[0]));
  for (int i = 1; i < argc; ++i)
    command.push_back(argv[i]);
  // A signal is forwarded to mpirun, and no rank outlives it
  // (docs/runtime.md#signals); the session directory goes in every case.
  MpirunOutcome outcome;
  try {
    outcome = superviseMpirun(command, kMpirunGrace);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(session, ignored);
    throw;
  }
  std::error_code ignored;
  std::filesystem::remove_all(session, ignored);
  if (outcome.signal) {
    std::cerr << "zero-run: interrupted by " << signalName(outcome.signal)
              << std::endl;
    if (outcome.killed)
      std::cerr << "zero-run: killed " << outcome.killed
                << " process(es) still running " << kMpirunGrace.count() / 1000
                << " s after it" << std::endl;
  } else if (outcome.mpirunSignal) {
    std::cerr << "zero-run: mpirun was killed by "
              << signalName(outcome.mpirunSignal) << "; stopped its ranks"
              << std::endl;
  }
  return outcome.status;
}

} // namespace zerosbp::runtime
