//===- zero-compile.cpp - compiles a model with ZeRO and reports ----------===//
//
// Takes a `.mlir` forward graph or a built-in GPT-2 (the DeepSpeed
// tutorial's Megatron-DeepSpeed command line is accepted as written), runs
// the whole ZeRO pipeline for a stage, world size and config (global passes,
// partition, bucketing, scheduling, memory plan), writes the plan the runtime
// executes (-o model.zplan), and reports what one rank holds and sends per
// step, read off the compiled IR. Needs shapes only: no tensor is allocated.
//
//===----------------------------------------------------------------------===//

#include "compiler/builder/Gpt2Builder.h"
#include "compiler/config/ConfigLayer.h"
#include "compiler/config/DeepSpeedConfig.h"
#include "compiler/config/PipelineOptions.h"
#include "compiler/config/ResolveConfig.h"
#include "compiler/driver/CompileDriver.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/registration/InitAllDialects.h"
#include "compiler/tools/common/ToolFiles.h"
#include "compiler/tools/zero-compile/GlobalBatch.h"
#include "passes/Passes.h"
#include "passes/memory/PlanAttrs.h"
#include "runtime/core/Limits.h"
#include "runtime/io/InputFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <unistd.h>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("zero-compile options");
static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[forward graph .mlir]"),
                                      cl::init(""), cl::cat(category));
static zerosbp::DecimalOpt world("world", cl::desc("ranks in all"), cl::init(1),
                                 cl::cat(category));
static zerosbp::DecimalOpt stage("stage", cl::desc("ZeRO stage 0-3"),
                                 cl::init(-1), cl::cat(category));
static cl::opt<std::string> configFile("config",
                                       cl::desc("DeepSpeed JSON config"),
                                       cl::init(""), cl::cat(category));
static cl::opt<std::string>
    pipelineOptions("pipeline",
                    cl::desc("config as 'key=value ...' (zero-opt syntax)"),
                    cl::init(""), cl::cat(category));
static cl::opt<std::string> report("report", cl::desc("json, text or none"),
                                   cl::init("text"), cl::cat(category));
static cl::opt<std::string>
    outputFile("o", cl::desc("write the plan here (model.zplan)"), cl::init(""),
               cl::cat(category));
static cl::opt<std::string> irFile("emit-ir",
                                   cl::desc("write the compiled IR here"),
                                   cl::init(""), cl::cat(category));
static cl::list<std::string>
    printIrAfter("print-ir-after",
                 cl::desc("print the module to stderr after this pass "
                          "(its zero-opt name, or capture); repeatable"),
                 cl::cat(category));
// The DeepSpeed / Megatron GPT-2 flags.
static cl::opt<std::string> preset("preset",
                                   cl::desc("built-in GPT-2 preset: tiny, "
                                            "small, medium, large, xl"),
                                   cl::init(""), cl::cat(category));
static zerosbp::DecimalOpt numLayers("num-layers", cl::init(0),
                                     cl::cat(category),
                                     cl::desc("GPT-2 layers"));
static zerosbp::DecimalOpt hiddenSize("hidden-size", cl::init(0),
                                      cl::cat(category),
                                      cl::desc("GPT-2 width"));
static zerosbp::DecimalOpt numHeads("num-attention-heads", cl::init(0),
                                    cl::cat(category),
                                    cl::desc("GPT-2 attention heads"));
static zerosbp::DecimalOpt seqLength("seq-length", cl::init(0),
                                     cl::cat(category),
                                     cl::desc("GPT-2 sequence length"));
static zerosbp::DecimalOpt vocabSize("vocab-size", cl::init(0),
                                     cl::cat(category),
                                     cl::desc("GPT-2 vocabulary (50257)"));
static zerosbp::DecimalOpt batchSize(
    "batch-size", cl::init(0), cl::cat(category),
    cl::desc("GPT-2 sequences per step: the global batch, or with "
             "--deepspeed_config Megatron's per-GPU batch (default: the "
             "config's train_batch_size, else one per rank)"));
