//===- ReductionChecks.cpp - the checks of reduce_sum, reduce_mean --------===//

#include "runtime/kernels/ReductionChecks.h"

namespace zerosbp::runtime::checks {

ReduceShape checkReduce(std::string_view op, const AttrMap &attrs,
                        const Tensors &operands, const Tensors &results,
                        bool mean) {
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectFloat(op, input, "input");
  expectFloat(op, result, "result");
  int64_t rank = input.rank();
  ReduceShape reduce{std::vector<bool>(static_cast<size_t>(rank), false), 1,
                     1.0};
  for (int64_t axis : attrs.getInts("axes")) {
    int64_t d = normalizeAxis(op, axis, rank);
    if (reduce.reduced[d])
      fail(op, "axis " + std::to_string(axis) + " is listed twice");
    reduce.reduced[d] = true;
  }
  bool keepdim = attrs.flag("keepdim");

  std::vector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduce.reduced[d])
      reduce.reducedCount *= input.shape[d];
    if (!reduce.reduced[d] || keepdim)
      shape.push_back(reduce.reduced[d] ? 1 : input.shape[d]);
  }
  expectShape(op, result, shape, "result");

  if (mean)
    reduce.divisor = countOf(op, attrs, reduce.reducedCount);
  return reduce;
}

} // namespace zerosbp::runtime::checks
