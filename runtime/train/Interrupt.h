//===- Interrupt.h - stopping a run on SIGINT or SIGTERM --------*- C++ -*-===//
//
// zero-run in process stops on SIGINT or SIGTERM: the ranks leave their
// collectives (hooks fail the in-process world) and the step loop stops
// between two steps, so that nothing is written after the signal; the
// command then exits 128 + the signal (docs/runtime.md#signals). A second
// signal, or a run still going after the grace period, ends the process at
// once; every file is written under a temporary name and renamed
// (runtime/io/DurableFile.h), so even then none is left half written.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TRAIN_INTERRUPT_H
#define ZEROSBP_RUNTIME_TRAIN_INTERRUPT_H

#include <chrono>
#include <functional>
#include <string>

namespace zerosbp::runtime {

/// Catches SIGINT and SIGTERM from now on, for `program` (the messages'
/// prefix): the first sets interruptSignal() and calls the hooks; a second,
/// or `grace` without the process exiting, prints one line and _exits with
/// 128 + the signal.
void catchInterrupts(const std::string &program,
                     std::chrono::milliseconds grace);

/// The signal that asked this process to stop, or 0.
int interruptSignal();

/// Throws RuntimeError("interrupted by SIGTERM") once a signal has come.
void throwIfInterrupted();

/// "SIGINT", "SIGTERM", "SIGKILL", else "signal N".
std::string signalName(int signal);

/// Calls `onInterrupt(signal)`, on the thread that handles signals, when
/// one comes while it lives (at once if one already has).
class InterruptHook {
public:
  explicit InterruptHook(std::function<void(int)> onInterrupt);
  ~InterruptHook();
  InterruptHook(const InterruptHook &) = delete;
  InterruptHook &operator=(const InterruptHook &) = delete;

private:
  std::function<void(int)> onInterrupt;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_INTERRUPT_H
