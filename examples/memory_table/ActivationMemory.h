//===- ActivationMemory.h - transformer activations per GPU -----*- C++ -*-===//
//
// The activation memory of a GPT-2 style transformer per data-parallel rank,
// with and without activation checkpointing, from Korthikanti et al.,
// "Reducing Activation Recomputation in Large Transformer Models" (MLSys
// 2023, arXiv:2205.05198), equation 1 and section 4.1, without tensor or
// sequence parallelism: 16-bit activations, s the sequence length, b the
// micro-batch per rank, h the hidden size, a the heads, L the layers.
// ZeroSBP's zero-remat keeps each checkpointed block's input and recomputes
// the rest (docs/design.md#activation-checkpointing).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_EXAMPLES_MEMORY_TABLE_ACTIVATIONMEMORY_H
#define ZEROSBP_EXAMPLES_MEMORY_TABLE_ACTIVATIONMEMORY_H

#include <cstdint>

namespace zerosbp::examples::memory {

struct TransformerShape {
  int64_t layers, hidden, heads, seq, microBatch;
};

/// One layer's activations: s b h (34 + 5 a s / h) bytes (their eq. 1).
double layerActivationBytes(const TransformerShape &shape);
/// Every layer's activations, kept from the forward to the backward.
double activationBytes(const TransformerShape &shape);
/// With every layer checkpointed: each keeps its 16-bit input, 2 s b h
/// bytes, and one layer's activations are live while it is recomputed:
/// 2 s b h L + s b h (34 + 5 a s / h) bytes (their section 4.1).
double checkpointedActivationBytes(const TransformerShape &shape);

} // namespace zerosbp::examples::memory

#endif // ZEROSBP_EXAMPLES_MEMORY_TABLE_ACTIVATIONMEMORY_H
