//===- VocabParallelLossChecks.cpp - checks of the split cross-entropy ----===//

#include "runtime/kernels/VocabParallelLossChecks.h"

namespace zerosbp::runtime::checks {

namespace {
void expectF32(std::string_view op, const TensorRef &tensor, const char *what) {
  if (tensor.dtype != DType::F32)
    fail(op, std::string(what) + " has element type " +
                 dtypeName(tensor.dtype) + ", expected f32");
}

/// The sums of exp may be f64: the loss and the gradient then take the sum
/// as the unsplit cross-entropy holds it, and give its bits.
void expectSum(std::string_view op, const TensorRef &tensor, const char *what) {
  if (tensor.dtype != DType::F32 && tensor.dtype != DType::F64)
    fail(op, std::string(what) + " has element type " +
                 dtypeName(tensor.dtype) + ", expected f32 or f64");
}

/// The logits as rows x classes, their classes placed by `global_shape` and
/// `shard_offsets` (a block of the whole logits, as nn.dropout's), `count`
/// the rows; the leading shape is returned in `leading`.
ClassBlock placeClasses(std::string_view op, const AttrMap &attrs,
                        const TensorRef &logits,
                        std::vector<int64_t> &leading) {
  expectFloat(op, logits, "logits");
  if (logits.rank() < 1)
    fail(op, "logits must have a class dim");
  leading.assign(logits.shape.begin(), logits.shape.end() - 1);
  BlockPlace place = checkBlockPlace(op, attrs, logits.shape);
  int64_t rows = 1;
  for (int64_t dim : leading)
    rows *= dim;
  return {rows, logits.shape.back(), place.global.back(), place.offsets.back(),
          static_cast<double>(rows)};
}

/// Operand or result `what`: f32 (or, for a sum, f64) of `shape`.
void expectRows(std::string_view op, const TensorRef &tensor,
                const std::vector<int64_t> &shape, const char *what,
                bool sum = false) {
  if (sum)
    expectSum(op, tensor, what);
  else
    expectF32(op, tensor, what);
  expectShape(op, tensor, shape, what);
}
} // namespace

ClassBlock checkCrossEntropyMax(std::string_view op, const AttrMap &attrs,
                                const Tensors &operands,
                                const Tensors &results) {
  expectArity(op, operands, results, 1, 1);
  std::vector<int64_t> leading;
  ClassBlock block = placeClasses(op, attrs, operands[0], leading);
  expectRows(op, results[0], leading, "result");
  return block;
}

ClassBlock checkCrossEntropySums(std::string_view op, const AttrMap &attrs,
                                 const Tensors &operands,
                                 const Tensors &results) {
  expectArity(op, operands, results, 3, 2);
  std::vector<int64_t> leading;
  ClassBlock block = placeClasses(op, attrs, operands[0], leading);
  expectRows(op, operands[1], leading, "max");
  expectIndex(op, operands[2], "labels");
  expectShape(op, operands[2], leading, "labels");
  expectRows(op, results[0], leading, "sumexp", /*sum=*/true);
  expectRows(op, results[1], leading, "label_logit");
  return block;
}

ClassBlock checkCrossEntropyLoss(std::string_view op, const AttrMap &attrs,
                                 const Tensors &operands,
                                 const Tensors &results) {
  expectArity(op, operands, results, 3, 1);
  const std::vector<int64_t> &shape = operands[0].shape;
  expectRows(op, operands[0], shape, "max");
  expectRows(op, operands[1], shape, "sumexp", /*sum=*/true);
  expectRows(op, operands[2], shape, "label_logit");
  expectScalar(op, results[0], "result");
  int64_t rows = operands[0].numel();
  return {rows, 0, 0, 0, countOf(op, attrs, rows)};
}

ClassBlock checkCrossEntropySplitGrad(std::string_view op, const AttrMap &attrs,
                                      const Tensors &operands,
                                      const Tensors &results) {
  expectArity(op, operands, results, 5, 1);
  expectScalar(op, operands[0], "grad_loss");
  const TensorRef &logits = operands[1];
  std::vector<int64_t> leading;
  ClassBlock block = placeClasses(op, attrs, logits, leading);
  expectRows(op, operands[2], leading, "max");
  expectRows(op, operands[3], leading, "sumexp", /*sum=*/true);
  expectIndex(op, operands[4], "labels");
  expectShape(op, operands[4], leading, "labels");
  expectFloat(op, results[0], "result");
  expectShape(op, results[0], logits.shape, "result");
  block.count = countOf(op, attrs, block.rows);
  return block;
}

} // namespace zerosbp::runtime::checks
