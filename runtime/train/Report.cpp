//===- Report.cpp - the JSON report of a training run ---------------------===//

#include "runtime/train/Report.h"
#include "runtime/exec/PreparedProgram.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace zerosbp::runtime {

using Json = nlohmann::ordered_json;

namespace {

Json kindBytes(const KindBytes &bytes) {
  Json object = Json::object();
  for (int kind = 0; kind < kNumCollectiveKinds; ++kind)
    object[collectiveKindName(static_cast<CollectiveKind>(kind))] = bytes[kind];
  return object;
}

Json roleBytes(const int64_t (&bytes)[kNumRoles]) {
  Json object = Json::object();
  for (int role = 0; role < kNumRoles; ++role)
    object[roleName(static_cast<Role>(role))] = bytes[role];
  return object;
}

/// The planned peaks of the offload arena of `memory`, swept from the
/// buffers' live ranges as zero-memory-plan sweeps them.
ArenaPeaks plannedArenaPeaks(const Plan &plan, MemoryKind memory) {
  int64_t end = 0;
  for (const PlanBuffer &buffer : plan.buffers)
    end = std::max(end, buffer.liveLast + 2);
  std::vector<int64_t> total(end, 0);
  std::vector<std::vector<int64_t>> byRole(kNumRoles,
                                           std::vector<int64_t>(end, 0));
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const PlanBuffer &buffer = plan.buffers[b];
    if (plan.memoryOf(static_cast<int>(b)) != memory)
      continue;
    total[buffer.liveFirst] += buffer.bytes;
    total[buffer.liveLast + 1] -= buffer.bytes;
    byRole[static_cast<int>(buffer.role)][buffer.liveFirst] += buffer.bytes;
    byRole[static_cast<int>(buffer.role)][buffer.liveLast + 1] -= buffer.bytes;
  }
  auto peakOf = [](const std::vector<int64_t> &deltas) {
    int64_t live = 0, peak = 0;
    for (int64_t delta : deltas)
      peak = std::max(peak, live += delta);
    return peak;
  };
  ArenaPeaks peaks;
  peaks.total = peakOf(total);
  for (int role = 0; role < kNumRoles; ++role)
    peaks.byRole[role] = peakOf(byRole[role]);
  return peaks;
}

/// The bytes the plan's transfers move each step, per direction: what each
/// rank's copy stream runs once per step.
Json transferBytes(const Plan &plan) {
  int64_t toHost = 0, toDevice = 0, nvmeRead = 0, nvmeWrite = 0;
  for (const Instruction &instruction : plan.instructions) {
    if (instruction.kind != InstructionKind::TransferStart)
      continue;
    int64_t bytes = plan.values[instruction.operands[0]].bytes();
    if (instruction.from == MemoryKind::Nvme)
      nvmeRead += bytes;
    else if (instruction.to == MemoryKind::Nvme)
      nvmeWrite += bytes;
    else if (instruction.to == MemoryKind::Host)
      toHost += bytes;
    else
      toDevice += bytes;
  }
  return {{"device_to_host", toHost},
          {"host_to_device", toDevice},
          {"nvme_read", nvmeRead},
          {"nvme_write", nvmeWrite}};
}

Json arenaJson(const ArenaPeaks &peaks) {
  return {{"total", peaks.total}, {"by_role", roleBytes(peaks.byRole)}};
}

} // namespace

int64_t processStatusBytes(const std::string &key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key + ":", 0) == 0)
      return std::atoll(line.c_str() + key.size() + 1) * 1024;
  return 0;
}

