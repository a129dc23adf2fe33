//===- LocalRanks.cpp - an MPI job's ranks on this host -------------------===//

#include "runtime/comm/LocalRanks.h"

#include "runtime/core/ProcessTable.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

namespace zerosbp::runtime {

std::vector<int> localRanksNotInMpiInit(int me) {
  const char *job = std::getenv("OMPI_MCA_ess_base_jobid");
  if (!job)
    return {};
  std::string jobEntry = std::string("OMPI_MCA_ess_base_jobid=") + job;
  pid_t parent = ::getppid();
  std::set<int> stopped, notBegun;
  for (const ProcessEntry &process : listProcesses()) {
    if (process.parent != parent)
      continue;
    std::string environment = readProcessFile(process.pid, "environ");
    int rank = -1;
    bool sameJob = false;
    for (size_t at = 0; at < environment.size();) {
      size_t next = environment.find('\0', at);
      std::string variable = environment.substr(
          at, next == std::string::npos ? std::string::npos : next - at);
      if (variable == jobEntry)
        sameJob = true;
      else if (variable.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0)
        rank = std::atoi(variable.c_str() + 21);
      at = next == std::string::npos ? environment.size() : next + 1;
    }
    if (!sameJob || rank < 0 || rank == me)
      continue;
    if (process.state == 'T' || process.state == 't') {
      stopped.insert(rank);
      continue;
    }
    bool begun = false;
    std::string tasks = "/proc/" + std::to_string(process.pid) + "/task";
    if (DIR *dir = ::opendir(tasks.c_str())) {
      while (dirent *task = ::readdir(dir))
        if (task->d_name[0] != '.' &&
            readProcessFile(process.pid,
                            std::string("task/") + task->d_name + "/comm") ==
                std::string(kMpiWatchdogThreadName) + "\n")
          begun = true;
      ::closedir(dir);
    }
    if (!begun)
      notBegun.insert(rank);
  }
  const std::set<int> &named = stopped.empty() ? notBegun : stopped;
  return std::vector<int>(named.begin(), named.end());
}

} // namespace zerosbp::runtime
