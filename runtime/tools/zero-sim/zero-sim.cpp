//===- zero-sim.cpp - predicts a plan's step on a modelled cluster --------===//
//
//   zero-sim model.zplan --topology nodes=128,ranks_per_node=8,intra=450GB/s,
//            inter=50GB/s,latency=5us --device h100 [--device-file FILE]
//            [--threads T] [--algorithm auto|ring|tree|direct]
//            [--report text|json] [--report-file FILE]
//
// Prints the predicted step time, the communication it exposes, the bytes a
// rank sends per hierarchy axis and the memory per rank, from the plan
// alone (docs/scale.md#the-simulator). Links no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/io/DurableFile.h"
#include "runtime/plan/Plan.h"
#include "runtime/sim/Simulator.h"
#include "runtime/tools/common/CommandLine.h"
#include "runtime/tools/common/OutputPaths.h"

#include "absl/flags/flag.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

ABSL_FLAG(std::string, topology, "",
          "the cluster: nodes=N,ranks_per_node=R,intra=BW,inter=BW,latency=T "
          "(also intra_latency, inter_latency, pcie, nvme; docs/scale.md)");
ABSL_FLAG(std::string, device, "",
          "a built-in device: h100, h200, a100 or v100");
ABSL_FLAG(std::optional<std::string>, device_file, std::nullopt,
          "a device as JSON (measured rates; bench/sim writes this machine's)");
ABSL_FLAG(int, threads, 1,
          "CPU devices: threads each rank computes with (zero-run --threads)");
ABSL_FLAG(std::string, defer_transfer_waits, "on",
          "on or off, as zero-run's: transfers nothing later in the step "
          "touches are waited for by the next step (two steps are replayed)");
ABSL_FLAG(std::string, algorithm, "",
          "collective algorithm: auto, ring, tree or direct (default: the "
          "device's)");
ABSL_FLAG(std::optional<double>, matmul_efficiency, std::nullopt,
          "the fraction of the matmul peaks kernels achieve, in (0, 1] "
          "(presets: 0.7)");
ABSL_FLAG(std::optional<double>, memory_efficiency, std::nullopt,
          "the fraction of the memory bandwidth kernels achieve, in (0, 1] "
          "(presets: 0.8)");
ABSL_FLAG(std::string, report, "text", "text or json on stdout");
ABSL_FLAG(std::optional<std::string>, report_file, std::nullopt,
          "also write the JSON report here");

using namespace zerosbp::runtime;
using namespace zerosbp::runtime::sim;

