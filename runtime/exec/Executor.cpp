//===- Executor.cpp - executors by device name ----------------------------===//

#include "runtime/exec/Executor.h"

#include "runtime/core/Error.h"
#include "runtime/exec/Distribution.h"
#include "runtime/exec/RankExecutor.h"

#include <map>
#include <mutex>

namespace zerosbp::runtime {

void Executor::initializeVariables(
    const std::function<std::vector<double>(const PlanVariable &)>
        &modelValues) {
  const Plan &thePlan = plan();
  for (size_t i = 0; i < thePlan.variables.size(); ++i) {
    const PlanVariable &variable = thePlan.variables[i];
    // Another pipeline stage's variable: its bytes here are not its own.
    if (!thePlan.holds(variable, rank()))
      continue;
    writeVariable(static_cast<int>(i),
                  shardOf(variable, rank(), modelValues(variable)));
  }
}

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, ExecutorFactory> factories;
  Registry() {
    factories["cpu"] = [](const Plan &plan, int rank, Communicator &comm) {
      return std::unique_ptr<Executor>(
          std::make_unique<RankExecutor>(plan, rank, comm));
    };
  }
};

Registry &registry() {
  static Registry instance;
  return instance;
}

} // namespace

bool registerExecutor(const std::string &device, ExecutorFactory factory) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[device] = std::move(factory);
  return true;
}

const ExecutorFactory &findExecutor(const std::string &device) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.factories.find(device);
  if (found != r.factories.end())
    return found->second;
  if (device == "cuda")
    throw RuntimeError("device cuda: this binary was built without CUDA (no "
                       "CUDA toolkit at /usr/local/cuda when it was built)");
  std::string known;
  for (const auto &entry : r.factories)
    known += (known.empty() ? "" : ", ") + entry.first;
  throw RuntimeError("unknown device '" + device + "' (this binary runs on " +
                     known + ")");
}

std::vector<std::string> executorDevices() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> devices = {"cpu"};
  for (const auto &entry : r.factories)
    if (entry.first != "cpu")
      devices.push_back(entry.first);
  return devices;
}

} // namespace zerosbp::runtime
