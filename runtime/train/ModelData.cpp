//===- ModelData.cpp - initial parameters and per-step inputs -------------===//

#include "runtime/train/ModelData.h"

#include "runtime/core/Error.h"
#include "runtime/core/Tensor.h"
#include "runtime/exec/Distribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace zerosbp::runtime {

namespace {

/// Rounds `values` through `type`, as storing them in it would.
std::vector<double> roundThrough(DType type, std::vector<double> values) {
  TensorRef scratch;
  std::vector<unsigned char> bytes(values.size() * dtypeBytes(type));
  scratch.data = bytes.data();
  scratch.dtype = type;
  scratch.shape = {static_cast<int64_t>(values.size())};
  storeElements(scratch, values);
  return loadElements(scratch);
}

/// "<path>: element <i> (<where>) is nan; <what> must be finite": a NaN or
/// Inf read from a file would train on silently (docs/runtime.md).
[[noreturn]] void nonfiniteError(const std::string &path, int64_t element,
                                 const std::string &where, double value,
                                 const char *what) {
  throw RuntimeError(path + ": element " + std::to_string(element) + where +
                     " is " +
                     (std::isnan(value) ? "nan"
                      : value > 0       ? "inf"
                                        : "-inf") +
                     "; " + what + " must be finite");
}

uint64_t mix(uint64_t value) {
  value ^= value >> 33;
  value *= 0xff51afd7ed558ccdull;
  value ^= value >> 33;
  value *= 0xc4ceb9fe1a85ec53ull;
  return value ^ (value >> 33);
}

} // namespace

InitialModel::InitialModel(const Plan &plan,
                           const std::optional<std::string> &initDir,
                           uint64_t seed)
    : plan(plan), seed(seed) {
  if (!initDir)
    return;
  for (const PlanVariable &variable : plan.variables) {
    if (variable.role != Role::Param || variable.copyOf)
      continue;
    std::string path = *initDir + "/" + variable.name + ".npy";
    NpyArray array = readNpy(path);
    if (array.shape != variable.modelShape())
      throw RuntimeError(path + ": shape " + npyShapeText(array.shape) +
                         ", but parameter '" + variable.name + "' is " +
                         npyShapeText(variable.modelShape()));
    if (!isFloat(array.dtype))
      throw RuntimeError(path + ": expected floating-point values");
    std::vector<double> values(array.numel());
    for (int64_t i = 0; i < array.numel(); ++i) {
      values[i] = npyElement(array, i);
      if (!std::isfinite(values[i]))
        nonfiniteError(path, i, "", values[i], "parameters");
    }
    loaded[variable.name] = std::move(values);
  }
}

InitialModel::InitialModel(const Plan &plan,
                           std::map<std::string, std::vector<double>> values)
    : plan(plan), seed(0), loaded(std::move(values)) {
  for (const PlanVariable &variable : plan.variables) {
    if (variable.role != Role::Param || variable.copyOf)
      continue;
    auto it = loaded.find(variable.name);
    if (it == loaded.end())
      throw RuntimeError("no value for parameter '" + variable.name + "'");
    int64_t expected = numElements(variable.modelShape());
    if (static_cast<int64_t>(it->second.size()) != expected)
      throw RuntimeError("parameter '" + variable.name + "' has " +
                         std::to_string(expected) + " elements, got " +
                         std::to_string(it->second.size()));
  }
}

std::vector<double> InitialModel::valuesOf(const PlanVariable &variable) const {
  if (variable.copyOf) {
    const PlanVariable *source = plan.findVariable(*variable.copyOf);
    return roundThrough(source->dtype, valuesOf(*source));
  }
  auto it = loaded.find(variable.name);
  if (it != loaded.end())
    return it->second;
  return initialValues(variable, seed);
}

