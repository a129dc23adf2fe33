//===- rank_attrs_test_util.h - one instruction's attributes on a rank ----===//
//
// The tests of kernels whose operand is split over a model axis (a table
// split by vocabulary, logits split by class) take each rank's
// `shard_offsets` from the executor's rankAttrs, as a run does.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_RANK_ATTRS_TEST_UTIL_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_RANK_ATTRS_TEST_UTIL_H

#include "runtime/exec/RankAttrs.h"
#include "runtime/plan/Plan.h"

#include <string>
#include <vector>

namespace zerosbp::runtime::test {

/// The attributes of one instruction `op` on `rank` of a [1, ranks]
/// hierarchy whose axis 1 splits dim `splitDim` of `globalShape`, as
/// rankAttrs gives them; `operands` and `results` are the shapes of the
/// instruction's values.
inline AttrMap rankAttrsOnModelAxis(const std::string &op, AttrMap attrs,
                                    std::vector<std::vector<int64_t>> operands,
                                    std::vector<std::vector<int64_t>> results,
                                    const std::vector<int64_t> &globalShape,
                                    int64_t splitDim, int rank, int ranks) {
  Plan plan;
  plan.source = "test.zplan";
  plan.hierarchy = {1, ranks};
  plan.world = ranks;
  Instruction instruction;
  instruction.op = op;
  auto add = [&](std::vector<int64_t> shape) {
    PlanValue value;
    value.shape = std::move(shape);
    plan.values.push_back(value);
    return static_cast<int>(plan.values.size()) - 1;
  };
  for (std::vector<int64_t> &shape : operands)
    instruction.operands.push_back(add(std::move(shape)));
  for (std::vector<int64_t> &shape : results)
    instruction.results.push_back(add(std::move(shape)));
  attrs.set("global_shape", globalShape);
  attrs.set("split_dims", std::vector<int64_t>{-1, splitDim});
  instruction.attrs = std::move(attrs);
  plan.instructions = {instruction};
  return rankAttrs(plan, rank)[0];
}

} // namespace zerosbp::runtime::test

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_RANK_ATTRS_TEST_UTIL_H
