//===- StepTrace.cpp - Chrome trace-event JSON of a step ------------------===//

#include "runtime/exec/StepTrace.h"

#include <nlohmann/json.hpp>

namespace zerosbp::runtime {

std::string
chromeTraceJson(const std::vector<std::pair<int, StepTrace>> &ranks) {
  using Json = nlohmann::ordered_json;
  Json events = Json::array();
  for (const auto &[rank, trace] : ranks) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    for (int tid : {0, 1})
      events.push_back(
          {{"name", "thread_name"},
           {"ph", "M"},
           {"pid", rank},
           {"tid", tid},
           {"args", {{"name", tid == 0 ? "compute" : "communication"}}}});
    for (const TraceEvent &event : trace) {
      Json entry = {{"name", event.name},
                    {"cat", event.category},
                    {"ph", "X"},
                    {"pid", rank},
                    {"tid", event.stream == TraceStream::Compute ? 0 : 1},
                    {"ts", event.beginUs},
                    {"dur", event.endUs - event.beginUs}};
      if (event.bucket >= 0)
        entry["args"] = {{"bucket", event.bucket}};
      events.push_back(std::move(entry));
    }
  }
  return Json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

} // namespace zerosbp::runtime
