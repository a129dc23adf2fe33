//===- PlanText.h - how the plan reader's messages write a plan -*- C++ -*-===//
//
// The plan reader and the micro-batch loop's checks name stages and shapes
// in their messages the same way (docs/plan-format.md#checks).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_PLAN_PLANTEXT_H
#define ZEROSBP_RUNTIME_PLAN_PLANTEXT_H

#include <cstdint>
#include <string>
#include <vector>

namespace zerosbp::runtime {

/// "stages [0, 1]" for an instruction's stages; "every stage" for none.
std::string stagesText(const std::vector<int> &stages);

/// "[4, 6]".
std::string shapeText(const std::vector<int64_t> &shape);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_PLAN_PLANTEXT_H
