//===- DeepSpeedEstimate.h - DeepSpeed's model-state estimates --*- C++ -*-===//
//
// DeepSpeed's estimate_zero2_model_states_mem_needs and
// estimate_zero3_model_states_mem_needs (deepspeed/runtime/zero/
// stage_1_and_2.py and stage3.py): the host and device bytes per rank of a
// model's parameters, gradients and optimizer states under fp16 mixed
// precision with Adam, for every offload combination, with DeepSpeed's 1.5
// buffer factor on host memory. zero-compile's report prints them next to
// what the plan holds (docs/design.md#offload).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_ESTIMATOR_DEEPSPEEDESTIMATE_H
#define ZEROSBP_COMPILER_ESTIMATOR_DEEPSPEEDESTIMATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zerosbp {

struct DeepSpeedEstimate {
  /// DeepSpeed's option string, e.g. "offload_param=cpu,
  /// offload_optimizer=cpu, zero_init=1".
  std::string options;
  int64_t hostBytes = 0;
  int64_t deviceBytes = 0;
};

/// estimate_zero2_model_states_mem_needs for cpu_offload true and false.
std::vector<DeepSpeedEstimate>
zero2Estimates(int64_t totalParams, int64_t gpusPerNode, int64_t nodes);
/// estimate_zero3_model_states_mem_needs for its five combinations, in
/// DeepSpeed's order.
std::vector<DeepSpeedEstimate> zero3Estimates(int64_t totalParams,
                                              int64_t largestLayerParams,
                                              int64_t gpusPerNode,
                                              int64_t nodes);

/// The parameters of the largest layer: DeepSpeed sums each module's own
/// parameters; here a module is a parameter's name up to its last '.'.
int64_t largestLayerParams(mlir::func::FuncOp func);

/// Both tables for `totalParams` on `gpus` ranks of one node, as JSON.
llvm::json::Object deepSpeedEstimatesJson(int64_t totalParams,
                                          int64_t largestLayer, int64_t gpus);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_ESTIMATOR_DEEPSPEEDESTIMATE_H