namespace {

const tools::CommandLineSpec &commandLineSpec() {
  static const tools::CommandLineSpec kSpec = {
      "usage: zero-sim model.zplan --topology nodes=N,ranks_per_node=R,"
      "intra=BW,inter=BW,latency=T (--device NAME | --device-file FILE) "
      "[--threads T] [--algorithm auto|ring|tree|direct] "
      "[--matmul-efficiency F] [--memory-efficiency F] "
      "[--defer-transfer-waits on|off] "
      "[--report text|json] [--report-file FILE]",
      __FILE__,
      {{"threads", 1, 256}},
      {{"report", {"text", "json"}},
       {"algorithm", {"auto", "ring", "tree", "direct"}},
       {"defer_transfer_waits", {"on", "off"}}},
      {}};
  return kSpec;
}

[[noreturn]] void usageError(const std::string &message) {
  tools::usageError(commandLineSpec(), message);
}

double ms(double seconds) { return seconds * 1e3; }

// A bandwidth or duration as a JSON number, rounded for reading.
double rounded(double value, double unit) {
  return std::round(value / unit * 1e4) / 1e4;
}

nlohmann::ordered_json reportJson(const std::string &path, const Plan &plan,
                                  const Topology &topology,
                                  const DeviceModel &device,
                                  const SimOptions &options,
                                  const Simulation &sim) {
  nlohmann::ordered_json report;
  report["plan"] = path;
  report["world"] = plan.world;
  report["stage"] = plan.stage ? nlohmann::ordered_json(*plan.stage)
                               : nlohmann::ordered_json(nullptr);
  report["hierarchy"] = plan.hierarchy;
  report["topology"] = {
      {"nodes", topology.nodes},
      {"ranks_per_node", topology.ranksPerNode},
      {"intra_gb_per_s", rounded(topology.intraBandwidth, 1e9)},
      {"inter_gb_per_s", rounded(topology.interBandwidth, 1e9)},
      {"intra_latency_us", rounded(topology.intraLatency, 1e-6)},
      {"inter_latency_us", rounded(topology.interLatency, 1e-6)}};
  report["device"] = {
      {"name", device.name},
      {"matmul_tflops_f32", device.matmulRate(DType::F32) / 1e12},
      {"matmul_tflops_f16", device.matmulRate(DType::BF16) / 1e12},
      {"memory_gb_per_s", device.memoryRate() / 1e9},
      {"kernel_overhead_us", device.kernelOverhead * 1e6},
      {"algorithm", algorithmName(device.algorithm)},
      {"threads", options.threads},
      {"share", sim.share}};
  report["step_ms"] = ms(sim.stepSeconds);
  if (plan.pipeline) {
    // Each stage's rank ends its step at its own time; the last ends it.
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (double seconds : sim.stageSeconds)
      stages.push_back(ms(seconds));
    report["stage_step_ms"] = stages;
  }
  report["compute_ms"] = ms(sim.computeSeconds);
  report["comm_busy_ms"] = ms(sim.commBusySeconds);
  report["comm_exposed_ms"] = ms(sim.commExposedSeconds);
  report["transfer_busy_ms"] = ms(sim.transferBusySeconds);
  report["transfer_exposed_ms"] = ms(sim.transferExposedSeconds);
  report["host_busy_ms"] = ms(sim.hostBusySeconds);
  report["flops_per_rank"] = sim.flops;
  report["matmul_flops_per_rank"] = sim.matmulFlops;
  report["collectives"] = sim.collectives;
  nlohmann::ordered_json bytes, seconds;
  for (int kind = 0; kind < kNumCollectiveKinds; ++kind) {
    const char *name = collectiveKindName(static_cast<CollectiveKind>(kind));
    bytes[name] = sim.bytesSentByKind[kind];
    seconds[name] = ms(sim.secondsByKind[kind]);
  }
  bytes["per_axis"] = sim.bytesSentByAxis;
  bytes["network"] = std::llround(sim.networkBytes);
  report["comm_bytes"] = bytes;
  report["comm_ms_by_kind"] = seconds;
  nlohmann::ordered_json axisSeconds = nlohmann::ordered_json::array();
  for (double axisTime : sim.secondsByAxis)
    axisSeconds.push_back(ms(axisTime));
  report["comm_ms_by_axis"] = axisSeconds;
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const GroupLayout &group : sim.axisGroups)
    axes.push_back({{"group_size", group.size},
                    {"nodes", group.nodes},
                    {"ranks_per_node", group.perNode}});
  report["axes"] = axes;
  nlohmann::ordered_json peaks;
  for (int role = 0; role < kNumRoles; ++role)
    peaks[roleName(static_cast<Role>(role))] = plan.memory.peak[role];
  report["memory"] = {{"device_bytes", sim.deviceBytes},
                      {"host_bytes", sim.hostBytes},
                      {"nvme_bytes", sim.nvmeBytes},
                      {"model_state_bytes", plan.memory.modelStates},
                      {"peak_by_role", peaks},
                      {"device_capacity_bytes", device.memoryBytes},
                      {"fits", sim.fits}};
  nlohmann::ordered_json ops;
  for (const auto &[name, op] : sim.ops)
    ops[name] = {{"count", op.count},
                 {"ms", ms(op.seconds)},
                 {"flops", op.flops},
                 {"bytes", op.bytes}};
  report["ops"] = ops;
  return report;
}

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB",
                static_cast<double>(bytes) / (1 << 30));
  return text;
}

