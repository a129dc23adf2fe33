//===- LocalRanks.cpp - an MPI job's ranks on this host -------------------===//

#include "runtime/comm/LocalRanks.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace zerosbp::runtime {

namespace {

/// A file of /proc, whole ("" when it cannot be read).
std::string readProcFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
}

} // namespace

std::vector<int> localRanksNotInMpiInit(int me) {
  const char *job = std::getenv("OMPI_MCA_ess_base_jobid");
  if (!job)
    return {};
  std::string jobEntry = std::string("OMPI_MCA_ess_base_jobid=") + job;
  long parent = static_cast<long>(::getppid());
  std::set<int> stopped, notBegun;
  if (DIR *proc = ::opendir("/proc")) {
    while (dirent *entry = ::readdir(proc)) {
      char *end = nullptr;
      long pid = std::strtol(entry->d_name, &end, 10);
      if (pid <= 0 || *end != '\0')
        continue;
      std::string dir = std::string("/proc/") + entry->d_name;
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      std::string stat = readProcFile(dir + "/stat");
      size_t close = stat.rfind(')');
      char state = 0;
      long ppid = 0;
      if (close == std::string::npos ||
          std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) !=
              2 ||
          ppid != parent)
        continue;
      std::string environment = readProcFile(dir + "/environ");
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
      if (state == 'T' || state == 't') {
        stopped.insert(rank);
        continue;
      }
      bool begun = false;
      if (DIR *tasks = ::opendir((dir + "/task").c_str())) {
        while (dirent *task = ::readdir(tasks))
          if (task->d_name[0] != '.' &&
              readProcFile(dir + "/task/" + task->d_name + "/comm") ==
                  std::string(kMpiWatchdogThreadName) + "\n")
            begun = true;
        ::closedir(tasks);
      }
      if (!begun)
        notBegun.insert(rank);
    }
    ::closedir(proc);
  }
  const std::set<int> &named = stopped.empty() ? notBegun : stopped;
  return std::vector<int>(named.begin(), named.end());
}

} // namespace zerosbp::runtime
