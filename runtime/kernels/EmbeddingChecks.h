//===- EmbeddingChecks.h - the checks of embedding and its grad -*- C++ -*-===//
//
// The table's checks only: the ids' values are checked by each backend where
// they live, the CPU before the shape of the rows, the CUDA kernels after it
// (runtime/cuda/README.md). A table split by vocabulary (tensor parallelism)
// holds a block of the whole table's rows (docs/plan-format.md,
// "nn.embedding"); which ids it holds, and at which row, is
// TableShape::localRow, shared by the CPU and the CUDA kernels.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_EMBEDDINGCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_EMBEDDINGCHECKS_H

#include "runtime/kernels/HostDevice.h"
#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// A checked embedding table, or table gradient, on this rank: `rows` rows
/// of `dim`, global rows [begin, begin + rows) of a (vocab, dim) table.
/// Unsplit: begin 0, rows = vocab.
struct TableShape {
  /// The whole table's rows: every id must lie in [0, vocab).
  int64_t vocab;
  int64_t dim;
  int64_t begin;
  int64_t rows;

  /// The local row of id `id`, or -1 where another rank holds it (or the id
  /// is out of range): ids of other ranks give zeros and add nothing.
  ZEROSBP_HOST_DEVICE int64_t localRow(int64_t id) const {
    int64_t row = id - begin;
    return row >= 0 && row < rows ? row : -1;
  }
};

/// nn.embedding up to its ids: a float (rows, dim) table and a float result;
/// `global_shape` and `shard_offsets` place the table's rows.
TableShape checkEmbeddingTable(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands, const Tensors &results);

/// nn.embedding_grad up to its ids: a float grad_output and a float result
/// of shape (vocab_size, dim); `global_shape` and `shard_offsets` place the
/// result's rows.
TableShape checkEmbeddingGradTable(std::string_view op, const AttrMap &attrs,
                                   const Tensors &operands,
                                   const Tensors &results);

/// The message of an id outside [0, vocab).
ValueMessage idMessage(int64_t vocab);

/// `ids.shape + [dim]`: the shape of the rows the ids select.
std::vector<int64_t> rowsShape(const TensorRef &ids, int64_t dim);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_EMBEDDINGCHECKS_H
