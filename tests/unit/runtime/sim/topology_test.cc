//===- topology_test.cc - zero-sim's --topology and device files ----------===//

#include "runtime/core/Error.h"
#include "runtime/sim/DeviceModel.h"
#include "runtime/sim/Topology.h"

#include <gtest/gtest.h>

#include <string>

using namespace zerosbp::runtime;
using namespace zerosbp::runtime::sim;

namespace {

std::string topologyError(const std::string &text) {
  try {
    parseTopology(text);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "accepted";
}

std::string deviceError(const std::string &text) {
  try {
    parseDeviceModel(text, "dev.json");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "accepted";
}

TEST(Topology, ReadsUnits) {
  Topology t = parseTopology("nodes=128,ranks_per_node=8,intra=450GB/s,"
                             "inter=400Gb/s,latency=5us,pcie=25GiB/s");
  EXPECT_EQ(t.nodes, 128);
  EXPECT_EQ(t.ranksPerNode, 8);
  EXPECT_EQ(t.ranks(), 1024);
  EXPECT_DOUBLE_EQ(t.intraBandwidth, 450e9);
  EXPECT_DOUBLE_EQ(t.interBandwidth, 50e9); // 400 Gbit/s.
  EXPECT_DOUBLE_EQ(t.intraLatency, 5e-6);
  EXPECT_DOUBLE_EQ(t.interLatency, 5e-6);
  EXPECT_DOUBLE_EQ(t.hostBandwidth, 25.0 * (1 << 30));
  EXPECT_EQ(t.nvmeBandwidth, 0);
}

TEST(Topology, SeparateLatenciesOverrideTheCommonOne) {
  Topology t = parseTopology("nodes=2,ranks_per_node=4,intra=100GB/s,"
                             "inter=10GB/s,latency=3us,intra_latency=800ns,"
                             "inter_latency=1.5ms");
  EXPECT_DOUBLE_EQ(t.intraLatency, 800e-9);
  EXPECT_DOUBLE_EQ(t.interLatency, 1.5e-3);
}

TEST(Topology, OneRankNeedsNoLinks) {
  Topology t = parseTopology("nodes=1,ranks_per_node=1");
  EXPECT_EQ(t.ranks(), 1);
  EXPECT_EQ(parseTopology("nodes=1,ranks_per_node=2,intra=1GB/s,latency=0")
                .intraLatency,
            0);
}

TEST(Topology, RefusesBadText) {
  EXPECT_EQ(topologyError("ranks_per_node=8"),
            "--topology: nodes= and ranks_per_node= are required (e.g. "
            "nodes=2,ranks_per_node=8,intra=450GB/s,inter=50GB/s,"
            "latency=5us)");
  EXPECT_EQ(topologyError("nodes=1,ranks_per_node=2,latency=1us"),
            "--topology: intra= is required when a node holds several ranks");
  EXPECT_EQ(topologyError("nodes=2,ranks_per_node=1,latency=1us"),
            "--topology: inter= is required when there are several nodes");
  EXPECT_EQ(topologyError("nodes=2,ranks_per_node=1,inter=1GB/s"),
            "--topology: latency= or inter_latency= is required when there "
            "are several nodes (0 for none)");
  EXPECT_EQ(topologyError("nodes=1,ranks_per_node=1,colour=red"),
            "--topology: unknown key 'colour' (keys: nodes, ranks_per_node, "
            "intra, inter, latency, intra_latency, inter_latency, pcie, "
            "nvme)");
  EXPECT_EQ(topologyError("nodes=1,nodes=2,ranks_per_node=1"),
            "--topology: nodes is given twice");
  EXPECT_EQ(topologyError("nodes=1,ranks_per_node=2,intra=450GBps,latency=0"),
            "--topology: intra expects a bandwidth such as 450GB/s or "
            "400Gb/s, got '450GBps'");
  EXPECT_EQ(topologyError("nodes=1,ranks_per_node=2,intra=0GB/s,latency=0"),
            "--topology: intra must be a bandwidth above 0, got '0GB/s'");
  EXPECT_EQ(topologyError("nodes=1,ranks_per_node=2,intra=1GB/s,latency=5"),
            "--topology: latency expects a duration such as 5us, 2ms or 0, "
            "got '5'");
  EXPECT_EQ(topologyError("nodes=-1,ranks_per_node=2"),
            "--topology: nodes expects a whole number in [1, 16384], got "
            "'-1'");
  EXPECT_EQ(topologyError("nodes=2048,ranks_per_node=16,intra=1GB/s,"
                          "inter=1GB/s,latency=1us"),
            "--topology: nodes x ranks_per_node is 32768 ranks, over the "
            "limit of 16384");
  EXPECT_EQ(topologyError("nodes"), "--topology: expected key=value, got "
                                    "'nodes'");
  EXPECT_EQ(topologyError("nodes=1,ranks_per_node=2,intra=1e9B/s,latency=0"),
            "--topology: intra expects a bandwidth such as 450GB/s or "
            "400Gb/s, got '1e9B/s'");
}

TEST(DeviceModel, PresetsArePublishedPeaks) {
  DeviceModel h100 = presetDevice("h100");
  EXPECT_DOUBLE_EQ(h100.matmulF16Peak, 989.4e12);
  // Achieved: the peak times the efficiency.
  EXPECT_DOUBLE_EQ(h100.matmulRate(DType::BF16), 989.4e12 * 0.7);
  EXPECT_DOUBLE_EQ(h100.matmulRate(DType::F32), 66.9e12 * 0.7);
  EXPECT_DOUBLE_EQ(h100.memoryRate(), 3.35e12 * 0.8);
  EXPECT_EQ(presetDeviceNames(),
            (std::vector<std::string>{"a100", "h100", "h200", "v100"}));
  try {
    presetDevice("tpu");
    FAIL() << "accepted an unknown device";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "--device: unknown device 'tpu' (built in: "
                               "a100, h100, h200, v100; or --device-file "
                               "FILE)");
  }
}

TEST(DeviceModel, CurvesInterpolateOnALogScale) {
  DeviceModel device = parseDeviceModel(
      R"({"name": "cpu", "matmul_flops": {"f32": 1e11},
          "matmul_size_curve": {"1": [[64, 4e10], [256, 8e10]],
                                "2": [[64, 5e10], [256, 1.6e11]]},
          "vector_flops": 1e10, "memory_bandwidth": 2e10,
          "cache_bytes": 1000, "cache_bandwidth": 8e10, "cores": 2})",
      "dev.json");
  // 128 is halfway from 64 to 256 on a log scale.
  EXPECT_DOUBLE_EQ(device.matmulRate(DType::F32, 128, 1), 6e10);
  EXPECT_DOUBLE_EQ(device.matmulRate(DType::F32, 128, 2), 1.05e11);
  // Clamped at the ends; half a core runs at half one core's rate.
  EXPECT_DOUBLE_EQ(device.matmulRate(DType::F32, 16, 1), 4e10);
  EXPECT_DOUBLE_EQ(device.matmulRate(DType::F32, 4096, 0.5), 4e10);
  // Beyond the largest curve, rates scale with the share.
  EXPECT_DOUBLE_EQ(device.matmulRate(DType::F32, 256, 4), 3.2e11);
  // Bytes that fit the cache stream at its bandwidth.
  EXPECT_DOUBLE_EQ(device.memoryRate(1000), 8e10);
  EXPECT_DOUBLE_EQ(device.memoryRate(1001), 2e10);
}