// What the Megatron-DeepSpeed launch scripts add.
static cl::opt<std::string> deepspeedConfig(
    "deepspeed_config",
    cl::desc("DeepSpeed JSON config, read as --config; --batch-size then "
             "counts sequences per GPU, as in Megatron"),
    cl::init(""), cl::cat(category));
static cl::opt<bool>
    deepspeedSwitch("deepspeed",
                    cl::desc("accepted for the Megatron-DeepSpeed command "
                             "line (DeepSpeed is always on here)"),
                    cl::init(false), cl::cat(category));
static zerosbp::DecimalOpt modelParallelSize(
    "model-parallel-size", cl::init(1), cl::cat(category),
    cl::desc("Megatron's tensor-parallel degree: GPT-2 laid out on a "
             "[world / N, N] placement, or the ranks of a captured graph's "
             "model axes; batch sizes count world / N"));
static cl::alias tensorModelParallelSize(
    "tensor-model-parallel-size", cl::aliasopt(modelParallelSize),
    cl::desc("alias for --model-parallel-size (Megatron-DeepSpeed)"));
static zerosbp::DecimalOpt pipelineParallelSize(
    "pipeline-model-parallel-size", cl::init(1), cl::cat(category),
    cl::desc("Megatron's pipeline degree: the layers cut into N stages on a "
             "[N, data, model] placement; --gradient-accumulation-steps "
             "micro-batches flow through them; batch sizes count world / "
             "(N * model-parallel size)"));
static cl::opt<std::string> pipelineSchedule(
    "pipeline-schedule", cl::init("1f1b"), cl::cat(category),
    cl::desc("micro-batch order on each pipeline stage: 1f1b or gpipe"));
static zerosbp::DecimalOpt virtualStagesPerRank(
    "num-virtual-stages-per-pipeline-rank", cl::init(1), cl::cat(category),
    cl::desc("Megatron's virtual pipeline stages: each stage holds this many "
             "model chunks (GPT-2's blocks cut into N * this many ranges) and "
             "1F1B interleaves them; micro-batches come in groups of N"));
static zerosbp::DecimalOpt gradientAccumulationSteps(
    "gradient-accumulation-steps", cl::init(1), cl::cat(category),
    cl::desc("micro-batches per step (the pipeline's micro-batches)"));
static cl::opt<bool> verifyEach(
    "verify-each", cl::init(zerosbp::kVerifyEachPassByDefault),
    cl::cat(category),
    cl::desc("verify the IR after every pass, naming the pass that breaks "
             "it (on in debug builds; optimized builds verify the compiled "
             "graph only)"));
static cl::opt<bool> evalGraph(
    "eval", cl::init(false), cl::cat(category),
    cl::desc("compile for inference: the forward only, returning the "
             "graph's results (GPT-2: logits and loss), parameters laid out "
             "as training at the same stage lays them out"));
static cl::opt<bool> checkpointActivations(
    "checkpoint-activations", cl::init(false), cl::cat(category),
    cl::desc("Megatron's activation checkpointing: each GPT-2 block's "
             "activations are recomputed in the backward (zero-remat)"));
static zerosbp::DecimalOpt activationMemoryBudget(
    "activation-memory-budget", cl::init(0), cl::cat(category),
    cl::desc("GPT-2: checkpoint the fewest blocks for which the planned "
             "activation peak per rank fits this many bytes (zero-remat)"));
static zerosbp::DecimalOpt checkpointNumLayers(
    "checkpoint-num-layers", cl::init(1), cl::cat(category),
    cl::desc("with --checkpoint-activations, GPT-2 blocks per checkpointed "
             "segment (Megatron's; default 1)"));

/// The most GPT-2 layers zero-compile builds. Compile time and memory grow
/// with every layer (about 30 ms each at stage 3 in a fastbuild), and this
/// is far above GPT-2's 48 or GPT-3's 96 (docs/compiler.md).
constexpr int64_t kMaxLayers = 1024;

static int fail(const llvm::Twine &message) {
  llvm::errs() << "zero-compile: " << message << "\n";
  return 1;
}

/// A flag's default stands for "not given"; whether it was given is what
/// counts, so that a value the user typed (0 included) is checked.
static bool given(const cl::Option &flag) {
  return flag.getNumOccurrences() > 0;
}

