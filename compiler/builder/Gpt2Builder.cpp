//===- Gpt2Builder.cpp - GPT-2 as in DeepSpeed's tutorial ----------------===//

#include "compiler/builder/Gpt2Builder.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace mlir;
using zerosbp::Gpt2Config;

std::optional<Gpt2Config> Gpt2Config::preset(StringRef name) {
  auto make = [](int64_t layers, int64_t embed, int64_t heads) {
    Gpt2Config config;
    config.layers = layers;
    config.embed = embed;
    config.heads = heads;
    return config;
  };
  if (name == "tiny") {
    Gpt2Config config = make(2, 64, 4);
    config.vocab = 512;
    config.seqLen = 32;
    config.batch = 4;
    return config;
  }
  return llvm::StringSwitch<std::optional<Gpt2Config>>(name)
      .Case("small", make(12, 768, 12))
      .Case("medium", make(24, 1024, 16))
      .Case("large", make(36, 1280, 20))
      .Case("xl", make(48, 1600, 16))
      .Default(std::nullopt);
}

int64_t Gpt2Config::numParameters() const {
  return vocab * embed + seqLen * embed +
         layers * (12 * embed * embed + 13 * embed) + 2 * embed;
}

std::optional<int64_t> Gpt2Config::checkedNumParameters() const {
  using llvm::checkedAdd, llvm::checkedMul;
  std::optional<int64_t> square = checkedMul(embed, embed);
  std::optional<int64_t> block =
      square ? checkedMul<int64_t>(12, *square) : std::nullopt;
  std::optional<int64_t> norms = checkedMul<int64_t>(13, embed);
  if (!block || !norms || !(block = checkedAdd(*block, *norms)) ||
      !(block = checkedMul(layers, *block)))
    return std::nullopt;
  std::optional<int64_t> total = checkedAdd(vocab, seqLen);
  if (!total || !(total = checkedAdd<int64_t>(*total, 2)) ||
      !(total = checkedMul(*total, embed)))
    return std::nullopt;
  return checkedAdd(*total, *block);
}

std::string Gpt2Config::checkModelParallel() const {
  if (modelParallel < 1)
    return "the model-parallel size must be at least 1, got " +
           std::to_string(modelParallel);
  auto refuse = [&](llvm::StringRef what, int64_t size, llvm::StringRef why) {
    return llvm::formatv("{0} {1} does not divide by the model-parallel size "
                         "{2}{3}",
                         what, size, modelParallel, why)
        .str();
  };
  if (embed % modelParallel)
    return refuse("the hidden size", embed, "");
  if (heads % modelParallel)
    return refuse("the head count", heads, " (each rank computes whole heads)");
  if (vocab % modelParallel) {
    int64_t multiple = 128 * modelParallel;
    return refuse("the vocabulary", vocab,
                  llvm::formatv(" (the embedding is split by vocabulary; "
                                "Megatron pads it to a multiple of 128 x {0}: "
                                "{1})",
                                modelParallel,
                                (vocab + multiple - 1) / multiple * multiple)
                      .str());
  }
  return "";
}

std::string Gpt2Config::checkPipeline() const {
  if (pipelineStages < 1)
    return "the pipeline-parallel size must be at least 1, got " +
           std::to_string(pipelineStages);
  if (virtualStages < 1)
    return "the virtual pipeline stages must be at least 1, got " +
           std::to_string(virtualStages);
  if (virtualStages == 1 && layers < pipelineStages)
    return llvm::formatv("{0} layers do not cut into {1} pipeline stages "
                         "(each stage needs at least one layer)",
                         layers, pipelineStages)
        .str();
  if (layers < pipelineStages * virtualStages)
    return llvm::formatv("{0} layers do not cut into {1} pipeline stages of "
                         "{2} model chunks (each chunk needs at least one "
                         "layer)",
                         layers, pipelineStages, virtualStages)
        .str();
  return "";
}

