//===- ModelData.h - initial parameters and per-step inputs -----*- C++ -*-===//
//
// Where the numbers a run starts from come from: parameters from a directory
// of .npy files named by parameter (PyTorch names and layouts) or from each
// variable's declared init; inputs from a directory with one .npy per graph
// input (a leading step axis: step s reads row s) or synthetic, seeded data.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_TRAIN_MODELDATA_H
#define ZEROSBP_RUNTIME_TRAIN_MODELDATA_H

#include "runtime/io/Npy.h"
#include "runtime/plan/Plan.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zerosbp::runtime {

class InitialModel {
public:
  /// Reads `initDir` (when set) for every parameter that is not a copy of
  /// another; throws naming the missing or mis-shaped file.
  InitialModel(const Plan &plan, const std::optional<std::string> &initDir,
               uint64_t seed);
  /// Takes every parameter that is not a copy of another from `values`
  /// (model tensors by name, row-major); throws naming a missing or
  /// mis-sized one.
  InitialModel(const Plan &plan,
               std::map<std::string, std::vector<double>> values);
  /// The model tensor variable `variable` starts from (row-major).
  std::vector<double> valuesOf(const PlanVariable &variable) const;

private:
  const Plan &plan;
  uint64_t seed;
  std::map<std::string, std::vector<double>> loaded;
};

class InputFeed {
public:
  /// Checks `dataDir` (when set) against the plan's inputs and `steps`.
  InputFeed(const Plan &plan, const std::optional<std::string> &dataDir,
            int64_t steps, uint64_t seed);
  /// The global value of input `index` in step `step` (0-based).
  std::vector<double> globalInput(int index, int64_t step) const;
  /// Global elements per step of the labels the loss reads (tokens).
  int64_t tokensPerStep() const { return tokens; }

private:
  const Plan &plan;
  uint64_t seed;
  std::vector<NpyArray> arrays;      // One per input when reading a directory.
  std::vector<int64_t> integerBound; // Exclusive bound of synthetic ids.
  int64_t tokens = 0;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_TRAIN_MODELDATA_H