static bool wantsGpt2() {
  return given(preset) || given(numLayers) || given(hiddenSize) ||
         given(numHeads) || given(seqLength) || given(vocabSize);
}

/// The sizes and the stage as typed, before any default or config applies.
static llvm::Error checkGivenFlags() {
  for (zerosbp::DecimalOpt *flag :
       {&numLayers, &hiddenSize, &numHeads, &seqLength, &vocabSize, &batchSize})
    if (given(*flag) && *flag < 1)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--" + flag->ArgStr + " must be positive, got " + llvm::Twine(*flag));
  if (given(stage) && (stage < 0 || stage > 3))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--stage must be 0, 1, 2 or 3, got " +
                                       llvm::Twine(stage));
  return llvm::Error::success();
}

/// How the flags spell the fields they set, for a flag that contradicts
/// the config.
static llvm::StringRef flagName(zerosbp::ConfigField field) {
  using zerosbp::ConfigField;
  switch (field) {
  case ConfigField::World:
    return "--world";
  case ConfigField::Stage:
    return "--stage";
  case ConfigField::ModelParallelSize:
    return "--model-parallel-size";
  case ConfigField::PipelineParallelSize:
    return "--pipeline-model-parallel-size";
  case ConfigField::PipelineSchedule:
    return "--pipeline-schedule";
  case ConfigField::VirtualPipelineStages:
    return "--num-virtual-stages-per-pipeline-rank";
  case ConfigField::GradientAccumulationSteps:
    return "--gradient-accumulation-steps";
  default:
    return zerosbp::optionName(field);
  }
}

/// The config file from --config or --deepspeed_config.
static llvm::StringRef configPath() {
  return deepspeedConfig.empty() ? configFile : deepspeedConfig;
}

/// Megatron flags this compiler cannot honour are errors, not no-ops.
static llvm::Error checkMegatronFlags() {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (!configFile.empty() && !deepspeedConfig.empty())
    return error("--config and --deepspeed_config name the same thing; "
                 "give one");
  if (modelParallelSize < 1)
    return error("--model-parallel-size: expected an integer >= 1, got " +
                 llvm::Twine(modelParallelSize));
  if (pipelineParallelSize < 1)
    return error(
        "--pipeline-model-parallel-size: expected an integer >= 1, got " +
        llvm::Twine(pipelineParallelSize));
  if (virtualStagesPerRank < 1)
    return error(
        "--num-virtual-stages-per-pipeline-rank: expected an integer >= 1, "
        "got " +
        llvm::Twine(virtualStagesPerRank));
  if (gradientAccumulationSteps < 1)
    return error(
        "--gradient-accumulation-steps: expected an integer >= 1, got " +
        llvm::Twine(gradientAccumulationSteps));
  if (given(checkpointNumLayers) && checkpointNumLayers < 1)
    return error("--checkpoint-num-layers: expected an integer >= 1, got " +
                 llvm::Twine(checkpointNumLayers));
  if (given(checkpointNumLayers) && !checkpointActivations)
    return error("--checkpoint-num-layers needs --checkpoint-activations");
  if (given(activationMemoryBudget)) {
    if (activationMemoryBudget < 1)
      return error("--activation-memory-budget: expected a number of bytes "
                   ">= 1, got " +
                   llvm::Twine(activationMemoryBudget));
    if (checkpointActivations)
      return error("--activation-memory-budget picks the checkpoints itself; "
                   "drop --checkpoint-activations");
    if (evalGraph)
      return error("--activation-memory-budget: an inference graph keeps no "
                   "activations for a backward");
    if (!inputFile.empty())
      return error("--activation-memory-budget checkpoints GPT-2 blocks; "
                   "give the GPT-2 flags");
  }
  return llvm::Error::success();
}