InputFeed::InputFeed(const Plan &plan,
                     const std::optional<std::string> &dataDir, int64_t steps,
                     uint64_t seed)
    : plan(plan), seed(seed) {
  // Synthetic ids stay below every table and class count that reads them.
  integerBound.assign(plan.inputs.size(), std::numeric_limits<int64_t>::max());
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    // Reshapes have no instruction: a view of the input shares its bytes.
    // A layout that splits the input further (a model axis slicing the
    // labels, a micro-batch's rows under gradient accumulation) reads it
    // through the slice's result.
    const PlanValue &input = plan.values[plan.inputs[i].value];
    std::set<int> slices;
    // The buffers of the slices' results, which views of them share.
    std::set<int> sliceBuffers;
    auto readsInput = [&](int id) {
      const PlanValue &value = plan.values[id];
      return (value.buffer == input.buffer && value.offset == input.offset) ||
             slices.count(id) || sliceBuffers.count(value.buffer);
    };
    for (const Instruction &instruction : plan.instructions) {
      if ((instruction.op == "shard.all_slice" ||
           instruction.op == "nn.slice" || instruction.op == "nn.reshape") &&
          readsInput(instruction.operands[0])) {
        slices.insert(instruction.results[0]);
        sliceBuffers.insert(plan.values[instruction.results[0]].buffer);
      }
      // The vocabulary-parallel loss reads its labels third.
      size_t ids = instruction.op == "nn.cross_entropy_sums" ? 2 : 1;
      if (instruction.kind != InstructionKind::Kernel ||
          instruction.operands.size() <= ids ||
          !readsInput(instruction.operands[ids]))
        continue;
      const std::vector<int64_t> &source =
          plan.values[instruction.operands[0]].shape;
      // A table or logits split by vocabulary hold part of it; the ids range
      // over the whole (`global_shape`).
      const std::vector<int64_t> &whole =
          instruction.attrs.has("global_shape")
              ? instruction.attrs.getInts("global_shape")
              : source;
      if (instruction.op == "nn.embedding")
        integerBound[i] = std::min(integerBound[i], whole.front());
      if (instruction.op == "nn.cross_entropy" ||
          instruction.op == "nn.cross_entropy_sums") {
        integerBound[i] = std::min(integerBound[i], whole.back());
        tokens = numElements(plan.inputs[i].globalShape);
      }
    }
    if (integerBound[i] == std::numeric_limits<int64_t>::max())
      integerBound[i] = 2;
  }
  if (tokens == 0 && !plan.inputs.empty() &&
      !plan.inputs[0].globalShape.empty())
    tokens = plan.inputs[0].globalShape[0];
  if (!dataDir)
    return;
  for (const PlanInput &input : plan.inputs) {
    std::string path = *dataDir + "/" + input.name + ".npy";
    NpyArray array = readNpy(path);
    std::vector<int64_t> expected = input.globalShape;
    expected.insert(expected.begin(), steps);
    std::vector<int64_t> perStep(
        array.shape.begin() + (array.shape.empty() ? 0 : 1), array.shape.end());
    if (array.shape.empty() || perStep != input.globalShape)
      throw RuntimeError(path + ": shape " + npyShapeText(array.shape) +
                         ", expected (steps, ...) = " + npyShapeText(expected) +
                         " for input '" + input.name + "'");
    if (array.shape[0] < steps)
      throw RuntimeError(path + ": holds " + std::to_string(array.shape[0]) +
                         " steps, the run needs " + std::to_string(steps));
    if (isFloat(input.dtype) != isFloat(array.dtype))
      throw RuntimeError(path + ": " +
                         (isFloat(input.dtype) ? "floating-point" : "integer") +
                         " data expected for input '" + input.name + "'");
    // The rows this run reads; step s (1-based) reads row s - 1.
    int64_t perRow = numElements(input.globalShape);
    if (isFloat(array.dtype))
      for (int64_t i = 0; i < steps * perRow; ++i) {
        double value = npyElement(array, i);
        if (!std::isfinite(value))
          nonfiniteError(path, i,
                         " (step " + std::to_string(i / perRow + 1) + ")",
                         value, "inputs");
      }
    arrays.push_back(std::move(array));
  }
}

std::vector<double> InputFeed::globalInput(int index, int64_t step) const {
  const PlanInput &input = plan.inputs[index];
  int64_t count = numElements(input.globalShape);
  std::vector<double> values(count);
  if (!arrays.empty()) {
    const NpyArray &array = arrays[index];
    for (int64_t i = 0; i < count; ++i)
      values[i] = npyElement(array, step * count + i);
    return values;
  }
  uint64_t state = mix(seed * 0x9e3779b97f4a7c15ull + index * 1000003ull +
                       static_cast<uint64_t>(step));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t draw = mix(state + static_cast<uint64_t>(i));
    if (isFloat(input.dtype)) // Uniform on [-1, 1).
      values[i] = static_cast<double>(draw >> 11) * 0x1.0p-52 - 1.0;
    else
      values[i] = static_cast<double>(
          draw % static_cast<uint64_t>(integerBound[index]));
  }
  return values;
}

} // namespace zerosbp::runtime
