//===- CommStream.h - a rank's communication stream -------------*- C++ -*-===//
//
// A thread that runs a rank's collectives in the order they are started,
// so that they overlap with the compute stream (the executor's thread). The
// order of starts is the same on every rank, so collectives match up. A
// failed collective fails its wait and every collective after it.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_COMMSTREAM_H
#define ZEROSBP_RUNTIME_EXEC_COMMSTREAM_H

#include "runtime/exec/StepTrace.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zerosbp::runtime {

class CommStream {
public:
  explicit CommStream(int numBuckets);
  ~CommStream();

  /// Queues `work` as bucket `bucket`; `name` labels it in a trace. The
  /// bucket counts as not run until it has run again.
  void start(int bucket, std::function<void()> work, std::string name = "");
  /// Blocks until bucket `bucket` has run since it was last started;
  /// rethrows its failure.
  void wait(int bucket);
  /// Forgets completed buckets: called between steps.
  void reset();
  /// Nanoseconds the stream spent running collectives since the last call.
  int64_t takeBusyNanos();
  /// Records every collective run from now on, times relative to `origin`.
  void beginTrace(std::chrono::steady_clock::time_point origin);
  /// Stops recording and returns the events (call once every started
  /// collective has been waited for).
  StepTrace endTrace();

private:
  void loop();

  std::mutex mutex;
  std::condition_variable changed;
  struct Work {
    int bucket;
    std::function<void()> run;
    std::string name;
  };
  std::deque<Work> queue;
  std::vector<char> done;
  std::exception_ptr failure;
  int64_t busyNanos = 0;
  bool stopping = false;
  bool tracing = false;
  std::chrono::steady_clock::time_point traceOrigin;
  StepTrace trace;
  std::thread worker;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_COMMSTREAM_H
