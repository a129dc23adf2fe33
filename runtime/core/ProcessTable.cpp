//===- ProcessTable.cpp - this host's processes, from /proc ---------------===//

#include "runtime/core/ProcessTable.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace zerosbp::runtime {

std::string readProcessFile(pid_t pid, const std::string &name) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/" + name,
                     std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
}

std::vector<ProcessEntry> listProcesses() {
  std::vector<ProcessEntry> processes;
  DIR *proc = ::opendir("/proc");
  if (!proc)
    return processes;
  while (dirent *entry = ::readdir(proc)) {
    char *end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0')
      continue;
    std::string stat = readProcessFile(static_cast<pid_t>(pid), "stat");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    size_t close = stat.rfind(')');
    char state = 0;
    long parent = 0;
    if (close == std::string::npos ||
        std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &parent) != 2)
      continue;
    processes.push_back(
        {static_cast<pid_t>(pid), state, static_cast<pid_t>(parent)});
  }
  ::closedir(proc);
  return processes;
}

} // namespace zerosbp::runtime
