//===- MpirunSupervisor.cpp - runs mpirun and ends all it started ---------===//
//
// Signals reach the loop through a pipe written by async-signal-safe
// handlers (sigaction, not sigwait: threads this process did not start,
// OpenBLAS's among them, do not block them). The loop reaps children,
// forwards the first SIGINT or SIGTERM to mpirun and kills what is left
// when the grace period ends. As a child subreaper this process inherits
// ranks whose mpirun died, so they can be ended and reaped as well.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/MpirunSupervisor.h"

#include "runtime/core/Error.h"
#include "runtime/core/ProcessTable.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <optional>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace zerosbp::runtime {

namespace {

using Clock = std::chrono::steady_clock;

int wakeFd = -1; // The pipe's write end while a supervisor runs.

extern "C" void onSignal(int signal) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  if (wakeFd >= 0)
    (void)!::write(wakeFd, &byte, 1);
  errno = saved;
}

/// Every process below `root` (children, their children, ...) that has not
/// exited yet, read from /proc.
std::vector<pid_t> descendantsOf(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  std::map<pid_t, char> states;
  for (const ProcessEntry &process : listProcesses()) {
    children.emplace(process.parent, process.pid);
    states[process.pid] = process.state;
  }
  std::vector<pid_t> found;
  std::vector<pid_t> queue = {root};
  while (!queue.empty()) {
    pid_t parent = queue.back();
    queue.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      if (states[it->second] != 'Z') // A zombie only waits to be reaped.
        found.push_back(it->second);
      queue.push_back(it->second);
    }
  }
  return found;
}

/// Sends `signal` to every descendant of this process; returns how many.
int signalDescendants(int signal) {
  int count = 0;
  for (pid_t pid : descendantsOf(::getpid()))
    if (::kill(pid, signal) == 0)
      ++count;
  return count;
}

/// Installs onSignal for SIGINT, SIGTERM and SIGCHLD and a child subreaper
/// flag; restores the previous state on destruction.
class SignalScope {
public:
  SignalScope() {
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
      throw RuntimeError(std::string("cannot create a pipe (") +
                         std::strerror(errno) + ")");
    wakeFd = fds[1];
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int i = 0; i < 3; ++i) {
      struct sigaction mine = action;
      if (kSignals[i] == SIGCHLD)
        mine.sa_flags |= SA_NOCLDSTOP;
      ::sigaction(kSignals[i], &mine, &previous[i]);
    }
    ::prctl(PR_GET_CHILD_SUBREAPER, &wasSubreaper);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  ~SignalScope() {
    ::prctl(PR_SET_CHILD_SUBREAPER, wasSubreaper);
    for (int i = 0; i < 3; ++i)
      ::sigaction(kSignals[i], &previous[i], nullptr);
    wakeFd = -1;
    ::close(fds[0]);
    ::close(fds[1]);
  }
  SignalScope(const SignalScope &) = delete;
  SignalScope &operator=(const SignalScope &) = delete;

  /// Waits up to `timeout` for a signal; returns the signals that came.
  std::vector<int> wait(std::chrono::milliseconds timeout) {
    pollfd entry{fds[0], POLLIN, 0};
    ::poll(&entry, 1, static_cast<int>(timeout.count()));
    std::vector<int> signals;
    unsigned char bytes[64];
    ssize_t got;
    while ((got = ::read(fds[0], bytes, sizeof(bytes))) > 0)
      signals.insert(signals.end(), bytes, bytes + got);
    return signals;
  }

  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGCHLD};

private:
  int fds[2] = {-1, -1};
  struct sigaction previous[3];
  int wasSubreaper = 0;
};

} // namespace

MpirunOutcome superviseMpirun(const std::vector<std::string> &command,
                              std::chrono::milliseconds grace) {
  std::vector<std::string> words = command;
  std::vector<char *> argv;
  for (std::string &word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);

  SignalScope scope;
  pid_t self = ::getpid();
  pid_t mpirun = ::fork();
  if (mpirun < 0)
    throw RuntimeError(std::string("cannot start mpirun (") +
                       std::strerror(errno) + ")");
  if (mpirun == 0) {
    for (int signal : SignalScope::kSignals)
      ::signal(signal, SIG_DFL);
    // Should this process die without forwarding a signal (SIGKILL), mpirun
    // gets SIGTERM and stops the ranks as it does for a forwarded one.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != self)
      ::_exit(128 + SIGTERM); // Already gone.
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }

  MpirunOutcome outcome;
  std::optional<int> mpirunStatus;
  // When what still runs is killed: set by a signal, or by mpirun's exit
  // with processes left behind.
  std::optional<Clock::time_point> killAt;
  while (true) {
    // Reap mpirun and whatever this process adopted.
    bool childrenLeft = true;
    while (true) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid == mpirun)
        mpirunStatus = status;
      if (pid > 0)
        continue;
      childrenLeft = !(pid < 0 && errno == ECHILD);
      break;
    }
    if (mpirunStatus && !childrenLeft)
      break;
    if (mpirunStatus && !killAt) {
      // mpirun ended but processes it started did not: they are orphans.
      signalDescendants(SIGCONT);
      signalDescendants(SIGTERM);
      killAt = Clock::now() + grace;
    }
    if (killAt && Clock::now() >= *killAt) {
      outcome.killed += signalDescendants(SIGKILL);
      killAt = Clock::now() + std::chrono::seconds(1); // Again if need be.
    }
    for (int signal : scope.wait(std::chrono::milliseconds(100))) {
      if (signal != SIGINT && signal != SIGTERM)
        continue;
      if (!outcome.signal) {
        outcome.signal = signal;
        if (!mpirunStatus)
          ::kill(mpirun, signal); // mpirun stops the ranks.
        if (!killAt || *killAt > Clock::now() + grace)
          killAt = Clock::now() + grace;
      } else {
        killAt = Clock::now(); // A second signal: no more waiting.
      }
    }
  }
  if (outcome.signal) {
    outcome.status = 128 + outcome.signal;
  } else if (WIFEXITED(*mpirunStatus)) {
    outcome.status = WEXITSTATUS(*mpirunStatus);
    if (outcome.status == 127)
      throw RuntimeError("cannot run mpirun (install openmpi-bin)");
  } else {
    outcome.status = 1;
    outcome.mpirunSignal = WTERMSIG(*mpirunStatus);
  }
  return outcome;
}

} // namespace zerosbp::runtime
