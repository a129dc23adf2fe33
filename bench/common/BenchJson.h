//===- BenchJson.h - JSON results of the C++ benchmarks ---------*- C++ -*-===//
//
// The C++ benchmarks write the same JSON as the Python ones
// (bench/common/bench_report.py): the benchmark's name, the date, the
// machine, its settings and one object per table row, keys in column order
// and times rounded as the table rounds them.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_BENCH_COMMON_BENCHJSON_H
#define ZEROSBP_BENCH_COMMON_BENCHJSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::bench {

/// A flat JSON object whose keys keep the order they were added in.
class JsonFields {
public:
  JsonFields &add(llvm::StringRef key, int64_t value);
  /// A number with `decimals` digits after the point.
  JsonFields &add(llvm::StringRef key, double value, int decimals);
  JsonFields &add(llvm::StringRef key, llvm::StringRef value);

  /// (key, value as JSON text) pairs.
  const std::vector<std::pair<std::string, std::string>> &fields() const {
    return entries;
  }

private:
  std::vector<std::pair<std::string, std::string>> entries;
};

/// Writes {benchmark, date, machine, settings, rows} to `path`; the machine
/// is this one's CPU model, core count, memory and load average.
llvm::Error writeBenchJson(llvm::StringRef path, llvm::StringRef benchmark,
                           const JsonFields &settings,
                           const std::vector<JsonFields> &rows);

} // namespace zerosbp::bench

#endif // ZEROSBP_BENCH_COMMON_BENCHJSON_H
