//===- StepTrace.h - what each stream of a rank did in one step -*- C++ -*-===//
//
// A timeline of one step on one rank: every instruction the compute stream
// ran and every collective the communication stream ran, with start and end
// times relative to the start of the step. It is what shows whether
// communication overlaps compute (zero-run --trace, nn.Graph.trace_step).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_EXEC_STEPTRACE_H
#define ZEROSBP_RUNTIME_EXEC_STEPTRACE_H

#include <cstdint>
#include <string>
#include <vector>

namespace zerosbp::runtime {

enum class TraceStream { Compute, Comm };

struct TraceEvent {
  TraceStream stream = TraceStream::Compute;
  /// The plan op (`nn.matmul`, `collective_wait`) or, on the communication
  /// stream, the collective's kind (`reduce_scatter`).
  std::string name;
  /// forward, backward, optimizer, wait (compute blocked on a bucket) or
  /// collective (on the communication stream).
  std::string category;
  /// The collective's bucket, or -1.
  int bucket = -1;
  double beginUs = 0;
  double endUs = 0;
};

using StepTrace = std::vector<TraceEvent>;

/// The Chrome trace-event JSON (chrome://tracing, Perfetto) of one step on
/// several ranks: one process per rank, one thread per stream.
std::string
chromeTraceJson(const std::vector<std::pair<int, StepTrace>> &ranks);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_EXEC_STEPTRACE_H