/// The config resolved from --config or --pipeline, then the flags
/// (docs/compiler.md#precedence).
static llvm::Expected<zerosbp::ZeroConfig> loadConfig() {
  using zerosbp::ConfigField;
  if (llvm::Error error = checkMegatronFlags())
    return std::move(error);
  llvm::StringRef path = configPath();
  if (!path.empty() && !pipelineOptions.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        (deepspeedConfig.empty() ? "--config" : "--deepspeed_config") +
            llvm::Twine(" and --pipeline exclude each other"));
  std::vector<zerosbp::ConfigLayer> layers;
  if (!path.empty()) {
    auto file = zerosbp::readToolInput(
        path, zerosbp::runtime::kMaxConfigFileBytes, "the config");
    if (!file)
      return file.takeError();
    auto config = zerosbp::readDeepSpeedConfig((*file)->getBuffer(), path);
    if (!config)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     path + ": " +
                                         llvm::toString(config.takeError()));
    layers.push_back(std::move(*config));
  } else if (!pipelineOptions.empty()) {
    auto config = zerosbp::readPipelineOptions(
        pipelineOptions, zerosbp::LayerKind::Config, "--pipeline");
    if (!config)
      return config.takeError();
    layers.push_back(std::move(*config));
  }
  // The schedule's flags mean nothing without pipeline stages; said here
  // in the flags' words, except beside --pipeline's pairs, whose keys
  // resolveConfig's message names.
  if (pipelineOptions.empty() && pipelineParallelSize <= 1) {
    if (given(pipelineSchedule))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--pipeline-schedule: only used with "
                                     "--pipeline-model-parallel-size > 1");
    if (given(virtualStagesPerRank))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--num-virtual-stages-per-pipeline-rank: only used with "
          "--pipeline-model-parallel-size > 1");
  }
  zerosbp::ConfigLayer flags(zerosbp::LayerKind::Setting, "", flagName);
  // --world's default applies where the config states no world.
  if (given(world) || layers.empty() || !layers[0].gives(ConfigField::World))
    flags.give(ConfigField::World, static_cast<int64_t>(world));
  auto giveIfGiven = [&](const cl::Option &flag, ConfigField field,
                         auto value) {
    if (given(flag))
      flags.give(field, value);
  };
  // In range: checkGivenFlags checked it.
  if (given(stage))
    flags.give(ConfigField::Stage, *zerosbp::symbolizeZeroStage(stage));
  giveIfGiven(modelParallelSize, ConfigField::ModelParallelSize,
              static_cast<int64_t>(modelParallelSize));
  giveIfGiven(pipelineParallelSize, ConfigField::PipelineParallelSize,
              static_cast<int64_t>(pipelineParallelSize));
  giveIfGiven(pipelineSchedule, ConfigField::PipelineSchedule,
              std::string(pipelineSchedule));
  giveIfGiven(virtualStagesPerRank, ConfigField::VirtualPipelineStages,
              static_cast<int64_t>(virtualStagesPerRank));
  giveIfGiven(gradientAccumulationSteps, ConfigField::GradientAccumulationSteps,
              static_cast<int64_t>(gradientAccumulationSteps));
  layers.push_back(std::move(flags));
  return zerosbp::resolveConfig(layers);
}

/// Refuses a GPT-2 whose graph would not fit a plan or would take too long
/// to build, before any size product is computed unchecked: the parameter
/// count and every tensor's bytes stay at most zerosbp::kMaxPlanBytes.
static llvm::Error checkGpt2Sizes(const zerosbp::Gpt2Config &config) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (config.layers > kMaxLayers)
    return error(llvm::formatv("--num-layers {0}: at most {1} layers are "
                               "supported (each adds to compile time)",
                               config.layers, kMaxLayers));
  std::optional<int64_t> params = config.checkedNumParameters();
  if (!params || *params > zerosbp::kMaxPlanBytes)
    return error(llvm::formatv(
        "GPT-2 with --num-layers {0} --hidden-size {1} --vocab-size {2} "
        "--seq-length {3} has more than 2^53 ({4}) parameters, the most a "
        "plan addresses",
        config.layers, config.embed, config.vocab, config.seqLen,
        zerosbp::kMaxPlanBytes));
  for (const auto &tensor : config.largestTensors()) {
    std::optional<int64_t> bytes = tensor.elementBytes;
    for (int64_t factor : tensor.factors)
      if (bytes)
        bytes = llvm::checkedMul(*bytes, factor);
    if (bytes && *bytes <= zerosbp::kMaxPlanBytes)
      continue;
    std::string sizes;
    llvm::raw_string_ostream os(sizes);
    llvm::interleave(tensor.factors, os, " x ");
    return error(llvm::formatv(
        "GPT-2's {0} tensor ({1} elements of {2} bytes) holds more than 2^53 "
        "bytes ({3}), the most a plan addresses",
        tensor.name, sizes, tensor.elementBytes, zerosbp::kMaxPlanBytes));
  }
  return llvm::Error::success();
}