llvm::SmallVector<int64_t> Gpt2Config::pipelineCut() const {
  // FLOPs per token of the forward (the backward is twice as much on every
  // stage alike): a block's four products and its attention, the head's
  // product; the embedding's gather is free.
  double e = static_cast<double>(embed);
  double block = 24.0 * e * e + 4.0 * static_cast<double>(seqLen) * e;
  double head = 2.0 * static_cast<double>(vocab) * e;
  int64_t stages = std::max<int64_t>(pipelineStages, 1) *
                   std::max<int64_t>(virtualStages, 1);
  // best[s][n]: the least maximum over stages 0..s holding blocks [0, n).
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages,
                                        std::vector<double>(layers + 1, inf));
  std::vector<std::vector<int64_t>> from(stages,
                                         std::vector<int64_t>(layers + 1, 0));
  auto cost = [&](int64_t stage, int64_t first, int64_t end) {
    double total = block * static_cast<double>(end - first);
    return stage == stages - 1 ? total + head : total;
  };
  for (int64_t n = 1; n <= layers; ++n)
    best[0][n] = cost(0, 0, n);
  for (int64_t s = 1; s < stages; ++s)
    for (int64_t n = s + 1; n <= layers; ++n)
      for (int64_t first = s; first < n; ++first) {
        double worst = std::max(best[s - 1][first], cost(s, first, n));
        if (worst < best[s][n]) {
          best[s][n] = worst;
          from[s][n] = first;
        }
      }
  llvm::SmallVector<int64_t> cut(stages + 1, 0);
  cut[stages] = layers;
  for (int64_t s = stages - 1; s > 0; --s)
    cut[s] = from[s][cut[s + 1]];
  return cut;
}

llvm::SmallVector<Gpt2Config::Tensor> Gpt2Config::largestTensors() const {
  constexpr int64_t f32 = 4, i64 = 8;
  return {
      {"mlp.c_fc.weight", {4, embed, embed}, f32},
      {"wte.weight", {vocab, embed}, f32},
      {"wpe.weight", {seqLen, embed}, f32},
      {"tokens", {batch, seqLen}, i64},
      {"MLP activation", {batch, seqLen, 4, embed}, f32},
      {"attention scores", {batch, heads, seqLen, seqLen}, f32},
      {"logits", {batch, seqLen, vocab}, f32},
  };
}

namespace {
/// Emits one GPT-2 model; rows are (batch * seq) tokens.
class Gpt2Emitter {
public:
  Gpt2Emitter(zerosbp::GraphBuilder &b, const Gpt2Config &c) : b(b), c(c) {}

  Value emit() {
    if (pipelined())
      b.setPipelineStage(0);
    Value tokens = b.input("tokens", {c.batch, c.seqLen}, b.i64());
    Value labels = b.input("labels", {c.batch, c.seqLen}, b.i64());
    // Vocabulary-parallel: each model rank looks up its rows of the
    // table (a partial sum) and computes its columns of the logits.
    Value wte = b.variable("wte.weight", {c.vocab, c.embed}, sbp::Role::param,
                           nn::Initializer::normal, 0.02, split(0));
    Value wpe = b.variable("wpe.weight", {c.seqLen, c.embed}, sbp::Role::param,
                           nn::Initializer::normal, 0.01);
    // (batch, seq, embed) + (seq, embed): positions broadcast over batch.
    Value x = b.add(b.embedding(wte, tokens), wpe);
    x = b.reshape(x, {rows(), c.embed});
    int64_t every = c.checkpointLayers;
    SmallVector<int64_t> cut = c.pipelineCut();
    for (int64_t i = 0, stage = 0; i < c.layers; ++i) {
      if (pipelined()) {
        while (i >= cut[stage + 1])
          ++stage;
        b.setPipelineStage(stage);
      }
      bool alone = every == 0 && i < c.checkpointedBlocks;
      if (alone || (every > 0 && i % every == 0))
        b.beginCheckpoint();
      x = block("h." + std::to_string(i), x);
      if (alone || (every > 0 && ((i + 1) % every == 0 || i + 1 == c.layers)))
        b.endCheckpoint();
    }
    if (pipelined())
      b.setPipelineStage(cut.size() - 2);
    x = b.layerNormLayer("ln_f", x);
    Value logits = b.matmul(x, wte, /*transposeLhs=*/false,
                            /*transposeRhs=*/true);
    logitsOut = b.reshape(logits, {c.batch, c.seqLen, c.vocab});
    return b.crossEntropy(logits, b.reshape(labels, {rows()}));
  }

  /// The logits (batch, seq, vocab) of the last emit().
  Value logitsOut;

private:
  int64_t rows() const { return c.batch * c.seqLen; }
  bool parallel() const { return c.modelParallel > 1; }
  bool pipelined() const { return c.pipelineStages > 1; }
  /// A split on `dim` over the model axis, when there is one.
  std::optional<int64_t> split(int64_t dim) const {
    return parallel() ? std::optional<int64_t>(dim) : std::nullopt;
  }
  zerosbp::GraphBuilder::Parallel column() const {
    return parallel() ? zerosbp::GraphBuilder::Parallel::column
                      : zerosbp::GraphBuilder::Parallel::none;
  }
  zerosbp::GraphBuilder::Parallel row() const {
    return parallel() ? zerosbp::GraphBuilder::Parallel::row
                      : zerosbp::GraphBuilder::Parallel::none;
  }
  int64_t headDim() const { return c.embed / c.heads; }

