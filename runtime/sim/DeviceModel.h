//===- DeviceModel.h - what one rank's device computes per second -*- C++ -*-=//
//
// A roofline per rank (docs/scale.md#the-simulator): dense matmul FLOP/s by
// operand precision, element-wise FLOP/s and memory bandwidth, each the rate
// kernels achieve (peak times an efficiency), a fixed cost per kernel, and
// the memory a rank may hold. Presets give published peaks of GPUs; a JSON
// file gives measured rates (bench/sim measures this machine's CPU).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_SIM_DEVICEMODEL_H
#define ZEROSBP_RUNTIME_SIM_DEVICEMODEL_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime::sim {

/// How a group runs a collective: NCCL's ring and tree (`auto` takes the
/// faster for an all-reduce, as NCCL's tuner does), or the direct exchange
/// of ZeroSBP's CPU backends (runtime/comm/Communicator.h).
enum class CollectiveAlgorithm { Auto, Ring, Tree, Direct };
const char *algorithmName(CollectiveAlgorithm algorithm);
/// The algorithm algorithmName names, or nullopt for other text.
std::optional<CollectiveAlgorithm> parseAlgorithm(const std::string &name);

struct DeviceModel {
  std::string name;
  /// Peak dense matmul FLOP/s with f32 operands and with f16/bf16 operands
  /// (f32 accumulation), and peak element-wise f32 FLOP/s.
  double matmulF32Peak = 0;
  double matmulF16Peak = 0;
  double vectorPeak = 0;
  /// Peak bytes per second of device memory.
  double memoryPeak = 0;
  /// Kernels whose bytes fit `cacheBytes` stream at `cachePeak` instead
  /// (a CPU's caches); 0 for none.
  int64_t cacheBytes = 0;
  double cachePeak = 0;
  /// Measured matmul FLOP/s against size, per thread count (a CPU's BLAS):
  /// a GEMM of m x n x k (per batch entry) runs at the rate interpolated at
  /// the cube root of mnk, on a log scale, clamped at the ends; f16
  /// matmuls scale with it. Empty: the flat peak times matmulEfficiency.
  using Curve = std::vector<std::pair<double, double>>;
  std::map<int, Curve> matmulCurves;
  /// Fractions of the peaks kernels achieve.
  double matmulEfficiency = 1;
  double vectorEfficiency = 1;
  double memoryEfficiency = 1;
  /// Seconds every kernel costs beyond its roofline time (launch, dispatch).
  double kernelOverhead = 0;
  /// Bytes of memory a rank has; 0 where not bounded.
  int64_t memoryBytes = 0;
  /// Kernels of an offloaded update run on the host at these rates.
  double hostVectorFlops = 0;
  double hostMemoryBandwidth = 0;
  /// CPU devices: a node's ranks share `cores`, and the rates above are one
  /// core's; 0 for a device per rank (a GPU).
  int cores = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  /// A CPU backend's collectives copy and reduce on the rank's cores, so
  /// compute that overlaps them runs at the cores they leave.
  bool collectivesUseCores = false;

  /// FLOP/s of a matmul with `operands` whose GEMMs are `size` (the cube
  /// root of mnk), computed on `share` of the device (a CPU rank's cores).
  double matmulRate(DType operands, double size = 0, double share = 1) const;
  double vectorRate() const { return vectorPeak * vectorEfficiency; }
  /// Bytes per second of a kernel that touches `bytes`.
  double memoryRate(double bytes = 1e30) const {
    return cacheBytes > 0 && bytes <= static_cast<double>(cacheBytes)
               ? cachePeak
               : memoryPeak * memoryEfficiency;
  }
};

/// The built-in devices: h100, h200, a100, v100 (SXM parts).
DeviceModel presetDevice(const std::string &name);
std::vector<std::string> presetDeviceNames();

/// A device from a JSON file (docs/scale.md#device-files); throws
/// RuntimeError ("<path>: ...") on a missing key, a value out of range or
/// text that is not JSON.
DeviceModel readDeviceModel(const std::string &path);
DeviceModel parseDeviceModel(const std::string &text,
                             const std::string &source);

} // namespace zerosbp::runtime::sim

#endif // ZEROSBP_RUNTIME_SIM_DEVICEMODEL_H