static FailureOr<OwningOpRef<ModuleOp>>
loadModel(MLIRContext &context, const zerosbp::ZeroConfig &zero,
          int64_t checkpointedBlocks = 0,
          zerosbp::Gpt2Config *built = nullptr) {
  if (!inputFile.empty()) {
    if (checkpointActivations) {
      fail("--checkpoint-activations checkpoints GPT-2 blocks; in a .mlir "
           "graph, mark each segment's ops with zero.checkpoint = N");
      return failure();
    }
    if (wantsGpt2() || given(batchSize)) {
      fail("give either a .mlir file or the GPT-2 flags, not both");
      return failure();
    }
    llvm::SourceMgr sources;
    auto file = zerosbp::readToolInput(
        inputFile, zerosbp::runtime::kMaxGraphFileBytes, "the input graph");
    if (!file) {
      fail(llvm::toString(file.takeError()));
      return failure();
    }
    sources.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &context);
    if (!module)
      return failure();
    return module;
  }
  zerosbp::Gpt2Config config;
  if (given(preset)) {
    auto known = zerosbp::Gpt2Config::preset(preset);
    if (!known) {
      fail("unknown preset '" + preset +
           "' (expected tiny, small, medium, large or xl)");
      return failure();
    }
    config = *known;
  } else if (!wantsGpt2()) {
    fail("no model: give a .mlir file or GPT-2 flags (--preset or "
         "--num-layers --hidden-size --num-attention-heads ...)");
    return failure();
  }
  if (given(numLayers))
    config.layers = numLayers;
  if (given(hiddenSize))
    config.embed = hiddenSize;
  if (given(numHeads))
    config.heads = numHeads;
  if (given(seqLength))
    config.seqLen = seqLength;
  if (given(vocabSize))
    config.vocab = vocabSize;
  zerosbp::BatchFlags batch;
  if (given(batchSize))
    batch.batchSize = batchSize;
  batch.perRank = !deepspeedConfig.empty();
  batch.configSource = configPath().empty() ? "--pipeline" : configPath().str();
  auto globalBatch = zerosbp::resolveGlobalBatch(batch, zero);
  if (!globalBatch) {
    fail(llvm::toString(globalBatch.takeError()));
    return failure();
  }
  config.batch = *globalBatch;
  config.modelParallel = zero.modelParallelSize;
  if (std::string problem = config.checkModelParallel(); !problem.empty()) {
    fail("--model-parallel-size " + std::to_string(config.modelParallel) +
         ": " + problem);
    return failure();
  }
  config.pipelineStages = zero.pipelineParallelSize;
  config.virtualStages = zero.virtualPipelineStages;
  if (std::string problem = config.checkPipeline(); !problem.empty()) {
    fail("--pipeline-model-parallel-size " +
         std::to_string(config.pipelineStages) + ": " + problem);
    return failure();
  }
  if (checkpointActivations)
    config.checkpointLayers = checkpointNumLayers;
  config.checkpointedBlocks = checkpointedBlocks;
  if (built)
    *built = config;
  if (config.layers < 1 || config.embed < 1 || config.heads < 1 ||
      config.embed % config.heads || config.seqLen < 1 || config.vocab < 1 ||
      config.batch < 1) {
    fail("GPT-2 needs positive sizes and a hidden size divisible by the "
         "head count");
    return failure();
  }
  if (llvm::Error error = checkGpt2Sizes(config)) {
    fail(llvm::toString(std::move(error)));
    return failure();
  }
  // Megatron's layout: the model axis inside the data axis, [dp, tp]. The
  // graph is captured on the first pipeline stage's ranks; the pipeline
  // axis, outermost, is zero-pipeline-stages' to add.
  SmallVector<int64_t, 2> hierarchy;
  if (config.modelParallel > 1)
    hierarchy = {zero.dataParallelSize(), config.modelParallel};
  zerosbp::GraphBuilder builder(
      context, "gpt2",
      zerosbp::GraphBuilder::makePlacement(context, sbp::DeviceKind::cpu,
                                           zero.stageWorld(), hierarchy));
  if (config.modelParallel > 1)
    builder.setModelAxis(1);
  SmallVector<Value> results;
  if (evalGraph) {
    auto [logits, loss] = zerosbp::buildGpt2Inference(builder, config);
    results = {logits, loss};
  } else {
    results = {zerosbp::buildGpt2(builder, config)};
  }
  auto module = builder.finish(results);
  if (failed(module))
    fail(builder.error());
  return module;
}

