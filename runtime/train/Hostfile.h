//===- Hostfile.h - OpenMPI hostfiles and where ranks land ------*- C++ -*-===//
//
// Runs across machines start mpirun with a hostfile (OpenMPI's format:
// `host slots=N` per line). Ranks are placed by slot, as mpirun's default
// `--map-by slot` does: the first host's slots take the first ranks. A plan
// on a 2-D placement [nodes, m] wants every group of m consecutive ranks on
// one host, so that axis 1's collectives stay within a machine
// (docs/runtime.md#many-machines).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TRAIN_HOSTFILE_H
#define ZEROSBP_RUNTIME_TRAIN_HOSTFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zerosbp::runtime {

struct HostSlots {
  std::string host;
  int64_t slots = 1;
  /// The hostfile line that names it (1-based).
  int line = 0;
};

/// The hosts of an OpenMPI hostfile's text, in order. `#` starts a comment;
/// a line is `host [slots=N] [max_slots=M]` (slots defaults to 1). Throws
/// RuntimeError "<path>:<line>: <what>" for anything else.
std::vector<HostSlots> parseHostfile(const std::string &text,
                                     const std::string &path);
/// parseHostfile of the file at `path`, which must be a regular file of at
/// most kMaxHostfileBytes (runtime/io/InputFile.h).
std::vector<HostSlots> readHostfile(const std::string &path);

/// Throws RuntimeError "<path>:<line>: cannot resolve host 'H' (<reason>)"
/// for the first host that getaddrinfo cannot resolve.
void checkHostsResolve(const std::vector<HostSlots> &hosts,
                       const std::string &path);

/// The host index of each of `ranks` ranks, filled slot by slot; throws
/// when the hosts have fewer slots than ranks.
std::vector<int> ranksToHosts(const std::vector<HostSlots> &hosts,
                              int64_t ranks, const std::string &path);

/// Why a plan's groups of `groupSize` consecutive ranks (the inner axis of
/// its placement) do not each sit on one host, or nothing when they do.
std::optional<std::string>
groupsAcrossHosts(const std::vector<int> &hostOf,
                  const std::vector<HostSlots> &hosts, int64_t groupSize);

/// Whether every host names this machine (localhost, 127.0.0.1 or its
/// hostname): mpirun then starts the ranks itself, without ssh.
bool hostsAreLocal(const std::vector<HostSlots> &hosts);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_HOSTFILE_H
