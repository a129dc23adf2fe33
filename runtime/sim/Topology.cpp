//===- Topology.cpp - parsing `--topology` --------------------------------===//

#include "runtime/sim/Topology.h"

#include "runtime/core/Error.h"
#include "runtime/core/Limits.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

namespace zerosbp::runtime::sim {
namespace {

[[noreturn]] void fail(const std::string &what) {
  throw RuntimeError("--topology: " + what);
}

// The number at the front of `text` and what follows it; a finite,
// non-negative decimal only (no hex, no "inf").
std::pair<double, std::string> splitNumber(const std::string &key,
                                           const std::string &text) {
  size_t end = 0;
  while (
      end < text.size() &&
      (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  if (end == 0)
    fail(key + " expects a number, got '" + text + "'");
  errno = 0;
  char *parsedEnd = nullptr;
  std::string digits = text.substr(0, end);
  double value = std::strtod(digits.c_str(), &parsedEnd);
  if (errno != 0 || *parsedEnd != '\0' || !std::isfinite(value))
    fail(key + " expects a number, got '" + text + "'");
  return {value, text.substr(end)};
}

double parseBandwidth(const std::string &key, const std::string &text) {
  auto [value, unit] = splitNumber(key, text);
  static const std::map<std::string, double> kUnits = {
      {"B/s", 1},         {"KB/s", 1e3},      {"MB/s", 1e6},
      {"GB/s", 1e9},      {"TB/s", 1e12},     {"KiB/s", 1024.0},
      {"MiB/s", 1 << 20}, {"GiB/s", 1 << 30}, {"Gb/s", 1e9 / 8},
      {"Mb/s", 1e6 / 8},  {"Tb/s", 1e12 / 8}};
  auto unitScale = kUnits.find(unit);
  if (unitScale == kUnits.end())
    fail(key + " expects a bandwidth such as 450GB/s or 400Gb/s, got '" + text +
         "'");
  double bytesPerSecond = value * unitScale->second;
  if (!(bytesPerSecond > 0) || bytesPerSecond > 1e18)
    fail(key + " must be a bandwidth above 0, got '" + text + "'");
  return bytesPerSecond;
}

double parseLatency(const std::string &key, const std::string &text) {
  auto [value, unit] = splitNumber(key, text);
  static const std::map<std::string, double> kUnits = {
      {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  auto unitScale = kUnits.find(unit);
  if (unitScale == kUnits.end() && !(unit.empty() && value == 0))
    fail(key + " expects a duration such as 5us, 2ms or 0, got '" + text + "'");
  double seconds = unit.empty() ? 0 : value * unitScale->second;
  if (seconds > 60)
    fail(key + " must be at most 60 s, got '" + text + "'");
  return seconds;
}

int64_t parseCount(const std::string &key, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) ||
      *end != '\0' || errno != 0 || value < 1 || value > kMaxRanks)
    fail(key + " expects a whole number in [1, " + std::to_string(kMaxRanks) +
         "], got '" + text + "'");
  return value;
}

} // namespace

Topology parseTopology(const std::string &text) {
  std::map<std::string, std::string> entries;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0)
      fail("expected key=value, got '" + item + "'");
    std::string key = item.substr(0, equals);
    if (!entries.emplace(key, item.substr(equals + 1)).second)
      fail(key + " is given twice");
  }
  auto take = [&](const std::string &key) -> std::optional<std::string> {
    auto found = entries.find(key);
    if (found == entries.end())
      return std::nullopt;
    std::string value = found->second;
    entries.erase(found);
    return value;
  };

  Topology topology;
  std::optional<std::string> nodes = take("nodes");
  std::optional<std::string> perNode = take("ranks_per_node");
  if (!nodes || !perNode)
    fail("nodes= and ranks_per_node= are required (e.g. "
         "nodes=2,ranks_per_node=8,intra=450GB/s,inter=50GB/s,latency=5us)");
  topology.nodes = parseCount("nodes", *nodes);
  topology.ranksPerNode = parseCount("ranks_per_node", *perNode);
  if (topology.ranks() > kMaxRanks)
    fail("nodes x ranks_per_node is " + std::to_string(topology.ranks()) +
         " ranks, over the limit of " + std::to_string(kMaxRanks));
  std::optional<std::string> intra = take("intra");
  std::optional<std::string> inter = take("inter");
  std::optional<std::string> latency = take("latency");
  std::optional<std::string> intraLatency = take("intra_latency");
  std::optional<std::string> interLatency = take("inter_latency");
  std::optional<std::string> pcie = take("pcie");
  std::optional<std::string> nvme = take("nvme");
  if (!entries.empty())
    fail("unknown key '" + entries.begin()->first +
         "' (keys: nodes, ranks_per_node, intra, inter, latency, "
         "intra_latency, inter_latency, pcie, nvme)");

  if (intra)
    topology.intraBandwidth = parseBandwidth("intra", *intra);
  if (inter)
    topology.interBandwidth = parseBandwidth("inter", *inter);
  if (latency)
    topology.intraLatency = topology.interLatency =
        parseLatency("latency", *latency);
  if (intraLatency)
    topology.intraLatency = parseLatency("intra_latency", *intraLatency);
  if (interLatency)
    topology.interLatency = parseLatency("inter_latency", *interLatency);
  if (pcie)
    topology.hostBandwidth = parseBandwidth("pcie", *pcie);
  if (nvme)
    topology.nvmeBandwidth = parseBandwidth("nvme", *nvme);

  // No default link: a guessed bandwidth would be a silent wrong answer.
  if (topology.ranksPerNode > 1 && !intra)
    fail("intra= is required when a node holds several ranks");
  if (topology.nodes > 1 && !inter)
    fail("inter= is required when there are several nodes");
  if (topology.ranksPerNode > 1 && !latency && !intraLatency)
    fail("latency= or intra_latency= is required when a node holds several "
         "ranks (0 for none)");
  if (topology.nodes > 1 && !latency && !interLatency)
    fail("latency= or inter_latency= is required when there are several "
         "nodes (0 for none)");
  return topology;
}

std::string formatBandwidth(double bytesPerSecond) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.4g GB/s", bytesPerSecond / 1e9);
  return text;
}

std::string formatSeconds(double seconds) {
  char text[64];
  if (seconds >= 1)
    std::snprintf(text, sizeof(text), "%.4g s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(text, sizeof(text), "%.4g ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof(text), "%.4g us", seconds * 1e6);
  return text;
}

} // namespace zerosbp::runtime::sim