TEST(DeviceModel, RefusesBadFiles) {
  EXPECT_EQ(deviceError("{"), "dev.json: not a JSON file");
  EXPECT_EQ(deviceError(R"({"name": "x", "vector_flops": 1e9,
                            "memory_bandwidth": 1e9})"),
            "dev.json: 'matmul_flops' must be an object {\"f32\": ..., "
            "\"f16\": ...}");
  EXPECT_EQ(deviceError(R"({"name": "x", "matmul_flops": {"f32": 1e9},
                            "vector_flops": 1e9, "memory_bandwidth": 1e9,
                            "speed": 3})"),
            "dev.json: unknown key 'speed'");
  EXPECT_EQ(deviceError(R"({"name": "x", "matmul_flops": {"f32": -1},
                            "vector_flops": 1e9, "memory_bandwidth": 1e9})"),
            "dev.json: 'f32' must be in [1000, 1e+18], got -1");
  EXPECT_EQ(deviceError(R"({"name": "x", "matmul_flops": {"f32": 1e9},
                            "vector_flops": 1e9, "memory_bandwidth": 1e9,
                            "matmul_size_curve": {"1": [[64, 1e9],
                                                        [32, 1e9]]}})"),
            "dev.json: 'matmul_size_curve' sizes must ascend");
  EXPECT_EQ(deviceError(R"({"name": "x", "matmul_flops": {"f32": 1e9},
                            "vector_flops": 1e9, "memory_bandwidth": 1e9,
                            "algorithm": "butterfly"})"),
            "dev.json: 'algorithm' must be auto, ring, tree or direct");
  EXPECT_EQ(deviceError(R"({"name": "x", "matmul_flops": {"f32": 1e9},
                            "vector_flops": 1e9, "memory_bandwidth": 1e9,
                            "collectives_use_cores": true})"),
            "dev.json: 'collectives_use_cores' needs 'cores'");
  EXPECT_EQ(deviceError(R"({"name": "x", "matmul_flops": {"f32": 1e9},
                            "vector_flops": 1e9, "memory_bandwidth": 1e9,
                            "cores": 1.5})"),
            "dev.json: 'cores' must be a whole number");
}

} // namespace
