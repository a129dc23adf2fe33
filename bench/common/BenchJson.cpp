//===- BenchJson.cpp - JSON results of the C++ benchmarks -----------------===//

#include "bench/common/BenchJson.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

namespace zerosbp::bench {

JsonFields &JsonFields::add(llvm::StringRef key, int64_t value) {
  entries.emplace_back(key.str(), std::to_string(value));
  return *this;
}

JsonFields &JsonFields::add(llvm::StringRef key, double value, int decimals) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.*f", decimals, value);
  entries.emplace_back(key.str(), os.str());
  return *this;
}

JsonFields &JsonFields::add(llvm::StringRef key, llvm::StringRef value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(value.str());
  entries.emplace_back(key.str(), os.str());
  return *this;
}

// The first "key: value" line of a /proc file, or "" when there is none.
static std::string procField(const char *file, llvm::StringRef key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    auto [name, value] = llvm::StringRef(line).split(':');
    if (name.trim() == key)
      return value.trim().str();
  }
  return "";
}

static std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc;
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

static void writeFields(llvm::json::OStream &json, const JsonFields &fields) {
  json.object([&] {
    for (const auto &[key, value] : fields.fields()) {
      json.attributeBegin(key);
      json.rawValue(value);
      json.attributeEnd();
    }
  });
}

static void writeMachine(llvm::json::OStream &json) {
  std::string cpu = procField("/proc/cpuinfo", "model name");
  // MemTotal is in kB.
  long long memoryKb = 0;
  llvm::StringRef(procField("/proc/meminfo", "MemTotal"))
      .split(' ')
      .first.getAsInteger(10, memoryKb);
  double loads[3] = {0, 0, 0};
  getloadavg(loads, 3);
  json.object([&] {
    json.attribute("cpu", cpu.empty() ? "unknown" : cpu);
    json.attribute("cores",
                   static_cast<int64_t>(std::thread::hardware_concurrency()));
    json.attributeBegin("memory_gib");
    json.rawValue(llvm::formatv("{0:f1}", memoryKb / 1024.0 / 1024.0).str());
    json.attributeEnd();
    json.attributeArray("load_average", [&] {
      for (double load : loads)
        json.rawValue(llvm::formatv("{0:f2}", load).str());
    });
  });
}

llvm::Error writeBenchJson(llvm::StringRef path, llvm::StringRef benchmark,
                           const JsonFields &settings,
                           const std::vector<JsonFields> &rows) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error);
  if (error)
    return llvm::createStringError(error, "cannot write %s: %s",
                                   path.str().c_str(), error.message().c_str());
  llvm::json::OStream json(out, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("benchmark", benchmark);
    json.attribute("date", utcNow());
    json.attributeBegin("machine");
    writeMachine(json);
    json.attributeEnd();
    json.attributeBegin("settings");
    writeFields(json, settings);
    json.attributeEnd();
    json.attributeArray("rows", [&] {
      for (const JsonFields &row : rows)
        writeFields(json, row);
    });
  });
  out << "\n";
  return llvm::Error::success();
}

} // namespace zerosbp::bench
