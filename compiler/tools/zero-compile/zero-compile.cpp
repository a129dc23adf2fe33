//===- zero-compile.cpp - compiles a model with ZeRO and reports ----------===//
//
// Takes a `.mlir` forward graph or a built-in GPT-2 (the DeepSpeed tutorial's
// flags), runs the whole ZeRO pipeline for a stage, world size and config
// (global passes, partition, bucketing, scheduling, memory plan), writes the
// plan the runtime executes (-o model.zplan), and reports what one rank
// holds and sends per step, read off the compiled IR. Needs shapes only: no
// tensor is allocated.
//
//===----------------------------------------------------------------------===//

#include "compiler/config/DeepSpeedConfig.h"
#include "compiler/config/PipelineOptions.h"
#include "compiler/estimator/ModelStateReport.h"
#include "compiler/estimator/PlanReport.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/registration/InitAllDialects.h"
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
static cl::opt<int64_t> batchSize("batch-size", cl::init(0), cl::cat(category),
                                  cl::desc("global batch (default: world)"));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "zero-compile: " << message << "\n";
  return 1;
}

static bool wantsGpt2() {
  return !preset.empty() || numLayers || hiddenSize || numHeads || seqLength ||
         vocabSize;
}

/// The config from --config, --pipeline or the plain flags.
static llvm::Expected<zerosbp::ZeroConfig> loadConfig() {
  if (!configFile.empty() && !pipelineOptions.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--config and --pipeline exclude each "
                                   "other");
  llvm::Expected<zerosbp::ZeroConfig> config = zerosbp::ZeroConfig();
  if (!configFile.empty()) {
    std::string error;
    auto file = openInputFile(configFile, &error);
    if (!file)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
    config = zerosbp::parseDeepSpeedConfig(file->getBuffer(), world);
    if (!config)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     configFile + ": " +
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

static FailureOr<OwningOpRef<ModuleOp>> loadModel(MLIRContext &context,
                                                  int64_t ranks) {
  if (!inputFile.empty()) {
    if (wantsGpt2()) {
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
  config.batch = batchSize ? batchSize.getValue() : ranks;
  if (config.layers < 1 || config.embed < 1 || config.heads < 1 ||
      config.embed % config.heads || config.seqLen < 1 || config.vocab < 1 ||
      config.batch < 1) {
    fail("GPT-2 needs positive sizes and a hidden size divisible by the "
         "head count");
    return failure();
  }
  zerosbp::GraphBuilder builder(
      context, "gpt2", zerosbp::GraphBuilder::cpuPlacement(context, ranks));
  auto module = builder.finish({zerosbp::examples::buildGpt2(builder, config)});
  if (failed(module))
    fail(builder.error());
  return module;
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
  auto module = loadModel(context, config->world);
  if (failed(module))
    return 1;
  double captureMs = msSince(start);

  llvm::json::Array passMs;
  passMs.push_back(llvm::json::Object{{"pass", "capture"}, {"ms", captureMs}});
  for (const zerosbp::PipelineStep &step : *steps) {
    PassManager pm(&context);
    std::string pipeline = "func.func(" + step.textual() + ")";
    if (failed(parsePassPipeline(pipeline, pm)))
      return fail("cannot build pass " + step.pass);
    auto passStart = std::chrono::steady_clock::now();
    if (failed(pm.run(**module)))
      return fail(step.pass + " failed");
    passMs.push_back(
        llvm::json::Object{{"pass", step.pass}, {"ms", msSince(passStart)}});
  }
  func::FuncOp func;
  for (auto candidate : (*module)->getOps<func::FuncOp>())
    if (!candidate.isExternal()) {
      if (func)
        return fail("the model has more than one graph function");
      func = candidate;
    }
  if (!func)
    return fail("the model has no graph function");
  // Model states and traffic in the global view, where roles and SBP are
  // still on every value.
  auto analysis = zerosbp::analyzeModelStates(func);
  if (failed(analysis))
    return 1;

  // The local view, one pass at a time so each gets its time, and the plan.
  {
    auto passStart = std::chrono::steady_clock::now();
    PassManager partition(&context);
    partition.addPass(zerosbp::createZeroPartition());
    if (failed(partition.run(**module)))
      return fail("zero-partition failed");
    passMs.push_back(llvm::json::Object{{"pass", "zero-partition"},
                                        {"ms", msSince(passStart)}});
    for (const zerosbp::PipelineStep &step :
         zerosbp::localPipelineSteps(*config)) {
      PassManager local(&context);
      if (failed(parsePassPipeline("func.func(" + step.textual() + ")", local)))
        return fail("cannot build pass " + step.pass);
      passStart = std::chrono::steady_clock::now();
      if (failed(local.run(**module)))
        return fail(step.pass + " failed");
      passMs.push_back(
          llvm::json::Object{{"pass", step.pass}, {"ms", msSince(passStart)}});
    }
    if (!outputFile.empty()) {
      PassManager exporter(&context);
      exporter.addPass(zerosbp::createPlanExport(*config, outputFile));
      passStart = std::chrono::steady_clock::now();
      if (failed(exporter.run(**module)))
        return fail("zero-export-plan failed");
      passMs.push_back(llvm::json::Object{{"pass", "zero-export-plan"},
                                          {"ms", msSince(passStart)}});
    }
  }
  double compileMs = msSince(start);
  auto plan = zerosbp::analyzePlan(func);
  if (failed(plan))
    return 1;

  if (!irFile.empty()) {
    std::string error;
    auto output = openOutputFile(irFile, &error);
    if (!output)
      return fail(error);
    (*module)->print(output->os());
    output->keep();
  }

  llvm::json::Object json = analysis->toJson();
  json["pass_ms"] = std::move(passMs);
  json["compile_ms"] = compileMs;
  json["config"] = config->toJson();
  llvm::json::Object planJson = plan->toJson();
  // The planned model states against the section-4 formula read off the
  // global IR; the bucket buffers come on top of them.
  int64_t formula = analysis->modelStateBytes();
  planJson["model_states_vs_formula"] = llvm::json::Object{
      {"planned_bytes", plan->modelStateBytes},
      {"formula_bytes", formula},
      {"equal", plan->modelStateBytes == formula},
      {"bucket_buffer_bytes", plan->peakBytesByRole.count("comm_buffer")
                                  ? plan->peakBytesByRole.at("comm_buffer")
                                  : 0}};
  json["plan"] = std::move(planJson);
  if (!outputFile.empty())
    json["plan_file"] = outputFile;
  if (report == "json") {
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(json)))
                 << "\n";
  } else if (report == "text") {
    llvm::outs() << llvm::formatv(
        "params {0}  world {1}  stage {2}  ops {3}  compile {4:f1} ms\n",
        analysis->params, analysis->world, analysis->stage, analysis->ops,
        compileMs);
    for (const auto &[role, bytes] : analysis->bytesPerRank)
      llvm::outs() << llvm::formatv("  {0,-10} {1,16} bytes per rank\n", role,
                                    bytes);
    for (const auto &[kind, bytes] : analysis->commBytesPerStep)
      llvm::outs() << llvm::formatv(
          "  {0,-15} {1,16:f0} bytes sent per rank per step ({2} calls)\n",
          kind, bytes, analysis->collectives.at(kind));
    llvm::outs() << llvm::formatv(
        "  planned peak {0} bytes per rank (lower bound {1}), model states "
        "{2}, {3} buckets, {4:f0} of {5:f0} bytes sent overlap compute\n",
        plan->arenaBytes, plan->lowerBoundBytes, plan->modelStateBytes,
        plan->bucketCount(), plan->overlappedBytes, plan->commBytes);
  }
  return 0;
}