/// The keys of a JSON object in sorted order (llvm::json::Object is
/// unordered).
static std::vector<std::string> sortedKeys(const llvm::json::Object *object) {
  std::vector<std::string> keys;
  if (object)
    for (const auto &entry : *object)
      keys.push_back(entry.first.str());
  llvm::sort(keys);
  return keys;
}

/// The human-readable summary of zero-compile's JSON report.
static void printTextReport(const llvm::json::Object &json) {
  auto integer = [](const llvm::json::Object *object, llvm::StringRef key) {
    return object ? object->getInteger(key).value_or(0) : 0;
  };
  auto number = [](const llvm::json::Object *object, llvm::StringRef key) {
    return object ? object->getNumber(key).value_or(0.0) : 0.0;
  };
  llvm::outs() << llvm::formatv(
      "params {0}  world {1}  stage {2}  ops {3}  compile {4:f1} ms\n",
      integer(&json, "params"), integer(&json, "world"),
      integer(&json, "stage"), integer(&json, "ops"),
      number(&json, "compile_ms"));
  const auto *bytes = json.getObject("bytes_per_rank");
  for (const std::string &role : sortedKeys(bytes))
    llvm::outs() << llvm::formatv("  {0,-10} {1,16} bytes per rank\n", role,
                                  integer(bytes, role));
  const auto *calls = json.getObject("collectives");
  const auto *comm = json.getObject("comm_bytes_per_step");
  for (const std::string &kind : sortedKeys(comm))
    if (integer(calls, kind))
      llvm::outs() << llvm::formatv(
          "  {0,-15} {1,16:f0} bytes sent per rank per step ({2} calls)\n",
          kind, number(comm, kind), integer(calls, kind));
  if (const auto *pipeline = json.getObject("pipeline")) {
    const auto *loop = pipeline->getObject("micro_batch_loop");
    llvm::outs() << llvm::formatv(
        "  pipeline: {0} stages, {1} micro-batches, {2}{3}, planned bubble "
        "{4:f1}% of the step{5}\n",
        integer(pipeline, "stages"), integer(pipeline, "micro_batches"),
        pipeline->getString("schedule").value_or(""),
        integer(pipeline, "model_chunks") > 1
            ? llvm::formatv(" interleaved over {0} model chunks per stage",
                            integer(pipeline, "model_chunks"))
                  .str()
            : std::string(),
        100 * number(pipeline, "bubble"),
        loop ? llvm::formatv("; a micro-batch loop of {0} chunks",
                             integer(loop, "chunks"))
                   .str()
             : std::string());
  }
  const auto *plan = json.getObject("plan");
  const auto *memory = plan ? plan->getObject("memory_plan") : nullptr;
  const auto *buckets = plan ? plan->getObject("buckets") : nullptr;
  const auto *overlap = plan ? plan->getObject("overlap") : nullptr;
  llvm::outs() << llvm::formatv(
      "  planned peak {0} bytes per rank (lower bound {1}), model states "
      "{2}, {3} buckets, {4:f0} of {5:f0} bytes sent overlap compute\n",
      integer(memory, "peak_bytes_per_rank"),
      integer(memory, "lower_bound_bytes"),
      integer(memory, "model_state_bytes"), integer(buckets, "count"),
      number(overlap, "overlapped_bytes"), number(overlap, "comm_bytes"));
}

