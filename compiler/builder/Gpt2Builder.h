//===- Gpt2Builder.h - GPT-2 as in DeepSpeed's tutorial ------*- C++ -*-===//
//
// The model zero-compile builds from its GPT-2 flags and presets, and the
// examples and benchmarks use.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_BUILDER_GPT2BUILDER_H
#define ZEROSBP_COMPILER_BUILDER_GPT2BUILDER_H

#include "compiler/builder/GraphBuilder.h"

#include <optional>
#include <utility>

namespace zerosbp {

struct Gpt2Config {
  int64_t vocab = 50257;
  int64_t seqLen = 1024;
  int64_t embed = 768;
  int64_t heads = 12;
  int64_t layers = 12;
  int64_t batch = 8;
  /// Activation checkpointing: every `checkpointLayers` consecutive blocks
  /// form one segment, recomputed in the backward (Megatron's
  /// --checkpoint-activations with --checkpoint-num-layers); 0: none.
  int64_t checkpointLayers = 0;
  /// Without checkpointLayers: the first `checkpointedBlocks` blocks are
  /// checkpointed, one segment each (zero-compile's activation memory
  /// budget picks how many).
  int64_t checkpointedBlocks = 0;
  /// Megatron's tensor parallelism over the builder's model axis
  /// (GraphBuilder::setModelAxis) of this many ranks; 1: none. Needs the
  /// hidden size, the head count and the vocabulary to divide by it
  /// (checkModelParallel).
  int64_t modelParallel = 1;
  /// Pipeline stages the blocks are cut into (Megatron's pipeline
  /// parallelism; 1: none): the embedding on the first, the final layer
  /// norm, the tied LM head and the loss on the last, the blocks between
  /// them balanced by their FLOPs (pipelineCut).
  int64_t pipelineStages = 1;
  /// Model chunks per pipeline stage (Megatron's virtual pipeline stages):
  /// the blocks are cut into pipelineStages * virtualStages ranges, range v
  /// marked as virtual stage v, which runs on stage v mod pipelineStages.
  int64_t virtualStages = 1;

  /// Presets: "tiny" (tests), "small" (124M), "medium" (350M), "large"
  /// (774M), "xl" (1.5B, DeepSpeed's Megatron GPT-2 tutorial).
  static std::optional<Gpt2Config> preset(llvm::StringRef name);

  /// Parameters of the model (the LM head is tied to the token embedding):
  /// V E + T E + L (12 E^2 + 13 E) + 2 E.
  int64_t numParameters() const;
  /// numParameters(), or nullopt where a product or sum overflows int64.
  std::optional<int64_t> checkedNumParameters() const;

  /// Why modelParallel cannot lay this model out, or empty: each rank
  /// computes whole heads and an equal part of the hidden size and of the
  /// vocabulary.
  std::string checkModelParallel() const;

  /// Why pipelineStages and virtualStages cannot cut this model, or empty:
  /// every virtual stage needs at least one block.
  std::string checkPipeline() const;
  /// The first block of each virtual pipeline stage: blocks
  /// [cut[v], cut[v + 1]) are virtual stage v. Contiguous and balanced: the
  /// most FLOPs per token of any stage, counting the embedding on the first
  /// stage and the LM head on the last, is as small as it can be.
  llvm::SmallVector<int64_t> pipelineCut() const;

  /// A tensor of the graph as the product of its sizes, so that a caller
  /// can check the product for overflow before anything computes it.
  struct Tensor {
    llvm::StringRef name;
    llvm::SmallVector<int64_t, 4> factors;
    int64_t elementBytes;
  };
  /// The graph's largest tensors of each kind (the biggest weight, the
  /// embeddings, the tokens, the MLP activation, the attention scores, the
  /// logits). Every other tensor of the graph, and every gradient, state
  /// and shard the pipeline derives, is at most one of these, and every size
  /// product the builder computes is a partial product of one.
  llvm::SmallVector<Tensor> largestTensors() const;
};

/// GPT-2's forward graph returning the mean next-token loss. Inputs `tokens`
/// and `labels` (batch, seq) i64; parameter names follow Hugging Face's
/// GPT2LMHeadModel (`wte`, `wpe`, `h.<i>.ln_1`, `h.<i>.attn.c_attn`,
/// `h.<i>.attn.c_proj`, `h.<i>.ln_2`, `h.<i>.mlp.c_fc`, `h.<i>.mlp.c_proj`,
/// `ln_f`) with torch.nn.Linear layouts, but for c_attn, whose weight is
/// (3, E, E) and bias (3, E): q, k and v each a (E, E) Linear, so that
/// tensor parallelism splits each on its output dim and every rank holds
/// whole heads of all three. With modelParallel > 1 the layout is
/// Megatron's (docs/design.md#tensor-parallelism): c_attn and mlp.c_fc
/// column-parallel, the c_projs row-parallel, the token embedding (and
/// the tied LM head) split by vocabulary.
mlir::Value buildGpt2(GraphBuilder &builder, const Gpt2Config &config);

/// The same graph for inference: its logits (batch, seq, vocab) and its
/// loss, both returned.
std::pair<mlir::Value, mlir::Value>
buildGpt2Inference(GraphBuilder &builder, const Gpt2Config &config);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_BUILDER_GPT2BUILDER_H
