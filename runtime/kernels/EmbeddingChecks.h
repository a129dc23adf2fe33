//===- EmbeddingChecks.h - the checks of embedding and its grad -*- C++ -*-===//
//
// The table's checks only: the ids' values are checked by each backend where
// they live, the CPU before the shape of the rows, the CUDA kernels after it
// (runtime/cuda/README.md).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_EMBEDDINGCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_EMBEDDINGCHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// The (vocab, dim) of a checked embedding table.
struct TableShape {
  int64_t vocab;
  int64_t dim;
};

/// nn.embedding up to its ids: a float (vocab, dim) table and a float result.
TableShape checkEmbeddingTable(std::string_view op, const Tensors &operands,
                               const Tensors &results);

/// nn.embedding_grad up to its ids: a float grad_output and a float result
/// of shape (vocab_size, dim).
TableShape checkEmbeddingGradTable(std::string_view op, const AttrMap &attrs,
                                   const Tensors &operands,
                                   const Tensors &results);

/// The message of an id outside [0, vocab).
ValueMessage idMessage(int64_t vocab);

/// `ids.shape + [dim]`: the shape of the rows the ids select.
std::vector<int64_t> rowsShape(const TensorRef &ids, int64_t dim);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_EMBEDDINGCHECKS_H