namespace {

/// Output files written under temporary names next to them
/// (llvm::sys::fs::TempFile, removed on a signal too) and renamed only by
/// keepAll() once every one is complete, so that a failed compile or a
/// failed --emit-ir leaves neither the plan nor the IR, and a kill never a
/// half-written one (docs/compiler.md#outputs).
class PendingOutputs {
public:
  PendingOutputs() = default;
  PendingOutputs(const PendingOutputs &) = delete;
  PendingOutputs &operator=(const PendingOutputs &) = delete;
  ~PendingOutputs() {
    for (auto &output : outputs)
      if (!output->done)
        llvm::consumeError(output->file.discard());
  }

  /// Creates the temporary for `path`; returns its name and descriptor.
  llvm::Expected<std::pair<std::string, int>> add(const std::string &path,
                                                  llvm::StringRef what) {
    auto file = llvm::sys::fs::TempFile::create(path + "-%%%%%%.tmp");
    if (!file)
      return cannotWrite(path, what, llvm::toString(file.takeError()));
    outputs.push_back(std::make_unique<Output>(
        Output{path, what.str(), std::move(*file), false}));
    llvm::sys::fs::TempFile &added = outputs.back()->file;
    return std::make_pair(added.TmpName, added.FD);
  }

  /// Flushes every output to disk, then renames each to its path.
  llvm::Error keepAll() {
    for (auto &output : outputs) {
      // Written through other descriptors too (the plan export reopens
      // it): fsync flushes the file, whichever descriptor wrote it.
      if (::fsync(output->file.FD) != 0)
        return cannotWrite(output->path, output->what, std::strerror(errno));
      // zero-export-plan's ToolOutputFile dropped it from the files
      // removed on a signal.
      llvm::sys::RemoveFileOnSignal(output->file.TmpName);
    }
    for (auto &output : outputs) {
      if (llvm::Error error = output->file.keep(output->path))
        return cannotWrite(output->path, output->what,
                           llvm::toString(std::move(error)));
      output->done = true;
    }
    return llvm::Error::success();
  }

private:
  struct Output {
    std::string path;
    std::string what;
    llvm::sys::fs::TempFile file;
    bool done;
  };

