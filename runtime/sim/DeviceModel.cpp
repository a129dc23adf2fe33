//===- DeviceModel.cpp - device presets and device files ------------------===//

#include "runtime/sim/DeviceModel.h"

#include "runtime/core/Error.h"
#include "runtime/io/InputFile.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

namespace zerosbp::runtime::sim {
namespace {

constexpr int64_t kGiB = int64_t(1) << 30;

// Published dense peaks (NVIDIA's data sheets, SXM parts, without
// sparsity); f32 matmuls run on the CUDA cores (the runtime's cuBLAS calls
// use CUBLAS_COMPUTE_32F, no TF32). Efficiencies are typical of large
// cuBLAS GEMMs (about 70% of peak) and of streaming kernels (about 80% of
// peak bandwidth); the launch cost is a kernel launched without CUDA graphs.
DeviceModel gpu(const std::string &name, double f32, double f16,
                double bandwidth, int64_t memory) {
  DeviceModel device;
  device.name = name;
  device.matmulF32Peak = f32;
  device.matmulF16Peak = f16;
  device.vectorPeak = f32;
  device.memoryPeak = bandwidth;
  device.matmulEfficiency = 0.7;
  device.vectorEfficiency = 0.5;
  device.memoryEfficiency = 0.8;
  device.kernelOverhead = 4e-6;
  device.memoryBytes = memory;
  // One rank's share of a dual-socket host with 8 GPUs: DeepSpeed's CPU
  // Adam streams about 20 GB/s per rank.
  device.hostVectorFlops = 100e9;
  device.hostMemoryBandwidth = 20e9;
  device.algorithm = CollectiveAlgorithm::Auto;
  return device;
}

const std::map<std::string, DeviceModel> &presets() {
  static const std::map<std::string, DeviceModel> kPresets = {
      {"h100", gpu("h100", 66.9e12, 989.4e12, 3.35e12, 80 * kGiB)},
      {"h200", gpu("h200", 66.9e12, 989.4e12, 4.8e12, 141000000000)},
      {"a100", gpu("a100", 19.5e12, 312e12, 2.039e12, 80 * kGiB)},
      {"v100", gpu("v100", 15.7e12, 125e12, 0.9e12, 32 * kGiB)},
  };
  return kPresets;
}

[[noreturn]] void fail(const std::string &source, const std::string &what) {
  throw RuntimeError(source + ": " + what);
}

double number(const nlohmann::json &object, const std::string &key,
              const std::string &source, bool required, double fallback,
              double min, double max) {
  auto found = object.find(key);
  if (found == object.end()) {
    if (required)
      fail(source, "missing key '" + key + "'");
    return fallback;
  }
  if (!found->is_number())
    fail(source, "'" + key + "' must be a number");
  double value = found->get<double>();
  if (!std::isfinite(value) || value < min || value > max) {
    std::ostringstream range;
    range << "'" << key << "' must be in [" << min << ", " << max << "], got "
          << value;
    fail(source, range.str());
  }
  return value;
}

} // namespace

double DeviceModel::matmulRate(DType operands, double size,
                               double share) const {
  bool half = operands == DType::F16 || operands == DType::BF16;
  double flat = (half ? matmulF16Peak : matmulF32Peak) * matmulEfficiency;
  if (matmulCurves.empty())
    return flat * share;
  // The curve of the most threads the share holds (the first curve below
  // one core), scaled to the share beyond it.
  auto found = matmulCurves.upper_bound(std::max(1, static_cast<int>(share)));
  if (found != matmulCurves.begin())
    --found;
  const Curve &curve = found->second;
  double rate = curve.front().second;
  if (size >= curve.back().first) {
    rate = curve.back().second;
  } else {
    for (size_t i = 1; i < curve.size(); ++i) {
      auto [lowSize, lowRate] = curve[i - 1];
      auto [highSize, highRate] = curve[i];
      if (size >= lowSize && size < highSize) {
        double t = std::log(size / lowSize) / std::log(highSize / lowSize);
        rate = lowRate + t * (highRate - lowRate);
        break;
      }
    }
  }
  rate *= share / found->first;
  return half ? rate * matmulF16Peak / matmulF32Peak : rate;
}

const char *algorithmName(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Auto:
    return "auto";
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Direct:
    return "direct";
  }
  return "auto";
}

std::optional<CollectiveAlgorithm> parseAlgorithm(const std::string &name) {
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Auto, CollectiveAlgorithm::Ring,
        CollectiveAlgorithm::Tree, CollectiveAlgorithm::Direct})
    if (name == algorithmName(algorithm))
      return algorithm;
  return std::nullopt;
}

DeviceModel presetDevice(const std::string &name) {
  auto found = presets().find(name);
  if (found == presets().end()) {
    std::string names;
    for (const std::string &known : presetDeviceNames())
      names += (names.empty() ? "" : ", ") + known;
    throw RuntimeError("--device: unknown device '" + name +
                       "' (built in: " + names + "; or --device-file FILE)");
  }
  return found->second;
}

std::vector<std::string> presetDeviceNames() {
  std::vector<std::string> names;
  for (const auto &[name, device] : presets())
    names.push_back(name);
  return names;
}

