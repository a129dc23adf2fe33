//===- CommStream.cpp - a rank's communication stream ---------------------===//

#include "runtime/exec/CommStream.h"

#include <chrono>

namespace zerosbp::runtime {

CommStream::CommStream(int numBuckets)
    : done(numBuckets, 0), worker([this] { loop(); }) {}

CommStream::~CommStream() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  worker.join();
}

void CommStream::start(int bucket, std::function<void()> work,
                       std::string name) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    done[bucket] = 0;
    queue.push_back({bucket, std::move(work), std::move(name)});
  }
  changed.notify_all();
}

void CommStream::wait(int bucket) {
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait(lock, [&] { return done[bucket] || failure; });
  if (failure)
    std::rethrow_exception(failure);
}

void CommStream::reset() {
  std::lock_guard<std::mutex> lock(mutex);
  std::fill(done.begin(), done.end(), 0);
}

int64_t CommStream::takeBusyNanos() {
  std::lock_guard<std::mutex> lock(mutex);
  int64_t result = busyNanos;
  busyNanos = 0;
  return result;
}

void CommStream::beginTrace(std::chrono::steady_clock::time_point origin) {
  std::lock_guard<std::mutex> lock(mutex);
  tracing = true;
  traceOrigin = origin;
  trace.clear();
}

StepTrace CommStream::endTrace() {
  std::lock_guard<std::mutex> lock(mutex);
  tracing = false;
  return std::move(trace);
}

void CommStream::loop() {
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    changed.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty())
      return; // Stopping with nothing left to run.
    Work work = std::move(queue.front());
    queue.pop_front();
    if (failure) // After a failure nothing else runs.
      continue;
    lock.unlock();
    auto begin = std::chrono::steady_clock::now();
    std::exception_ptr error;
    try {
      work.run();
    } catch (...) {
      error = std::current_exception();
    }
    auto end = std::chrono::steady_clock::now();
    lock.lock();
    busyNanos +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin)
            .count();
    if (tracing) {
      auto micros = [&](std::chrono::steady_clock::time_point at) {
        return std::chrono::duration<double, std::micro>(at - traceOrigin)
            .count();
      };
      trace.push_back({TraceStream::Comm, work.name, "collective", work.bucket,
                       micros(begin), micros(end)});
    }
    if (error)
      failure = error;
    else
      done[work.bucket] = 1;
    changed.notify_all();
  }
}

} // namespace zerosbp::runtime