std::string trainReportJson(const Plan &plan, const TrainOptions &options,
                            const TrainResult &result) {
  Json report;
  report["plan"] = options.planPath;
  report["function"] = plan.function;
  if (plan.stage)
    report["stage"] = *plan.stage;
  report["world"] = plan.world;
  report["backend"] = options.backend;
  report["device"] = runDevice(plan, options);
  report["mode"] = result.evaluation ? "eval" : "train";
  // How the steps were launched on the GPU (docs/runtime.md#the-report).
  const CudaGraphStatus &graph = result.cudaGraph;
  CudaGraphMode graphMode = options.deviceOptions.cudaGraph;
  report["cuda_graph"] = {
      {"mode", graphMode == CudaGraphMode::Off  ? "off"
               : graphMode == CudaGraphMode::On ? "on"
                                                : "auto"},
      {"used", graph.used},
      {"captured_step", graph.capturedStep},
      {"graph_steps", graph.graphSteps},
      {"reason", graph.reason.empty() ? Json(nullptr) : Json(graph.reason)}};
  report["allow_tf32"] = options.deviceOptions.allowTf32;
  // Updates and casts merged into multi-tensor launches on the GPU.
  const MultiTensorStatus &multi = result.multiTensor;
  Json runs = Json::array();
  for (const auto &[op, instructions] : multi.runs)
    runs.push_back({{"op", op}, {"instructions", instructions}});
  report["device_comm"] =
      result.deviceComm.empty() ? Json(nullptr) : Json(result.deviceComm);
  report["multi_tensor"] = {
      {"mode", options.deviceOptions.multiTensor ? "on" : "off"},
      {"applies", multi.applies},
      {"instructions", multi.instructions},
      {"launches", multi.launches},
      {"runs", runs},
      {"reason", multi.reason.empty() ? Json(nullptr) : Json(multi.reason)}};
  report["steps"] = options.steps;
  report["start_step"] = result.firstStep;
  report["losses"] = result.losses;
  // Steps whose loss was not finite and which made no update.
  report["skipped_steps"] = result.skippedSteps;
  if (options.resumeDir)
    report["resumed"] = {{"from", *options.resumeDir},
                         {"load_ms", result.loadMilliseconds},
                         {"bytes_read", result.load.bytesRead},
                         {"buffer_bytes", result.load.bufferBytes}};
  Json saved = Json::array();
  for (const SavedCheckpoint &checkpoint : result.checkpoints)
    saved.push_back({{"step", checkpoint.step},
                     {"path", checkpoint.path},
                     {"save_ms", checkpoint.milliseconds}});
  report["checkpoints"] = saved;

  int64_t steps = static_cast<int64_t>(result.losses.size());
  std::vector<double> stepMs(steps, 0.0);
  for (const RankRecord &rank : result.ranks)
    for (int64_t s = 0; s < steps && s < (int64_t)rank.times.size(); ++s)
      stepMs[s] = std::max(stepMs[s], rank.times[s].step);
  report["step_ms"] = stepMs;
  int64_t first = steps > 1 ? 1 : 0; // The first step warms caches up.
  double meanStep = 0;
  for (int64_t s = first; s < steps; ++s)
    meanStep += stepMs[s];
  meanStep = steps > first ? meanStep / (steps - first) : 0;
  report["mean_step_ms"] = meanStep;
  report["tokens_per_step"] = result.tokensPerStep;
  report["tokens_per_second"] =
      meanStep > 0 ? result.tokensPerStep / (meanStep / 1000) : 0.0;

  StepTimes sum;
  int64_t samples = 0;
  for (const RankRecord &rank : result.ranks)
    for (int64_t s = first; s < (int64_t)rank.times.size(); ++s, ++samples) {
      const StepTimes &t = rank.times[s];
      sum.forward += t.forward;
      sum.backward += t.backward;
      sum.optimizer += t.optimizer;
      sum.commWait += t.commWait;
      sum.commBusy += t.commBusy;
      sum.transferWait += t.transferWait;
      sum.transferBusy += t.transferBusy;
      sum.hostUpdate += t.hostUpdate;
      sum.hostExposed += t.hostExposed;
    }
  double scale = samples ? 1.0 / samples : 0;
  report["phase_ms"] = {{"forward", sum.forward * scale},
                        {"backward", sum.backward * scale},
                        {"optimizer", sum.optimizer * scale},
                        {"comm_wait", sum.commWait * scale},
                        {"comm_busy", sum.commBusy * scale},
                        {"transfer_wait", sum.transferWait * scale},
                        {"transfer_busy", sum.transferBusy * scale},
                        {"host_update", sum.hostUpdate * scale},
                        {"host_exposed", sum.hostExposed * scale}};
  if (HostUpdateWork work = hostUpdateWork(plan, 0); work.kernels > 0) {
    // Rank 0's offloaded updates: bytes they read and write, parameters
    // they update, against the time they took.
    double ms = 0, exposed = 0;
    int64_t counted = 0;
    if (!result.ranks.empty())
      for (int64_t s = first; s < (int64_t)result.ranks[0].times.size();
           ++s, ++counted) {
        ms += result.ranks[0].times[s].hostUpdate;
        exposed += result.ranks[0].times[s].hostExposed;
      }
    ms = counted ? ms / counted : 0;
    exposed = counted ? exposed / counted : 0;
    report["host_update"] = {
        {"kernels", work.kernels},
        {"bytes", work.bytes},
        {"params", work.params},
        {"ms", ms},
        {"gb_per_s", ms > 0 ? work.bytes / (ms * 1e6) : 0.0},
        {"exposed_ms", exposed},
        // The share of the updates' time the step did not wait for.
        {"overlap", ms > 0 ? std::clamp(1.0 - exposed / ms, 0.0, 1.0) : 0.0},
        {"params_per_s", ms > 0 ? work.params / (ms / 1000) : 0.0}};
  }

  Json peaks = Json::array();
  for (size_t r = 0; r < result.ranks.size(); ++r) {
    const MemoryPeaks &peak = result.ranks[r].peaks;
    peaks.push_back({{"rank", r},
                     {"total", peak.total},
                     {"model_states", peak.modelStates},
                     {"high_water", peak.highWater},
                     {"device_held", peak.deviceHeld},
                     {"by_role", roleBytes(peak.byRole)}});
    // The offload arenas, apart (docs/runtime.md#offload).
    for (size_t a = 1; a < plan.arenas.size(); ++a) {
      MemoryKind memory = plan.arenas[a].memory;
      peaks.back()[memoryKindName(memory)] =
          arenaJson(memory == MemoryKind::Host ? peak.host : peak.nvme);
    }
  }
  report["peak_bytes"] = peaks;
  report["planned_bytes"] = {{"arena", plan.memory.arena},
                             {"lower_bound", plan.memory.lowerBound},
                             {"model_states", plan.memory.modelStates},
                             {"by_role", roleBytes(plan.memory.peak)}};
  for (size_t a = 1; a < plan.arenas.size(); ++a) {
    MemoryKind memory = plan.arenas[a].memory;
    Json arena = arenaJson(plannedArenaPeaks(plan, memory));
    arena["arena"] = plan.arenas[a].bytes;
    report["planned_bytes"][memoryKindName(memory)] = arena;
  }

  Json perStep = Json::array();
  if (!result.ranks.empty())
    for (const KindBytes &bytes : result.ranks[0].bytesSent)
      perStep.push_back(kindBytes(bytes));
  Json perRank = Json::array();
  for (const RankRecord &rank : result.ranks)
    perRank.push_back(rank.bytesSent.empty()
                          ? Json::object()
                          : kindBytes(rank.bytesSent.back()));
  // By hierarchy axis (axis 0: across nodes, 1: within a node, on a 2-D
  // placement), each rank's last step.
  Json perAxis = Json::array();
  for (const RankRecord &rank : result.ranks) {
    Json axes = Json::array();
    // Counted on the first kMaxHierarchyAxes axes ([pipeline, data, model]).
    if (!rank.bytesSentOnAxis.empty())
      for (size_t axis = 0; axis < plan.hierarchy.size() &&
                            axis < static_cast<size_t>(kMaxHierarchyAxes);
           ++axis)
        axes.push_back(rank.bytesSentOnAxis.back()[axis]);
    perAxis.push_back(axes);
  }
  report["comm_bytes"] = {
      {"per_step", perStep}, {"per_rank", perRank}, {"per_axis", perAxis}};
  if (plan.numTransfers > 0)
    report["transfer_bytes_per_step"] = transferBytes(plan);
  // This process's, whether it runs every rank or one (MPI: rank 0's).
  // Resident memory now, the ranks' arenas in it, and at its peak (which
  // includes set-up).
  report["process"] = {{"rss_bytes", result.residentBytes},
                       {"rss_peak_bytes", processStatusBytes("VmHWM")}};
  return report.dump(2);
}

} // namespace zerosbp::runtime