DeviceModel parseDeviceModel(const std::string &text,
                             const std::string &source) {
  nlohmann::json root = nlohmann::json::parse(text, nullptr, false);
  if (root.is_discarded())
    fail(source, "not a JSON file");
  if (!root.is_object())
    fail(source, "expected a JSON object");
  static const char *const kKeys[] = {"name",
                                      "matmul_flops",
                                      "vector_flops",
                                      "memory_bandwidth",
                                      "kernel_overhead_s",
                                      "memory_bytes",
                                      "host_vector_flops",
                                      "host_memory_bandwidth",
                                      "cores",
                                      "algorithm",
                                      "collectives_use_cores",
                                      "matmul_efficiency",
                                      "vector_efficiency",
                                      "memory_efficiency",
                                      "measured",
                                      "matmul_size_curve",
                                      "cache_bytes",
                                      "cache_bandwidth"};
  for (const auto &[key, value] : root.items()) {
    bool known = false;
    for (const char *name : kKeys)
      known |= key == name;
    if (!known)
      fail(source, "unknown key '" + key + "'");
  }
  DeviceModel device;
  auto name = root.find("name");
  if (name == root.end() || !name->is_string() ||
      name->get<std::string>().empty())
    fail(source, "'name' must be a non-empty string");
  device.name = name->get<std::string>();
  auto matmul = root.find("matmul_flops");
  if (matmul == root.end() || !matmul->is_object())
    fail(source, "'matmul_flops' must be an object {\"f32\": ..., \"f16\": "
                 "...}");
  constexpr double kMaxRate = 1e18;
  device.matmulF32Peak = number(*matmul, "f32", source, true, 0, 1e3, kMaxRate);
  device.matmulF16Peak = number(*matmul, "f16", source, false,
                                device.matmulF32Peak, 1e3, kMaxRate);
  device.vectorPeak =
      number(root, "vector_flops", source, true, 0, 1e3, kMaxRate);
  device.memoryPeak =
      number(root, "memory_bandwidth", source, true, 0, 1e3, kMaxRate);
  auto curves = root.find("matmul_size_curve");
  if (curves != root.end()) {
    const char *shape = "'matmul_size_curve' must map thread counts to "
                        "non-empty arrays of [size, FLOP/s] pairs";
    if (!curves->is_object() || curves->empty())
      fail(source, shape);
    for (const auto &[key, points] : curves->items()) {
      char *end = nullptr;
      long threads = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || threads < 1 || threads > 4096 ||
          !points.is_array() || points.empty())
        fail(source, shape);
      DeviceModel::Curve &curve =
          device.matmulCurves[static_cast<int>(threads)];
      for (const nlohmann::json &point : points) {
        if (!point.is_array() || point.size() != 2 || !point[0].is_number() ||
            !point[1].is_number())
          fail(source, shape);
        double size = point[0].get<double>(), rate = point[1].get<double>();
        if (!(size >= 1 && size <= 1e9) || !(rate >= 1e3 && rate <= kMaxRate))
          fail(source, "'matmul_size_curve' needs sizes in [1, 1e9] and "
                       "rates in [1e3, 1e18]");
        if (!curve.empty() && size <= curve.back().first)
          fail(source, "'matmul_size_curve' sizes must ascend");
        curve.emplace_back(size, rate);
      }
    }
  }
  device.cacheBytes = static_cast<int64_t>(
      number(root, "cache_bytes", source, false, 0, 0, 1e12));
  device.cachePeak = number(root, "cache_bandwidth", source,
                            device.cacheBytes > 0, 0, 1e3, kMaxRate);
  device.matmulEfficiency =
      number(root, "matmul_efficiency", source, false, 1, 1e-3, 1);
  device.vectorEfficiency =
      number(root, "vector_efficiency", source, false, 1, 1e-3, 1);
  device.memoryEfficiency =
      number(root, "memory_efficiency", source, false, 1, 1e-3, 1);
  device.kernelOverhead =
      number(root, "kernel_overhead_s", source, false, 0, 0, 1);
  device.memoryBytes = static_cast<int64_t>(
      number(root, "memory_bytes", source, false, 0, 0, 1e18));
  device.hostVectorFlops = number(root, "host_vector_flops", source, false,
                                  device.vectorPeak, 1e3, kMaxRate);
  device.hostMemoryBandwidth = number(root, "host_memory_bandwidth", source,
                                      false, device.memoryPeak, 1e3, kMaxRate);
  double cores = number(root, "cores", source, false, 0, 0, 4096);
  if (std::floor(cores) != cores)
    fail(source, "'cores' must be a whole number");
  device.cores = static_cast<int>(cores);
  auto algorithm = root.find("algorithm");
  if (algorithm != root.end()) {
    std::string text =
        algorithm->is_string() ? algorithm->get<std::string>() : std::string();
    std::optional<CollectiveAlgorithm> parsed = parseAlgorithm(text);
    if (!parsed)
      fail(source, "'algorithm' must be auto, ring, tree or direct");
    device.algorithm = *parsed;
  }
  auto usesCores = root.find("collectives_use_cores");
  if (usesCores != root.end()) {
    if (!usesCores->is_boolean())
      fail(source, "'collectives_use_cores' must be true or false");
    device.collectivesUseCores = usesCores->get<bool>();
  }
  if (device.collectivesUseCores && device.cores == 0)
    fail(source, "'collectives_use_cores' needs 'cores'");
  return device;
}

DeviceModel readDeviceModel(const std::string &path) {
  return parseDeviceModel(
      readRegularFile(path, kMaxDeviceFileBytes, "the device model"), path);
}

} // namespace zerosbp::runtime::sim
