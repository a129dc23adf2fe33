//===- ir_scale_bench.cpp - capture, print, parse and verify at scale -----===//
//
// Times the front of the compiler on the GPT-2 presets: capturing the graph
// with GraphBuilder, printing it, and parsing + verifying the text. Prints
// one table and writes it as CSV (--csv) and JSON (--json) for comparison
// across commits.
//
//===----------------------------------------------------------------------===//

#include "bench/common/BenchJson.h"
#include "compiler/builder/Gpt2Builder.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace mlir;

static llvm::cl::opt<std::string>
    csvPath("csv", llvm::cl::desc("write the table as CSV to this file"),
            llvm::cl::init(""));
static llvm::cl::opt<std::string>
    jsonPath("json", llvm::cl::desc("write the rows as JSON to this file"),
             llvm::cl::init(""));
static llvm::cl::list<std::string>
    presets("preset", llvm::cl::desc("GPT-2 presets (default: all)"));
static llvm::cl::opt<int> repeats("repeats",
                                  llvm::cl::desc("runs per row; best is kept"),
                                  llvm::cl::init(3));

namespace {
struct Row {
  std::string preset;
  int64_t params = 0, ops = 0, bytes = 0;
  double buildMs = 1e30, printMs = 1e30, parseMs = 1e30;
};

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}
} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "IR scale benchmark\n");
  std::vector<std::string> names(presets.begin(), presets.end());
  if (names.empty())
    names = {"tiny", "small", "medium", "large", "xl"};

  std::vector<Row> rows;
  for (const std::string &name : names) {
    auto config = zerosbp::Gpt2Config::preset(name);
    if (!config) {
      llvm::errs() << "ir_scale_bench: unknown preset '" << name << "'\n";
      return 1;
    }
    Row row;
    row.preset = name;
    row.params = config->numParameters();
    for (int r = 0; r < std::max(1, repeats.getValue()); ++r) {
      MLIRContext context;
      context.disableMultithreading();
      auto start = std::chrono::steady_clock::now();
      zerosbp::GraphBuilder builder(
          context, "gpt2", zerosbp::GraphBuilder::cpuPlacement(context, 8));
      auto module = builder.finish({zerosbp::buildGpt2(builder, *config)});
      if (failed(module)) {
        llvm::errs() << "ir_scale_bench: " << builder.error() << "\n";
        return 1;
      }
      row.buildMs = std::min(row.buildMs, msSince(start));

      start = std::chrono::steady_clock::now();
      std::string text;
      llvm::raw_string_ostream os(text);
      (*module)->print(os);
      row.printMs = std::min(row.printMs, msSince(start));
      row.bytes = text.size();

      start = std::chrono::steady_clock::now();
      auto parsed = parseSourceString<ModuleOp>(text, &context);
      if (!parsed) {
        llvm::errs() << "ir_scale_bench: printed " << name
                     << " graph does not parse\n";
        return 1;
      }
      row.parseMs = std::min(row.parseMs, msSince(start));
      row.ops = 0;
      parsed->walk([&](Operation *) { ++row.ops; });
    }
    rows.push_back(row);
  }

  llvm::outs() << llvm::formatv(
      "{0,-8} {1,14} {2,8} {3,12} {4,10} {5,10} {6,14}\n", "preset", "params",
      "ops", "text bytes", "build ms", "print ms", "parse+verify ms");
  for (const Row &row : rows)
    llvm::outs() << llvm::formatv(
        "{0,-8} {1,14} {2,8} {3,12} {4,10:f2} {5,10:f2} {6,14:f2}\n",
        row.preset, row.params, row.ops, row.bytes, row.buildMs, row.printMs,
        row.parseMs);

  if (!csvPath.empty()) {
    std::error_code error;
    llvm::raw_fd_ostream csv(csvPath, error);
    if (error) {
      llvm::errs() << "ir_scale_bench: cannot write " << csvPath << ": "
                   << error.message() << "\n";
      return 1;
    }
    csv << "preset,params,ops,text_bytes,build_ms,print_ms,parse_verify_ms\n";
    for (const Row &row : rows)
      csv << llvm::formatv("{0},{1},{2},{3},{4:f3},{5:f3},{6:f3}\n", row.preset,
                           row.params, row.ops, row.bytes, row.buildMs,
                           row.printMs, row.parseMs);
  }
  if (!jsonPath.empty()) {
    std::vector<zerosbp::bench::JsonFields> json;
    for (const Row &row : rows)
      json.push_back(zerosbp::bench::JsonFields()
                         .add("preset", row.preset)
                         .add("params", row.params)
                         .add("ops", row.ops)
                         .add("text_bytes", row.bytes)
                         .add("build_ms", row.buildMs, 3)
                         .add("print_ms", row.printMs, 3)
                         .add("parse_verify_ms", row.parseMs, 3));
    zerosbp::bench::JsonFields settings;
    settings.add("placement_ranks", int64_t(8))
        .add("repeats", int64_t(repeats.getValue()));
    if (llvm::Error error = zerosbp::bench::writeBenchJson(jsonPath, "ir_scale",
                                                           settings, json)) {
      llvm::errs() << "ir_scale_bench: " << llvm::toString(std::move(error))
                   << "\n";
      return 1;
    }
  }
  return 0;
}
