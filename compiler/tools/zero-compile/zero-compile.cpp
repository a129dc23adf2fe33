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

#include "compiler/config/DeepSpeedConfig.h"
#include "compiler/config/PipelineOptions.h"
#include "compiler/driver/CompileDriver.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/registration/InitAllDialects.h"
#include "compiler/tools/zero-compile/GlobalBatch.h"
#include "examples/gpt2/Gpt2.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("zero-compile options");
static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[forward graph .mlir]"),
                                      cl::init(""), cl::cat(category));
static cl::opt<int64_t> world("world", cl::desc("data-parallel ranks"),
                              cl::init(1), cl::cat(category));
static cl::opt<int64_t> stage("stage", cl::desc("ZeRO stage 0-3"), cl::init(-1),
                              cl::cat(category));
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
// The DeepSpeed / Megatron GPT-2 flags.
static cl::opt<std::string> preset("preset",
                                   cl::desc("built-in GPT-2 preset: tiny, "
                                            "small, medium, large, xl"),
                                   cl::init(""), cl::cat(category));
static cl::opt<int64_t> numLayers("num-layers", cl::init(0), cl::cat(category),
                                  cl::desc("GPT-2 layers"));
static cl::opt<int64_t> hiddenSize("hidden-size", cl::init(0),
                                   cl::cat(category), cl::desc("GPT-2 width"));
static cl::opt<int64_t> numHeads("num-attention-heads", cl::init(0),
                                 cl::cat(category),
                                 cl::desc("GPT-2 attention heads"));
static cl::opt<int64_t> seqLength("seq-length", cl::init(0), cl::cat(category),
                                  cl::desc("GPT-2 sequence length"));
static cl::opt<int64_t> vocabSize("vocab-size", cl::init(0), cl::cat(category),
                                  cl::desc("GPT-2 vocabulary (50257)"));
static cl::opt<int64_t> batchSize(
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
static cl::opt<int64_t> modelParallelSize(
    "model-parallel-size", cl::init(1), cl::cat(category),
    cl::desc("Megatron's tensor-parallel degree: 1 only (data parallel)"));
static cl::opt<bool> checkpointActivations(
    "checkpoint-activations", cl::init(false), cl::cat(category),
    cl::desc("Megatron's activation checkpointing: refused (not supported)"));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "zero-compile: " << message << "\n";
  return 1;
}

static bool wantsGpt2() {
  return !preset.empty() || numLayers || hiddenSize || numHeads || seqLength ||
         vocabSize;
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
  if (modelParallelSize != 1)
    return error("--model-parallel-size " + llvm::Twine(modelParallelSize) +
                 ": only data parallelism is supported (1)");
  if (checkpointActivations)
    return error("--checkpoint-activations: activation checkpointing is not "
                 "supported");
  return llvm::Error::success();
}

/// The config from --config, --pipeline or the plain flags.
static llvm::Expected<zerosbp::ZeroConfig> loadConfig() {
  if (llvm::Error error = checkMegatronFlags())
    return std::move(error);
  llvm::StringRef path = configPath();
  if (!path.empty() && !pipelineOptions.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        (deepspeedConfig.empty() ? "--config" : "--deepspeed_config") +
            llvm::Twine(" and --pipeline exclude each other"));
  llvm::Expected<zerosbp::ZeroConfig> config = zerosbp::ZeroConfig();
  if (!path.empty()) {
    std::string error;
    auto file = openInputFile(path, &error);
    if (!file)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
    config = zerosbp::parseDeepSpeedConfig(file->getBuffer(), world);
    if (!config)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     path + ": " +
                                         llvm::toString(config.takeError()));
  } else if (!pipelineOptions.empty()) {
    config = zerosbp::parsePipelineOptions(pipelineOptions +
                                           " world=" + std::to_string(world));
    if (!config)
      return config.takeError();
  } else {
    config->world = world;
  }
  if (stage >= 0)
    config->stage = stage;
  if (llvm::Error error = config->verify())
    return std::move(error);
  return config;
}

static FailureOr<OwningOpRef<ModuleOp>>
loadModel(MLIRContext &context, const zerosbp::ZeroConfig &zero) {
  if (!inputFile.empty()) {
    if (wantsGpt2() || batchSize) {
      fail("give either a .mlir file or the GPT-2 flags, not both");
      return failure();
    }
    llvm::SourceMgr sources;
    std::string error;
    auto file = openInputFile(inputFile, &error);
    if (!file) {
      fail(error);
      return failure();
    }
    sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &context);
    if (!module)
      return failure();
    return module;
  }
  zerosbp::examples::Gpt2Config config;
  if (!preset.empty()) {
    auto known = zerosbp::examples::Gpt2Config::preset(preset);
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
  if (numLayers)
    config.layers = numLayers;
  if (hiddenSize)
    config.embed = hiddenSize;
  if (numHeads)
    config.heads = numHeads;
  if (seqLength)
    config.seqLen = seqLength;
  if (vocabSize)
    config.vocab = vocabSize;
  zerosbp::BatchFlags batch;
  batch.batchSize = batchSize;
  batch.perRank = !deepspeedConfig.empty();
  batch.configSource = configPath().empty() ? "--pipeline" : configPath().str();
  auto globalBatch = zerosbp::resolveGlobalBatch(batch, zero);
  if (!globalBatch) {
    fail(llvm::toString(globalBatch.takeError()));
    return failure();
  }
  config.batch = *globalBatch;
  if (config.layers < 1 || config.embed < 1 || config.heads < 1 ||
      config.embed % config.heads || config.seqLen < 1 || config.vocab < 1 ||
      config.batch < 1) {
    fail("GPT-2 needs positive sizes and a hidden size divisible by the "
         "head count");
    return failure();
  }
  zerosbp::GraphBuilder builder(
      context, "gpt2",
      zerosbp::GraphBuilder::cpuPlacement(context, zero.world));
  auto module = builder.finish({zerosbp::examples::buildGpt2(builder, config)});
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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "ZeroSBP: compile a model with ZeRO and report "
                              "per-rank memory and traffic\n");
  if (report != "json" && report != "text" && report != "none")
    return fail("--report must be json, text or none, got '" + report + "'");
  if (world < 1)
    return fail("--world must be positive");

  auto config = loadConfig();
  if (!config)
    return fail(llvm::toString(config.takeError()));
  auto steps = zerosbp::globalPipelineSteps(*config);
  if (!steps)
    return fail(llvm::toString(steps.takeError()));

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
  auto module = loadModel(context, *config);
  if (failed(module))
    return 1;
  double captureMs = msSince(start);

  zerosbp::CompileOptions options;
  options.planFile = outputFile;
  auto compiled = zerosbp::compileGraph(**module, *config, options);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  llvm::json::Object json = std::move(*compiled);
  // Capture counts as the first step of the compile.
  if (auto *passMs = json.getArray("pass_ms"))
    passMs->insert(passMs->begin(),
                   llvm::json::Object{{"pass", "capture"}, {"ms", captureMs}});
  json["compile_ms"] = msSince(start);

  if (!irFile.empty()) {
    std::string error;
    auto output = openOutputFile(irFile, &error);
    if (!output)
      return fail(error);
    (*module)->print(output->os());
    output->keep();
  }

  if (report == "json") {
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(json)))
                 << "\n";
  } else if (report == "text") {
    printTextReport(json);
  }
  return 0;
}
