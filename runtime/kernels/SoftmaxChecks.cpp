//===- SoftmaxChecks.cpp - the checks of softmax and cross-entropy --------===//

#include "runtime/kernels/SoftmaxChecks.h"

#include "runtime/kernels/ElementwiseChecks.h"

namespace zerosbp::runtime::checks {

namespace {
SoftmaxLayout softmaxLayout(std::string_view op, const AttrMap &attrs,
                            const TensorRef &input) {
  int64_t rank = input.rank();
  if (rank < 1)
    fail(op, "input must have at least one dim");
  int64_t axis = normalizeAxis(op, attrs.getInt("axis", -1), rank);
  SoftmaxLayout layout{1, input.shape[axis], 1, attrs.flag("causal")};
  for (int64_t d = 0; d < axis; ++d)
    layout.outer *= input.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    layout.inner *= input.shape[d];
  if (layout.causal &&
      (axis != rank - 1 || rank < 2 || input.shape[rank - 2] != layout.size))
    fail(op, "causal needs the last axis and equal last two dims, got shape " +
                 shapeString(input.shape));
  return layout;
}

LossLayout lossLayout(std::string_view op, const AttrMap &attrs,
                      const TensorRef &logits, const TensorRef &labels) {
  expectFloat(op, logits, "logits");
  expectIndex(op, labels, "labels");
  if (logits.rank() < 1)
    fail(op, "logits must have a class dim");
  std::vector<int64_t> leading(logits.shape.begin(), logits.shape.end() - 1);
  expectShape(op, labels, leading, "labels");
  return {labels.numel(), logits.shape.back(),
          countOf(op, attrs, labels.numel())};
}
} // namespace

SoftmaxLayout checkSoftmax(std::string_view op, const AttrMap &attrs,
                           const Tensors &operands, const Tensors &results) {
  checkUnaryFloat(op, operands, results);
  return softmaxLayout(op, attrs, operands[0]);
}

SoftmaxLayout checkSoftmaxGrad(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands,
                               const Tensors &results) {
  checkGradPair(op, operands, results, "output");
  return softmaxLayout(op, attrs, operands[1]);
}

ValueMessage labelMessage(int64_t classes) {
  return {"label ",
          " is out of range for " + std::to_string(classes) + " classes"};
}

LossLayout checkCrossEntropy(std::string_view op, const AttrMap &attrs,
                             const Tensors &operands, const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  LossLayout layout = lossLayout(op, attrs, operands[0], operands[1]);
  expectFloat(op, results[0], "result");
  expectNumel(op, results[0], 1, "result");
  return layout;
}

LossLayout checkCrossEntropyGrad(std::string_view op, const AttrMap &attrs,
                                 const Tensors &operands,
                                 const Tensors &results) {
  expectArity(op, operands, results, 3, 1);
  const TensorRef &gradLoss = operands[0], &logits = operands[1];
  expectFloat(op, gradLoss, "grad_loss");
  expectNumel(op, gradLoss, 1, "grad_loss");
  LossLayout layout = lossLayout(op, attrs, logits, operands[2]);
  expectFloat(op, results[0], "result");
  expectShape(op, results[0], logits.shape, "result");
  return layout;
}

} // namespace zerosbp::runtime::checks
