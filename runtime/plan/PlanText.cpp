//===- PlanText.cpp - how the plan reader's messages write a plan ---------===//

#include "runtime/plan/PlanText.h"

namespace zerosbp::runtime {

std::string stagesText(const std::vector<int> &stages) {
  if (stages.empty())
    return "every stage";
  std::string text = "stages [";
  for (size_t i = 0; i < stages.size(); ++i)
    text += (i ? ", " : "") + std::to_string(stages[i]);
  return text + "]";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace zerosbp::runtime
