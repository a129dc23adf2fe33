//===- compile_bench.cpp - compile time of the whole ZeRO pipeline --------===//
//
// GPT-2 at 12, 24, 48 and 96 layers (hidden 1600, 16 heads, world 8, stage
// 3, DeepSpeed's defaults otherwise) through capture, the global pipeline,
// and the local view (partition, bucketing, scheduling, memory plan and its
// check) to the exported plan file, on one thread. Prints one table, writes it
// as CSV (--csv) and JSON (--json), and reports how time grows with depth.
// Goal: 48 layers under 2 s, growth no faster than linear.
//
// Then GPT-3 175B at stage 3 on N = 8 ... 16384 ranks (--worlds), one
// sequence per rank: the plan's size and the compile time must not grow
// with N. Goal: under 1 s and under 10 MB at every N.
//
//===----------------------------------------------------------------------===//

#include "bench/common/BenchJson.h"
#include "compiler/builder/Gpt2Builder.h"
#include "compiler/config/PipelineOptions.h"
#include "compiler/pipeline/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <vector>

using namespace mlir;

static llvm::cl::opt<std::string>
    csvPath("csv", llvm::cl::desc("write the table as CSV to this file"),
            llvm::cl::init(""));
static llvm::cl::opt<std::string>
    jsonPath("json", llvm::cl::desc("write the rows as JSON to this file"),
             llvm::cl::init(""));
static llvm::cl::opt<int> repeats("repeats",
                                  llvm::cl::desc("runs per row; best is kept"),
                                  llvm::cl::init(3));
static llvm::cl::list<int64_t>
    layerCounts("layers", llvm::cl::desc("layer counts (default 12,24,48,96)"),
                llvm::cl::CommaSeparated);
static llvm::cl::list<int64_t>
    worldCounts("worlds",
                llvm::cl::desc("ranks of the GPT-3 175B sweep (default "
                               "8,64,512,1024,4096,16384; 0 skips it)"),
                llvm::cl::CommaSeparated);

// World 8, stage 3, overlap on; DeepSpeed's defaults otherwise.
static const char *const kPipeline = "world=8 stage=3 overlap-comm=true";

namespace {
struct Row {
  int64_t world = 8;
  int64_t layers = 0, params = 0, ops = 0;
  double captureMs = 1e30, pipelineMs = 1e30, localMs = 1e30;
  uint64_t planBytes = 0;
  double totalMs() const { return captureMs + pipelineMs + localMs; }
};
} // namespace