  static llvm::Error cannotWrite(const std::string &path, llvm::StringRef what,
                                 const std::string &reason) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot write the " + what + " to '" + path +
                                       "': " + reason);
  }

  std::vector<std::unique_ptr<Output>> outputs;
};

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "ZeroSBP: compile a model with ZeRO and report "
                              "per-rank memory and traffic\n");
  if (report != "json" && report != "text" && report != "none")
    return fail("--report must be json, text or none, got '" + report + "'");
  if (world < 1 || world > zerosbp::runtime::kMaxRanks)
    return fail("--world: expected a number of ranks in [1, " +
                std::to_string(zerosbp::runtime::kMaxRanks) + "], got " +
                std::to_string(world));
  if (llvm::Error error = checkGivenFlags())
    return fail(llvm::toString(std::move(error)));

  auto config = loadConfig();
  if (!config)
    return fail(llvm::toString(config.takeError()));
  if (llvm::Error error = zerosbp::checkPipelineConfig(*config))
    return fail(llvm::toString(std::move(error)));

  if (llvm::Error error = zerosbp::checkOutputsAreDistinct(
          {{"the input graph", inputFile}, {"the config", configPath()}},
          {{"-o", outputFile}, {"--emit-ir", irFile}}))
    return fail(llvm::toString(std::move(error)));

  // The outputs' temporaries first: an unwritable path fails before the
  // compile, and nothing is renamed into place before everything is
  // written. "-" writes to stdout directly.
  PendingOutputs outputs;
  std::string planTemporary = outputFile;
  if (!outputFile.empty() && outputFile != "-") {
    auto added = outputs.add(outputFile, "plan");
    if (!added)
      return fail(llvm::toString(added.takeError()));
    planTemporary = added->first;
  }
  int irDescriptor = -1;
  if (!irFile.empty() && irFile != "-") {
    auto added = outputs.add(irFile, "IR");
    if (!added)
      return fail(llvm::toString(added.takeError()));
    irDescriptor = added->second;
  }

  // A file-size limit then fails the write (EFBIG), which names the file,
  // instead of running LLVM's crash handler. Set after the temporaries
  // registered that handler, which would replace it.
  std::signal(SIGXFSZ, SIG_IGN);

  auto start = std::chrono::steady_clock::now();
  auto msSince = [](std::chrono::steady_clock::time_point from) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - from)
        .count();
  };
  MLIRContext context;
  context.disableMultithreading();
  zerosbp::loadAllDialects(context);
  zerosbp::registerZeroPasses();
  for (const std::string &pass : printIrAfter)
    if (pass != "capture" && !mlir::PassInfo::lookup(pass))
      return fail("--print-ir-after: no pass is named '" + pass +
                  "' (see zero-opt --help)");
  // With a budget every block is a candidate segment; the driver keeps the
  // fewest that fit.
  zerosbp::Gpt2Config gpt2;
  auto module = loadModel(
      context, *config, given(activationMemoryBudget) ? kMaxLayers : 0, &gpt2);
  if (failed(module))
    return 1;
  double captureMs = msSince(start);

  zerosbp::CompileOptions options;
  options.planFile = planTemporary;
  if (evalGraph)
    options.kind = zerosbp::GraphKind::Inference;
  if (given(activationMemoryBudget))
    options.activationBudget = activationMemoryBudget;
  options.verifyEachPass = verifyEach;
  llvm::StringSet<> printAfter;
  for (const std::string &pass : printIrAfter)
    printAfter.insert(pass);
  auto print = [&](llvm::StringRef pass, ModuleOp module) {
    if (!printAfter.contains(pass))
      return;
    llvm::errs() << "// -----// IR after " << pass << " //----- //\n";
    module.print(llvm::errs());
    llvm::errs() << "\n";
  };
  if (!printAfter.empty())
    options.afterPass = print;
  auto compiled = zerosbp::compileGraph(**module, *config, options);
  if (!compiled) {
    // The plan's export names the temporary it writes; the user gave -o.
    std::string message = llvm::toString(compiled.takeError());
    if (planTemporary != outputFile)
      for (size_t at = message.find(planTemporary); at != std::string::npos;
           at = message.find(planTemporary, at + outputFile.size()))
        message.replace(at, planTemporary.size(), outputFile);
    return fail(message);
  }
  llvm::json::Object json = std::move(*compiled);
  if (!outputFile.empty())
    json["plan_file"] = outputFile.getValue();
  // Capture counts as the first step of the compile.
  if (auto *passMs = json.getArray("pass_ms"))
    passMs->insert(passMs->begin(),
                   llvm::json::Object{{"pass", "capture"}, {"ms", captureMs}});
  json["compile_ms"] = msSince(start);
  if (auto *choice = json.getObject("activation_checkpointing")) {
    // Segment i is block h.i.
    llvm::json::Array blocks;
    if (const llvm::json::Array *segments =
            choice->getArray("checkpointed_segments"))
      for (const llvm::json::Value &segment : *segments)
        blocks.push_back("h." + std::to_string(*segment.getAsInteger()));
    (*choice)["checkpointed_blocks"] = std::move(blocks);
  }

  if (irFile == "-") {
    (*module)->print(llvm::outs());
  } else if (!irFile.empty()) {
    llvm::raw_fd_ostream os(irDescriptor, /*shouldClose=*/false);
    (*module)->print(os);
    os.flush();
    if (os.has_error()) {
      std::string reason = os.error().message();
      os.clear_error();
      return fail("cannot write the IR to '" + irFile + "': " + reason);
    }
  }
  if (llvm::Error error = outputs.keepAll())
    return fail(llvm::toString(std::move(error)));

  if (report == "json") {
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(json)))
                 << "\n";
  } else if (report == "text") {
    printTextReport(json);
  }
  // A report to a full disk or a closed pipe is an error that names it,
  // not raw_fd_ostream's fatal error at exit.
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    std::string reason = llvm::outs().error().message();
    llvm::outs().clear_error();
    return fail("cannot write to standard output: " + reason);
  }
  return 0;
}
