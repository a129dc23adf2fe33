//===- Hostfile.cpp - OpenMPI hostfiles and where ranks land --------------===//

#include "runtime/train/Hostfile.h"

#include "runtime/core/Error.h"
#include "runtime/io/InputFile.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace zerosbp::runtime {

namespace {

/// The value of `key=VALUE` as a positive count, or an error naming it.
int64_t parseCount(const std::string &word, size_t equals,
                   const std::string &where) {
  std::string text = word.substr(equals + 1);
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 ||
      value > (int64_t(1) << 20))
    throw RuntimeError(where + ": " + word.substr(0, equals) +
                       ": expected an integer in [1, 1048576], got '" + text +
                       "'");
  return value;
}

} // namespace

std::vector<HostSlots> parseHostfile(const std::string &text,
                                     const std::string &path) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string word;
    if (!(words >> word))
      continue;
    std::string where = path + ":" + std::to_string(number);
    if (word.find('=') != std::string::npos)
      throw RuntimeError(where + ": expected a host name first, got '" + word +
                         "'");
    HostSlots host{word, 1, number};
    for (const HostSlots &seen : hosts)
      if (seen.host == host.host)
        throw RuntimeError(where + ": host '" + host.host +
                           "' is listed twice; give it one line with its "
                           "slots");
    while (words >> word) {
      size_t equals = word.find('=');
      std::string key = word.substr(0, equals);
      if (equals == std::string::npos || (key != "slots" && key != "max_slots"))
        throw RuntimeError(where + ": expected slots=N or max_slots=N, got '" +
                           word + "'");
      int64_t count = parseCount(word, equals, where);
      if (key == "slots")
        host.slots = count;
    }
    hosts.push_back(host);
  }
  if (hosts.empty())
    throw RuntimeError(path + ": no hosts");
  return hosts;
}

std::vector<HostSlots> readHostfile(const std::string &path) {
  return parseHostfile(readRegularFile(path, kMaxHostfileBytes, "the hostfile"),
                       path);
}

void checkHostsResolve(const std::vector<HostSlots> &hosts,
                       const std::string &path) {
  for (const HostSlots &host : hosts) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    int code = ::getaddrinfo(host.host.c_str(), nullptr, &hints, &found);
    if (code == 0) {
      ::freeaddrinfo(found);
      continue;
    }
    std::string reason =
        code == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(code);
    throw RuntimeError(path + ":" + std::to_string(host.line) +
                       ": cannot resolve host '" + host.host + "' (" + reason +
                       ")");
  }
}

std::vector<int> ranksToHosts(const std::vector<HostSlots> &hosts,
                              int64_t ranks, const std::string &path) {
  std::vector<int> hostOf;
  for (size_t h = 0; h < hosts.size() && int64_t(hostOf.size()) < ranks; ++h)
    for (int64_t s = 0; s < hosts[h].slots && int64_t(hostOf.size()) < ranks;
         ++s)
      hostOf.push_back(static_cast<int>(h));
  if (int64_t(hostOf.size()) < ranks) {
    int64_t slots = 0;
    for (const HostSlots &host : hosts)
      slots += host.slots;
    throw RuntimeError(path + ": " + std::to_string(slots) + " slot" +
                       (slots == 1 ? "" : "s") + " for " +
                       std::to_string(ranks) + " ranks");
  }
  return hostOf;
}

std::optional<std::string>
groupsAcrossHosts(const std::vector<int> &hostOf,
                  const std::vector<HostSlots> &hosts, int64_t groupSize) {
  if (groupSize <= 1)
    return std::nullopt;
  for (size_t first = 0; first < hostOf.size(); first += groupSize) {
    size_t last = std::min(hostOf.size(), first + groupSize) - 1;
    if (hostOf[first] != hostOf[last])
      return "ranks " + std::to_string(first) + "-" + std::to_string(last) +
             ", one group of the plan's inner axis (" +
             std::to_string(groupSize) + " ranks), span hosts " +
             hosts[hostOf[first]].host + " and " + hosts[hostOf[last]].host +
             "; give every host a multiple of " + std::to_string(groupSize) +
             " slots";
  }
  return std::nullopt;
}

bool hostsAreLocal(const std::vector<HostSlots> &hosts) {
  char name[HOST_NAME_MAX + 1] = {};
  gethostname(name, sizeof(name) - 1);
  for (const HostSlots &host : hosts)
    if (host.host != "localhost" && host.host != "127.0.0.1" &&
        host.host != name)
      return false;
  return true;
}

} // namespace zerosbp::runtime