static double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// Compiles `model` with `config` on `world` ranks `repeats` times into
/// `row`, keeping the best time of each part; false on a failure.
static bool compileRow(Row &row, const zerosbp::Gpt2Config &model,
                       const zerosbp::ZeroConfig &config, int64_t world) {
  row.world = world;
  row.layers = model.layers;
  row.params = model.numParameters();
  for (int r = 0; r < std::max(1, repeats.getValue()); ++r) {
    MLIRContext context;
    context.disableMultithreading();
    auto start = std::chrono::steady_clock::now();
    zerosbp::GraphBuilder builder(
        context, "gpt2", zerosbp::GraphBuilder::cpuPlacement(context, world));
    auto module = builder.finish({zerosbp::buildGpt2(builder, model)});
    if (failed(module)) {
      llvm::errs() << builder.error() << "\n";
      return false;
    }
    row.captureMs = std::min(row.captureMs, msSince(start));
    PassManager pm(&context);
    if (llvm::Error error = zerosbp::buildGlobalPipeline(pm, config)) {
      llvm::errs() << llvm::toString(std::move(error)) << "\n";
      return false;
    }
    start = std::chrono::steady_clock::now();
    if (failed(pm.run(**module)))
      return false;
    row.pipelineMs = std::min(row.pipelineMs, msSince(start));
    row.ops = 0;
    (*module)->walk([&](Operation *) { ++row.ops; });

    llvm::SmallString<128> planPath;
    if (llvm::sys::fs::createTemporaryFile("compile_bench", "zplan",
                                           planPath)) {
      llvm::errs() << "cannot create a temporary plan file\n";
      return false;
    }
    PassManager local(&context);
    zerosbp::buildLocalPipeline(local, config, planPath);
    start = std::chrono::steady_clock::now();
    if (failed(local.run(**module)))
      return false;
    row.localMs = std::min(row.localMs, msSince(start));
    llvm::sys::fs::file_size(planPath, row.planBytes);
    llvm::sys::fs::remove(planPath);
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "compile-time benchmark\n");
  std::vector<int64_t> layers(layerCounts.begin(), layerCounts.end());
  if (layers.empty())
    layers = {12, 24, 48, 96};
  auto config = zerosbp::parsePipelineOptions(kPipeline);
  if (!config) {
    llvm::errs() << llvm::toString(config.takeError()) << "\n";
    return 1;
  }

  std::vector<Row> rows;
  for (int64_t depth : layers) {
    Row row;
    zerosbp::Gpt2Config model;
    model.layers = depth;
    model.embed = 1600;
    model.heads = 16;
    model.batch = 8;
    if (!compileRow(row, model, *config, 8))
      return 1;
    rows.push_back(row);
  }

  // GPT-3 175B against the rank count.
  std::vector<int64_t> worlds(worldCounts.begin(), worldCounts.end());
  if (worlds.empty())
    worlds = {8, 64, 512, 1024, 4096, 16384};
  std::vector<Row> sweep;
  for (int64_t world : worlds) {
    if (world <= 0)
      break;
    auto sweepConfig = zerosbp::parsePipelineOptions(
        llvm::formatv("world={0} stage=3 overlap-comm=true", world).str());
    if (!sweepConfig) {
      llvm::errs() << llvm::toString(sweepConfig.takeError()) << "\n";
      return 1;
    }
    zerosbp::Gpt2Config model;
    model.layers = 96;
    model.embed = 12288;
    model.heads = 96;
    model.seqLen = 2048;
    model.vocab = 50257;
    model.batch = world;
    Row row;
    if (!compileRow(row, model, *sweepConfig, world))
      return 1;
    sweep.push_back(row);
  }

  llvm::outs() << llvm::formatv("{0,6} {1,14} {2,8} {3,11} {4,10} {5,15} "
                                "{6,9} {7,10} {8,12}\n",
                                "layers", "params", "ops", "capture ms",
                                "global ms", "local+plan ms", "plan MB",
                                "total ms", "ms / layer");
  for (const Row &row : rows)
    llvm::outs() << llvm::formatv(
        "{0,6} {1,14} {2,8} {3,11:f1} {4,10:f1} {5,15:f1} {6,9:f1} {7,10:f1} "
        "{8,12:f2}\n",
        row.layers, row.params, row.ops, row.captureMs, row.pipelineMs,
        row.localMs, row.planBytes / 1e6, row.totalMs(),
        row.totalMs() / row.layers);
  if (rows.size() >= 2) {
    const Row &first = rows.front(), &last = rows.back();
    double growth = (last.totalMs() / first.totalMs()) /
                    (double(last.layers) / first.layers);
    llvm::outs() << llvm::formatv(
        "time grows {0:f2}x as fast as depth from {1} to {2} layers "
        "(1.00 = linear)\n",
        growth, first.layers, last.layers);
  }
  if (!sweep.empty()) {
    llvm::outs() << llvm::formatv(
        "\nGPT-3 175B ({0} parameters), stage 3, one sequence per rank:\n",
        sweep.front().params);
    llvm::outs() << llvm::formatv("{0,6} {1,11} {2,10} {3,15} {4,9} {5,10}\n",
                                  "ranks", "capture ms", "global ms",
                                  "local+plan ms", "plan MB", "total ms");
    for (const Row &row : sweep)
      llvm::outs() << llvm::formatv(
          "{0,6} {1,11:f1} {2,10:f1} {3,15:f1} {4,9:f2} {5,10:f1}\n", row.world,
          row.captureMs, row.pipelineMs, row.localMs, row.planBytes / 1e6,
          row.totalMs());
  }
  if (!csvPath.empty()) {
    std::error_code error;
    llvm::raw_fd_ostream csv(csvPath, error);
    if (error) {
      llvm::errs() << "cannot write " << csvPath << ": " << error.message()
                   << "\n";
      return 1;
    }
    csv << "world,layers,params,ops,capture_ms,pipeline_ms,local_plan_ms,"
           "plan_bytes,total_ms\n";
    for (const std::vector<Row> *table : {&rows, &sweep})
      for (const Row &row : *table)
        csv << llvm::formatv(
            "{0},{1},{2},{3},{4:f3},{5:f3},{6:f3},{7},{8:f3}\n", row.world,
            row.layers, row.params, row.ops, row.captureMs, row.pipelineMs,
            row.localMs, row.planBytes, row.totalMs());
  }
  if (!jsonPath.empty()) {
    std::vector<zerosbp::bench::JsonFields> json;
    for (const std::vector<Row> *table : {&rows, &sweep})
      for (const Row &row : *table)
        json.push_back(
            zerosbp::bench::JsonFields()
                .add("table", table == &rows ? "depth" : "ranks")
                .add("world", row.world)
                .add("layers", row.layers)
                .add("params", row.params)
                .add("ops", row.ops)
                .add("capture_ms", row.captureMs, 3)
                .add("pipeline_ms", row.pipelineMs, 3)
                .add("local_plan_ms", row.localMs, 3)
                .add("plan_bytes", static_cast<int64_t>(row.planBytes))
                .add("total_ms", row.totalMs(), 3));
    zerosbp::bench::JsonFields settings;
    settings.add("pipeline", kPipeline)
        .add("hidden", int64_t(1600))
        .add("heads", int64_t(16))
        .add("batch", int64_t(8))
        .add("repeats", int64_t(repeats.getValue()));
    if (llvm::Error error = zerosbp::bench::writeBenchJson(jsonPath, "compile",
                                                           settings, json)) {
      llvm::errs() << "compile_bench: " << llvm::toString(std::move(error))
                   << "\n";
      return 1;
    }
  }
  return 0;
}
