//===- EmbeddingChecks.cpp - the checks of embedding and its grad ---------===//

#include "runtime/kernels/EmbeddingChecks.h"

namespace zerosbp::runtime::checks {

namespace {
/// The place of a (rows, dim) table's rows in the whole table. A split of
/// dim 1 leaves every row's ids local: only the rows' offset matters.
TableShape placeRows(std::string_view op, const AttrMap &attrs,
                     const std::vector<int64_t> &shape) {
  BlockPlace place = checkBlockPlace(op, attrs, shape);
  return {place.global[0], shape[1], place.offsets[0], shape[0]};
}
} // namespace

TableShape checkEmbeddingTable(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands,
                               const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  const TensorRef &table = operands[0], &result = results[0];
  expectFloat(op, table, "table");
  expectFloat(op, result, "result");
  if (table.rank() != 2)
    fail(op, "table must be (vocab, dim), got " + shapeString(table.shape));
  return placeRows(op, attrs, table.shape);
}

TableShape checkEmbeddingGradTable(std::string_view op, const AttrMap &attrs,
                                   const Tensors &operands,
                                   const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  const TensorRef &gradOutput = operands[0], &result = results[0];
  expectFloat(op, gradOutput, "grad_output");
  expectFloat(op, result, "result");
  int64_t vocab = attrs.getInt("vocab_size");
  if (result.rank() != 2 || result.shape[0] != vocab)
    fail(op, "result shape " + shapeString(result.shape) +
                 " is not (vocab_size = " + std::to_string(vocab) + ", dim)");
  return placeRows(op, attrs, result.shape);
}

ValueMessage idMessage(int64_t vocab) {
  return {"id ", " is out of range for vocab " + std::to_string(vocab)};
}

std::vector<int64_t> rowsShape(const TensorRef &ids, int64_t dim) {
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(dim);
  return shape;
}

} // namespace zerosbp::runtime::checks
