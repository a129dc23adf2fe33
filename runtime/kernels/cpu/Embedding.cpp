//===- Embedding.cpp - embedding lookup and its gradient ------------------===//
//
// On a table split by vocabulary each rank looks up the ids its rows hold
// and gives zeros for the others, and its gradient adds only those ids'
// rows (TableShape::localRow): summed over the model axis, the lookups are
// the whole table's.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/EmbeddingChecks.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/Support.h"

namespace zerosbp::runtime::cpu {

namespace {
/// The ids as int64, each checked against [0, vocab).
std::vector<int64_t> checkedIds(std::string_view op, const TensorRef &ids,
                                int64_t vocab) {
  expectIndex(op, ids, "ids");
  std::vector<int64_t> values = readIndices(ids);
  for (int64_t id : values)
    if (id < 0 || id >= vocab)
      fail(op, checks::idMessage(vocab).about(id));
  return values;
}
} // namespace

void embeddingKernel(const AttrMap &attrs, const Tensors &operands,
                     const Tensors &results) {
  constexpr std::string_view op = "nn.embedding";
  checks::TableShape shape =
      checks::checkEmbeddingTable(op, attrs, operands, results);
  int64_t dim = shape.dim;
  const TensorRef &table = operands[0], &result = results[0];
  std::vector<int64_t> ids = checkedIds(op, operands[1], shape.vocab);
  expectShape(op, result, checks::rowsShape(operands[1], dim), "result");

  bool separate = overlapsAny(result, operands);
  ByteOutput out(result, separate);
  auto count = static_cast<int64_t>(ids.size());
  if (table.dtype == result.dtype) {
    size_t rowBytes = static_cast<size_t>(dim) * dtypeBytes(table.dtype);
    const char *from = static_cast<const char *>(table.data);
    for (int64_t t = 0; t < count; ++t) {
      int64_t row = shape.localRow(ids[t]);
      // Zero bytes are 0.0 in every float type.
      if (row < 0)
        std::memset(out.data() + t * rowBytes, 0, rowBytes);
      else
        std::memcpy(out.data() + t * rowBytes, from + row * rowBytes, rowBytes);
    }
  } else {
    std::vector<float> values(static_cast<size_t>(dim));
    TensorRef target = result;
    target.data = out.data();
    for (int64_t t = 0; t < count; ++t) {
      int64_t row = shape.localRow(ids[t]);
      if (row < 0)
        std::fill(values.begin(), values.end(), 0.0f);
      else
        widen(table, row * dim, dim, values.data());
      narrow(values.data(), dim, target, t * dim);
    }
  }
  out.finish();
}

void embeddingGradKernel(const AttrMap &attrs, const Tensors &operands,
                         const Tensors &results) {
  constexpr std::string_view op = "nn.embedding_grad";
  checks::TableShape shape =
      checks::checkEmbeddingGradTable(op, attrs, operands, results);
  int64_t dim = shape.dim;
  const TensorRef &gradOutput = operands[0], &result = results[0];
  std::vector<int64_t> ids = checkedIds(op, operands[1], shape.vocab);
  expectShape(op, gradOutput, checks::rowsShape(operands[1], dim),
              "grad_output");

  // Rows accumulate in the order of the ids: deterministic.
  FloatInput dy(gradOutput);
  FloatOutput out(result, overlapsAny(result, operands));
  float *table = out.data();
  std::fill(table, table + shape.rows * dim, 0.0f);
  auto count = static_cast<int64_t>(ids.size());
  for (int64_t t = 0; t < count; ++t) {
    int64_t row = shape.localRow(ids[t]);
    if (row < 0)
      continue;
    float *to = table + row * dim;
    const float *from = dy.data() + t * dim;
    for (int64_t j = 0; j < dim; ++j)
      to[j] += from[j];
  }
  out.finish();
}

} // namespace zerosbp::runtime::cpu
