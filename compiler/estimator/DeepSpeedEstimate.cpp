//===- DeepSpeedEstimate.cpp - DeepSpeed's model-state estimates ----------===//

#include "compiler/estimator/DeepSpeedEstimate.h"

#include "dialects/nn/IR/NNOps.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>

using namespace mlir;

namespace zerosbp {

namespace {
constexpr double kBufferFactor = 1.5; // DeepSpeed's additional_buffer_factor.

int64_t elementsOf(nn::VariableOp variable) {
  if (std::optional<ArrayRef<int64_t>> logical = variable.getLogicalShape()) {
    int64_t count = 1;
    for (int64_t dim : *logical)
      count *= dim;
    return count;
  }
  return cast<ShapedType>(variable.getResult().getType()).getNumElements();
}
} // namespace

std::vector<DeepSpeedEstimate>
zero2Estimates(int64_t totalParams, int64_t gpusPerNode, int64_t nodes) {
  double params = static_cast<double>(totalParams);
  int64_t gpus = nodes * gpusPerNode;
  std::vector<DeepSpeedEstimate> rows;
  for (bool cpuOffload : {true, false}) {
    double host, device;
    if (cpuOffload) {
      device = 2 * params;
      host = params * std::max<int64_t>(4 * gpus, 16) * kBufferFactor;
    } else {
      device = 4 * params + static_cast<int64_t>(16 * params / gpus);
      host = params * 4 * gpusPerNode * kBufferFactor;
    }
    rows.push_back(
        {std::string("offload_optimizer=") + (cpuOffload ? "cpu" : "none"),
         static_cast<int64_t>(host), static_cast<int64_t>(device)});
  }
  return rows;
}

std::vector<DeepSpeedEstimate> zero3Estimates(int64_t totalParams,
                                              int64_t largestLayerParams,
                                              int64_t gpusPerNode,
                                              int64_t nodes) {
  double params = static_cast<double>(totalParams);
  double largest = static_cast<double>(largestLayerParams);
  int64_t gpus = nodes * gpusPerNode;
  double gpusFactor = 1.0 / static_cast<double>(nodes);
  double largestMemory = 4 * largest;
  std::vector<DeepSpeedEstimate> rows;
  for (bool cpuOffload : {true, false})
    for (bool offloadParams : {true, false}) {
      if (!cpuOffload && offloadParams)
        continue;
      for (bool zeroInit : {true, false}) {
        double host, device;
        if (cpuOffload && offloadParams) {
          device = largestMemory;
          host = zeroInit
                     ? params * 18 * gpusFactor * kBufferFactor
                     : params * std::max(4.0 * gpusPerNode, 18 * gpusFactor) *
                           kBufferFactor;
        } else if (cpuOffload) {
          device = largestMemory + static_cast<int64_t>(2 * params / gpus);
          host = zeroInit
                     ? params * 16 * gpusFactor * kBufferFactor
                     : params * std::max(4.0 * gpusPerNode, 16 * gpusFactor) *
                           kBufferFactor;
        } else {
          device = largestMemory + static_cast<int64_t>(18 * params / gpus);
          host = zeroInit ? largest * 4 * gpusPerNode * kBufferFactor
                          : params * 4 * gpusPerNode * kBufferFactor;
        }
        rows.push_back(
            {std::string("offload_param=") + (offloadParams ? "cpu" : "none") +
                 ", offload_optimizer=" + (cpuOffload ? "cpu" : "none") +
                 ", zero_init=" + (zeroInit ? "1" : "0"),
             static_cast<int64_t>(host), static_cast<int64_t>(device)});
      }
    }
  return rows;
}

int64_t largestLayerParams(func::FuncOp func) {
  llvm::StringMap<int64_t> byModule;
  func.walk([&](nn::VariableOp variable) {
    if (variable.getRole() != sbp::Role::param)
      return;
    StringRef name = variable.getName();
    byModule[name.rsplit('.').first] += elementsOf(variable);
  });
  int64_t largest = 0;
  for (const auto &entry : byModule)
    largest = std::max(largest, entry.second);
  return largest;
}

llvm::json::Object deepSpeedEstimatesJson(int64_t totalParams,
                                          int64_t largestLayer, int64_t gpus) {
  auto table = [](const std::vector<DeepSpeedEstimate> &rows) {
    llvm::json::Array array;
    for (const DeepSpeedEstimate &row : rows)
      array.push_back(llvm::json::Object{{"options", row.options},
                                         {"host_bytes", row.hostBytes},
                                         {"device_bytes", row.deviceBytes}});
    return array;
  };
  return llvm::json::Object{
      {"total_params", totalParams},
      {"largest_layer_params", largestLayer},
      {"gpus_per_node", gpus},
      {"nodes", 1},
      {"zero2", table(zero2Estimates(totalParams, gpus, 1))},
      {"zero3", table(zero3Estimates(totalParams, largestLayer, gpus, 1))},
  };
}

} // namespace zerosbp
