//===- EmbeddingChecks.cpp - the checks of embedding and its grad ---------===//

#include "runtime/kernels/EmbeddingChecks.h"

namespace zerosbp::runtime::checks {

TableShape checkEmbeddingTable(std::string_view op, const Tensors &operands,
                               const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  const TensorRef &table = operands[0], &result = results[0];
  expectFloat(op, table, "table");
  expectFloat(op, result, "result");
  if (table.rank() != 2)
    fail(op, "table must be (vocab, dim), got " + shapeString(table.shape));
  return {table.shape[0], table.shape[1]};
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
  return {vocab, result.shape[1]};
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
