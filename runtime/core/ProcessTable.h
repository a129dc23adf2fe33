//===- ProcessTable.h - this host's processes, from /proc -------*- C++ -*-===//
//
// What the launchers and the MPI start-up watchdog read of other processes
// (the ranks mpirun started, the descendants to stop): each process's
// state and parent, and a process's own /proc files.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CORE_PROCESSTABLE_H
#define ZEROSBP_RUNTIME_CORE_PROCESSTABLE_H

#include <sys/types.h>

#include <string>
#include <vector>

namespace zerosbp::runtime {

struct ProcessEntry {
  pid_t pid = 0;
  /// /proc/PID/stat's state letter: 'R', 'S', 'T' (stopped), 'Z' ...
  char state = 0;
  pid_t parent = 0;
};

/// Every process of /proc that could be read; one that exits while it is
/// read is left out.
std::vector<ProcessEntry> listProcesses();

/// /proc/`pid`/`name`, whole ("" when it cannot be read).
std::string readProcessFile(pid_t pid, const std::string &name);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CORE_PROCESSTABLE_H