void printText(std::ostream &out, const std::string &path, const Plan &plan,
               const Topology &topology, const DeviceModel &device,
               const Simulation &sim) {
  char line[256];
  out << "zero-sim: " << path << " (" << plan.world << " ranks"
      << (plan.stage ? ", stage " + std::to_string(*plan.stage) : "") << ") on "
      << topology.nodes << " x " << topology.ranksPerNode << ", " << device.name
      << "\n";
  std::snprintf(line, sizeof(line),
                "  step            %10.3f ms\n"
                "  compute         %10.3f ms  (%.4g TFLOP per rank)\n"
                "  communication   %10.3f ms busy, %.3f ms exposed\n",
                ms(sim.stepSeconds), ms(sim.computeSeconds), sim.flops / 1e12,
                ms(sim.commBusySeconds), ms(sim.commExposedSeconds));
  out << line;
  if (plan.pipeline) {
    out << "  stages end at  ";
    for (size_t stage = 0; stage < sim.stageSeconds.size(); ++stage) {
      std::snprintf(line, sizeof(line), "%s %.3f ms", stage ? "," : "",
                    ms(sim.stageSeconds[stage]));
      out << line;
    }
    out << "\n";
  }
  if (sim.transferBusySeconds > 0) {
    std::snprintf(line, sizeof(line),
                  "  transfers       %10.3f ms busy, %.3f ms exposed\n",
                  ms(sim.transferBusySeconds), ms(sim.transferExposedSeconds));
    out << line;
  }
  if (sim.hostBusySeconds > 0) {
    std::snprintf(line, sizeof(line),
                  "  host updates    %10.3f ms busy on the host stream\n",
                  ms(sim.hostBusySeconds));
    out << line;
  }
  for (size_t axis = 0; axis < sim.bytesSentByAxis.size(); ++axis) {
    const GroupLayout &group = sim.axisGroups[axis];
    std::snprintf(
        line, sizeof(line),
        "  axis %zu sends    %10.3f MiB per rank (groups of %lld "
        "over %lld node%s)\n",
        axis, static_cast<double>(sim.bytesSentByAxis[axis]) / (1 << 20),
        static_cast<long long>(group.size), static_cast<long long>(group.nodes),
        group.nodes == 1 ? "" : "s");
    out << line;
  }
  std::snprintf(line, sizeof(line),
                "  network         %10.3f MiB per rank leave its node\n",
                sim.networkBytes / (1 << 20));
  out << line;
  // The kernels that take the most compute time.
  std::vector<std::pair<std::string, OpSummary>> ops(sim.ops.begin(),
                                                     sim.ops.end());
  std::sort(ops.begin(), ops.end(), [](const auto &a, const auto &b) {
    return a.second.seconds > b.second.seconds;
  });
  out << "  top kernels    ";
  for (size_t i = 0; i < ops.size() && i < 4; ++i) {
    std::snprintf(line, sizeof(line), "%s %s %.3f ms (%lld)", i ? "," : "",
                  ops[i].first.c_str(), ms(ops[i].second.seconds),
                  static_cast<long long>(ops[i].second.count));
    out << line;
  }
  out << "\n";
  out << "  memory per rank  " << gib(sim.deviceBytes) << " device";
  if (device.memoryBytes > 0)
    out << " of " << gib(device.memoryBytes)
        << (sim.fits ? " (fits)" : " (does NOT fit)");
  if (sim.hostBytes > 0)
    out << ", " << gib(sim.hostBytes) << " host";
  if (sim.nvmeBytes > 0)
    out << ", " << gib(sim.nvmeBytes) << " NVMe";
  out << "\n";
}

} // namespace

int main(int argc, char **argv) {
  try {
    std::string path =
        tools::parsePlanCommandLine(argc, argv, commandLineSpec());
    std::string topologyText = absl::GetFlag(FLAGS_topology);
    if (topologyText.empty())
      usageError("--topology is required");
    std::string deviceName = absl::GetFlag(FLAGS_device);
    std::optional<std::string> deviceFile = absl::GetFlag(FLAGS_device_file);
    if (deviceName.empty() == !deviceFile)
      usageError("give one of --device and --device-file");
    std::optional<std::string> reportFile = absl::GetFlag(FLAGS_report_file);
    tools::checkOutputsApart(
        {{"--report-file", reportFile}},
        {{"the plan", path}, {"--device-file", deviceFile}});

    Topology topology = parseTopology(topologyText);
    DeviceModel device =
        deviceFile ? readDeviceModel(*deviceFile) : presetDevice(deviceName);
    if (std::string algorithm = absl::GetFlag(FLAGS_algorithm);
        !algorithm.empty())
      // The flag's choices are checked already (commandLineSpec).
      device.algorithm = *parseAlgorithm(algorithm);
    // Efficiencies from the command line override the device's.
    struct Efficiency {
      const char *option;
      std::optional<double> value;
      double &field;
    };
    for (const Efficiency &efficiency :
         {Efficiency{"--matmul-efficiency",
                     absl::GetFlag(FLAGS_matmul_efficiency),
                     device.matmulEfficiency},
          Efficiency{"--memory-efficiency",
                     absl::GetFlag(FLAGS_memory_efficiency),
                     device.memoryEfficiency}}) {
      if (!efficiency.value)
        continue;
      if (!(*efficiency.value > 0 && *efficiency.value <= 1)) {
        char text[64];
        std::snprintf(text, sizeof(text), "%g", *efficiency.value);
        usageError(std::string(efficiency.option) + " must be in (0, 1], got " +
                   text);
      }
      efficiency.field = *efficiency.value;
    }
    SimOptions options;
    options.threads = absl::GetFlag(FLAGS_threads);
    options.deferTransferWaits =
        absl::GetFlag(FLAGS_defer_transfer_waits) == "on";
    if (options.threads != 1 && device.cores == 0)
      usageError("--threads applies to CPU devices (a device file with "
                 "\"cores\")");

    Plan plan = readPlan(path);
    Simulation sim = simulate(plan, topology, device, options);
    nlohmann::ordered_json report =
        reportJson(path, plan, topology, device, options, sim);
    if (reportFile)
      writeOutputFile(*reportFile, report.dump(2) + "\n", "report");
    if (absl::GetFlag(FLAGS_report) == "json")
      std::cout << report.dump(2) << std::endl;
    else
      printText(std::cout, path, plan, topology, device, sim);
    return 0;
  } catch (const std::exception &error) {
    std::cerr << "zero-sim: " << error.what() << std::endl;
    return 1;
  }
}