  Value block(const std::string &prefix, Value x) {
    Value h = b.layerNormLayer(prefix + ".ln_1", x);
    x = b.add(x, attention(prefix + ".attn", h));
    h = b.layerNormLayer(prefix + ".ln_2", x);
    h = b.gelu(b.linear(prefix + ".mlp.c_fc", h, 4 * c.embed, true, column()));
    return b.add(x, b.linear(prefix + ".mlp.c_proj", h, c.embed, true, row()));
  }

  /// (rows, embed) -> (batch, heads, seq, headDim).
  Value toHeads(Value x) {
    x = b.reshape(x, {c.batch, c.seqLen, c.heads, headDim()});
    return b.transpose(x, {0, 2, 1, 3});
  }

  /// q, k and v of c_attn: one (3E, E) product without a model axis, three
  /// column-parallel (E, E) products with one, each rank's whole heads.
  SmallVector<Value> queryKeyValue(const std::string &prefix, Value x) {
    int64_t e = c.embed;
    // torch.nn.Linear's init for E inputs, as for every linear layer.
    double bound = 1.0 / std::sqrt(static_cast<double>(e));
    Value weight = b.variable(prefix + ".weight", {3, e, e}, sbp::Role::param,
                              nn::Initializer::uniform, bound, split(1));
    Value bias = b.variable(prefix + ".bias", {3, e}, sbp::Role::param,
                            nn::Initializer::uniform, bound, split(1));
    if (!parallel()) {
      Value qkv = b.biasAdd(b.matmul(x, b.reshape(weight, {3 * e, e}),
                                     /*transposeLhs=*/false,
                                     /*transposeRhs=*/true),
                            b.reshape(bias, {3 * e}));
      return b.split(qkv, 1, {e, e, e});
    }
    SmallVector<Value> weights = b.split(weight, 0, {1, 1, 1});
    SmallVector<Value> biases = b.split(bias, 0, {1, 1, 1});
    SmallVector<Value> parts;
    for (auto [w, bb] : llvm::zip_equal(weights, biases))
      parts.push_back(b.biasAdd(b.matmul(x, b.reshape(w, {e, e}),
                                         /*transposeLhs=*/false,
                                         /*transposeRhs=*/true),
                                b.reshape(bb, {e})));
    return parts;
  }

  Value attention(const std::string &prefix, Value x) {
    SmallVector<Value> parts = queryKeyValue(prefix + ".c_attn", x);
    if (parts.size() != 3)
      return {};
    Value q = toHeads(parts[0]), k = toHeads(parts[1]), v = toHeads(parts[2]);
    Value scores = b.batchMatmul(q, k, /*transposeLhs=*/false,
                                 /*transposeRhs=*/true);
    scores = b.scale(scores, 1.0 / std::sqrt(static_cast<double>(headDim())));
    Value probs = b.softmax(scores, /*axis=*/-1, /*causal=*/true);
    Value y = b.batchMatmul(probs, v);
    y = b.transpose(y, {0, 2, 1, 3});
    y = b.reshape(y, {rows(), c.embed});
    return b.linear(prefix + ".c_proj", y, c.embed, true, row());
  }

  zerosbp::GraphBuilder &b;
  const Gpt2Config &c;
};
} // namespace

Value zerosbp::buildGpt2(GraphBuilder &builder, const Gpt2Config &config) {
  if (config.heads < 1 || config.embed % config.heads != 0 ||
      !config.checkModelParallel().empty() || !config.checkPipeline().empty()) {
    // Let the builder carry the error like any other failed step.
    builder.reshape(Value(), {});
    return {};
  }
  return Gpt2Emitter(builder, config).emit();
}

std::pair<Value, Value> zerosbp::buildGpt2Inference(GraphBuilder &builder,
                                                    const Gpt2Config &config) {
  if (config.heads < 1 || config.embed % config.heads != 0 ||
      !config.checkModelParallel().empty() || !config.checkPipeline().empty()) {
    builder.reshape(Value(), {});
    return {};
  }
  Gpt2Emitter emitter(builder, config);
  Value loss = emitter.emit();
  return {emitter.logitsOut, loss};
}
