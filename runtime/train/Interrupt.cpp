//===- Interrupt.cpp - stopping a run on SIGINT or SIGTERM ----------------===//
//
// The handlers only write the signal to a pipe (async-signal-safe); a
// thread reads it, records it and calls the hooks, then waits for a second
// signal or the end of the grace period.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Interrupt.h"

#include "runtime/core/Error.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace zerosbp::runtime {

namespace {

std::atomic<int> pendingSignal{0};
int pipeFds[2] = {-1, -1};
std::mutex hooksMutex;
// Never destroyed: the signal thread may use it while the process exits.
auto *callbacks = new std::vector<std::function<void(int)> *>;

extern "C" void onInterruptSignal(int signal) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  (void)!::write(pipeFds[1], &byte, 1);
  errno = saved;
}

/// Reads the signal byte; -1 on timeout (`timeoutMs` >= 0) or error.
int readSignal(int timeoutMs) {
  pollfd entry{pipeFds[0], POLLIN, 0};
  while (true) {
    int ready = ::poll(&entry, 1, timeoutMs);
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      return -1;
    unsigned char byte = 0;
    if (::read(pipeFds[0], &byte, 1) == 1)
      return byte;
  }
}

void dieNow(const std::string &line, int signal) {
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  ::_exit(128 + signal);
}

} // namespace

std::string signalName(int signal) {
  if (signal == SIGINT)
    return "SIGINT";
  if (signal == SIGTERM)
    return "SIGTERM";
  if (signal == SIGKILL)
    return "SIGKILL";
  return "signal " + std::to_string(signal);
}

void catchInterrupts(const std::string &program,
                     std::chrono::milliseconds grace) {
  if (::pipe2(pipeFds, O_CLOEXEC) != 0)
    throw RuntimeError(std::string("cannot create a pipe (") +
                       std::strerror(errno) + ")");
  struct sigaction action {};
  action.sa_handler = onInterruptSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  std::thread([program, grace] {
    int signal = readSignal(-1);
    if (signal < 0)
      return;
    {
      std::lock_guard<std::mutex> lock(hooksMutex);
      pendingSignal.store(signal);
      for (std::function<void(int)> *callback : *callbacks)
        (*callback)(signal);
    }
    std::string prefix =
        program + ": interrupted by " + signalName(signal) + "; ";
    int again = readSignal(static_cast<int>(grace.count()));
    if (again >= 0)
      dieNow(prefix + "a second " + signalName(again) + ": exiting at once\n",
             signal);
    dieNow(prefix + "still running after " +
               std::to_string(grace.count() / 1000) + " s: exiting at once\n",
           signal);
  }).detach();
}

int interruptSignal() { return pendingSignal.load(); }

void throwIfInterrupted() {
  if (int signal = pendingSignal.load())
    throw RuntimeError("interrupted by " + signalName(signal));
}

InterruptHook::InterruptHook(std::function<void(int)> onInterrupt)
    : onInterrupt(std::move(onInterrupt)) {
  std::lock_guard<std::mutex> lock(hooksMutex);
  callbacks->push_back(&this->onInterrupt);
  if (int signal = pendingSignal.load())
    this->onInterrupt(signal);
}

InterruptHook::~InterruptHook() {
  std::lock_guard<std::mutex> lock(hooksMutex);
  for (auto it = callbacks->begin(); it != callbacks->end(); ++it)
    if (*it == &onInterrupt) {
      callbacks->erase(it);
      break;
    }
}

} // namespace zerosbp::runtime
