//===- Topology.h - the machines a simulated plan runs on -------*- C++ -*-===//
//
// `nodes=128,ranks_per_node=8,intra=450GB/s,inter=50GB/s,latency=5us`: how
// many ranks, how they sit on nodes and what links them (docs/scale.md#the-
// simulator). Bandwidths are per rank and direction: `intra` between ranks
// of one node (NVLink, shared memory), `inter` a rank's own share of the
// network (its NIC on a rail-optimized cluster).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_SIM_TOPOLOGY_H
#define ZEROSBP_RUNTIME_SIM_TOPOLOGY_H

#include <cstdint>
#include <string>

namespace zerosbp::runtime::sim {

struct Topology {
  int64_t nodes = 1;
  int64_t ranksPerNode = 1;
  /// Bytes per second a rank sends to a peer in its node / on another node.
  double intraBandwidth = 0;
  double interBandwidth = 0;
  /// Seconds one message step takes within a node / across nodes.
  double intraLatency = 0;
  double interLatency = 0;
  /// Bytes per second between device and host memory (ZeRO-Offload), and
  /// between host memory and NVMe (ZeRO-Infinity); 0 where not given.
  double hostBandwidth = 0;
  double nvmeBandwidth = 0;

  int64_t ranks() const { return nodes * ranksPerNode; }
};

/// Parses `key=value,...`. Keys: nodes, ranks_per_node (whole numbers),
/// intra, inter, pcie, nvme (bandwidths: 450GB/s, 400Gb/s, 25GiB/s, MB/s),
/// latency, intra_latency, inter_latency (durations: 5us, 1.5ms, 800ns, 0).
/// `latency` sets both latencies. Throws RuntimeError ("--topology: ...")
/// on an unknown or repeated key, a malformed value, a missing link (intra
/// when a node holds several ranks; inter and a latency when there are
/// several nodes) or a world over kMaxRanks.
Topology parseTopology(const std::string &text);

/// "450 GB/s", "5 us": a bandwidth and a duration as parseTopology reads
/// them back.
std::string formatBandwidth(double bytesPerSecond);
std::string formatSeconds(double seconds);

} // namespace zerosbp::runtime::sim

#endif // ZEROSBP_RUNTIME_SIM_TOPOLOGY_H
