//===- Embedding.cpp - embedding lookup and its gradient ------------------===//

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

void embeddingKernel(const AttrMap &, const Tensors &operands,
                     const Tensors &results) {
  constexpr std::string_view op = "nn.embedding";
  auto [vocab, dim] = checks::checkEmbeddingTable(op, operands, results);
  const TensorRef &table = operands[0], &result = results[0];
  std::vector<int64_t> ids = checkedIds(op, operands[1], vocab);
  expectShape(op, result, checks::rowsShape(operands[1], dim), "result");

  bool separate = overlapsAny(result, operands);
  ByteOutput out(result, separate);
  auto count = static_cast<int64_t>(ids.size());
  if (table.dtype == result.dtype) {
    size_t rowBytes = static_cast<size_t>(dim) * dtypeBytes(table.dtype);
    const char *from = static_cast<const char *>(table.data);
    for (int64_t t = 0; t < count; ++t)
      std::memcpy(out.data() + t * rowBytes, from + ids[t] * rowBytes,
                  rowBytes);
  } else {
    std::vector<float> row(static_cast<size_t>(dim));
    TensorRef target = result;
    target.data = out.data();
    for (int64_t t = 0; t < count; ++t) {
      widen(table, ids[t] * dim, dim, row.data());
      narrow(row.data(), dim, target, t * dim);
    }
  }
  out.finish();
}

void embeddingGradKernel(const AttrMap &attrs, const Tensors &operands,
                         const Tensors &results) {
  constexpr std::string_view op = "nn.embedding_grad";
  auto [vocab, dim] =
      checks::checkEmbeddingGradTable(op, attrs, operands, results);
  const TensorRef &gradOutput = operands[0], &result = results[0];
  std::vector<int64_t> ids = checkedIds(op, operands[1], vocab);
  expectShape(op, gradOutput, checks::rowsShape(operands[1], dim),
              "grad_output");

  // Rows accumulate in the order of the ids: deterministic.
  FloatInput dy(gradOutput);
  FloatOutput out(result, overlapsAny(result, operands));
  float *table = out.data();
  std::fill(table, table + vocab * dim, 0.0f);
  auto count = static_cast<int64_t>(ids.size());
  for (int64_t t = 0; t < count; ++t) {
    float *to = table + ids[t] * dim;
    const float *from = dy.data() + t * dim;
    for (int64_t j = 0; j < dim; ++j)
      to[j] += from[j];
  }
  out.finish();
}

} // namespace zerosbp::runtime::cpu
