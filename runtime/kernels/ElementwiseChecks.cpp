//===- ElementwiseChecks.cpp - the checks of elementwise ops --------------===//

#include "runtime/kernels/ElementwiseChecks.h"

#include <algorithm>

namespace zerosbp::runtime::checks {

std::vector<int64_t> checkBroadcast(std::string_view op, const TensorRef &lhs,
                                    const TensorRef &rhs,
                                    const TensorRef &result) {
  expectFloat(op, lhs, "lhs");
  expectFloat(op, rhs, "rhs");
  expectFloat(op, result, "result");
  size_t rank = std::max(lhs.shape.size(), rhs.shape.size());
  std::vector<int64_t> shape(rank);
  for (size_t d = 0; d < rank; ++d) {
    size_t fromEnd = rank - d;
    int64_t a =
        fromEnd <= lhs.shape.size() ? lhs.shape[lhs.shape.size() - fromEnd] : 1;
    int64_t b =
        fromEnd <= rhs.shape.size() ? rhs.shape[rhs.shape.size() - fromEnd] : 1;
    if (a != b && a != 1 && b != 1)
      fail(op, "shapes " + shapeString(lhs.shape) + " and " +
                   shapeString(rhs.shape) + " do not broadcast");
    shape[d] = a == 1 ? b : a;
  }
  expectShape(op, result, shape, "result");
  return shape;
}

void checkBiasAdd(std::string_view op, const Tensors &operands,
                  const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  const TensorRef &input = operands[0], &bias = operands[1];
  if (input.rank() < 1 || bias.rank() != 1 ||
      bias.shape[0] != input.shape.back())
    fail(op, "bias shape " + shapeString(bias.shape) +
                 " does not match the last dim of " + shapeString(input.shape));
}

void checkUnaryFloat(std::string_view op, const Tensors &operands,
                     const Tensors &results) {
  expectArity(op, operands, results, 1, 1);
  const TensorRef &input = operands[0], &result = results[0];
  expectFloat(op, input, "input");
  expectFloat(op, result, "result");
  expectShape(op, result, input.shape, "result");
}

void checkGradPair(std::string_view op, const Tensors &operands,
                   const Tensors &results, const char *savedName) {
  expectArity(op, operands, results, 2, 1);
  const TensorRef &gradOutput = operands[0], &saved = operands[1];
  const TensorRef &result = results[0];
  expectFloat(op, gradOutput, "grad_output");
  expectFloat(op, saved, savedName);
  expectFloat(op, result, "result");
  expectShape(op, saved, gradOutput.shape, savedName);
  expectShape(op, result, gradOutput.shape, "result");
}

} // namespace zerosbp::runtime::checks
