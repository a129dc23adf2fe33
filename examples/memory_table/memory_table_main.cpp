//===- memory_table_main.cpp - prints the ZeRO paper's memory tables ------===//
//
// Reproduces Tables 1 and 2 of the ZeRO paper (arXiv:1910.02054) from the
// formulas, with the paper's rounding, and the largest trainable model per
// data-parallel degree. `--csv=PATH` also writes every cell unrounded.
//
//===----------------------------------------------------------------------===//

#include "examples/memory_table/ActivationMemory.h"
#include "examples/memory_table/PaperTables.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

using namespace zerosbp::examples::memory;

static const char *kUsage =
    "usage: memory_table [--csv=PATH]\n"
    "Prints the ZeRO paper's Tables 1 and 2 computed from its formulas.\n";

/// Appends printf-formatted text to line.
template <typename... Args>
static void appendf(std::string &line, const char *format, Args... args) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, args...);
  line += buffer;
}

/// Prints line without the padding the last column left behind.
static void printLine(std::string line) {
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  std::printf("%s\n", line.c_str());
}

static void printTable1() {
  printLine("Table 1: model-state memory per device (GB), mixed-precision "
            "Adam (K = 12)");
  printLine("         * = smallest N_d that fits a 32 GB V100 (bold in the "
            "paper)");
  std::string models(6, ' ');
  for (const PaperModel &model : kTable1Models)
    appendf(models, " | %-32s", (std::string(model.name) + " model").c_str());
  printLine(models);
  std::string stages = "   N_d";
  for (size_t i = 0; i < std::size(kTable1Models); ++i) {
    stages += " |";
    for (ZeroStage stage : kTable1Stages)
      appendf(stages, " %9s ", paperStageName(stage));
  }
  printLine(stages);
  for (int64_t degree : kTable1DataParallel) {
    std::string row;
    appendf(row, "%6lld", static_cast<long long>(degree));
    for (const PaperModel &model : kTable1Models) {
      row += " |";
      for (ZeroStage stage : kTable1Stages) {
        bool bold = table1CellIsBold(model.numParams, degree, stage);
        appendf(row, " %9s%c",
                table1Cell(model.numParams, degree, stage).c_str(),
                bold ? '*' : ' ');
      }
    }
    printLine(row);
  }
}

static void printTable2() {
  std::printf("\nTable 2: largest model on 32 GB V100s at N_d = %lld, GPUs = "
              "N_d x MP\n",
              static_cast<long long>(kTable2DataParallel));
  std::printf("         paper's rounding [unrounded, billions]\n");
  std::printf("%4s %5s", "MP", "GPUs");
  for (ZeroStage stage : kTable2Stages)
    std::printf(" %17s", paperStageName(stage));
  std::printf("\n");
  for (int64_t mp : kTable2ModelParallel) {
    std::printf("%4lld %5lld", static_cast<long long>(mp),
                static_cast<long long>(mp * kTable2DataParallel));
    for (ZeroStage stage : kTable2Stages) {
      char exact[32];
      std::snprintf(exact, sizeof(exact), "[%.2f]",
                    table2Params(stage, mp) / 1e9);
      std::printf(" %7s %9s", table2Cell(stage, mp).c_str(), exact);
    }
    std::printf("\n");
  }
}

static void printMaxModelPerDataParallel() {
  std::printf("\nLargest model on 32 GB devices per N_d, no model "
              "parallelism (billions)\n");
  std::printf("%6s", "N_d");
  for (ZeroStage stage : kTable2Stages)
    std::printf(" %9s", paperStageName(stage));
  std::printf("\n");
  for (int64_t degree : kTable1DataParallel) {
    std::printf("%6lld", static_cast<long long>(degree));
    for (ZeroStage stage : kTable2Stages)
      std::printf(" %9.2f", maxModelParams(stage, kV100Bytes, degree,
                                           kMixedPrecisionAdamK) /
                                1e9);
    std::printf("\n");
  }
}

/// The DeepSpeed tutorial's two GPT-2 configurations per GPU: model states
/// at the stage the tutorial runs them, and activations without and with
/// activation checkpointing (the 10B launch passes
/// --checkpoint-activations). Parameters: V E + T E + L (12 E^2 + 13 E) +
/// 2 E with V = 50257, T = 1024 (Megatron's GPT-2).
struct TutorialModel {
  const char *name;
  double numParams;
  ZeroStage stage;
  int64_t gpus;
  TransformerShape shape;
};
static const TutorialModel kTutorialModels[] = {
    {"1.5B",
     1.5576112e9,
     ZeroStage::OptimizerStates,
     8,
     {48, 1600, 16, 1024, 1}},
    {"10B", 10279047168.0, ZeroStage::Gradients, 32, {50, 4096, 32, 1024, 1}},
};

static void printActivations() {
  std::printf("\nThe DeepSpeed tutorial's GPT-2 per GPU (GB): model states "
              "(mixed-precision Adam) and activations (Korthikanti et al. "
              "2022, 16-bit, micro-batch 1, sequence 1024)\n");
  std::printf("%6s %6s %5s %13s %12s %14s %13s %15s\n", "model", "stage",
              "GPUs", "model states", "activations", "checkpointed", "total",
              "checkpointed");
  for (const TutorialModel &model : kTutorialModels) {
    double states = modelStateBytes(model.stage, model.numParams, model.gpus,
                                    kMixedPrecisionAdamK);
    double plain = activationBytes(model.shape);
    double kept = checkpointedActivationBytes(model.shape);
    std::printf("%6s %6d %5lld %13.2f %12.2f %14.2f %13.2f %15.2f\n",
                model.name, static_cast<int>(model.stage),
                static_cast<long long>(model.gpus), states / 1e9, plain / 1e9,
                kept / 1e9, (states + plain) / 1e9, (states + kept) / 1e9);
  }
}

/// `bazel run` starts in the runfiles tree; relative paths mean the caller's
/// directory.
static std::string resolveOutputPath(const std::string &path) {
  const char *callerDir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || !callerDir)
    return path;
  return std::string(callerDir) + "/" + path;
}

static bool writeCsv(const std::string &path) {
  FILE *file = std::fopen(path.c_str(), "w");
  if (!file)
    return false;
  std::fprintf(file, "table,model,data_parallel,model_parallel,stage,"
                     "quantity,value,paper_cell\n");
  for (const PaperModel &model : kTable1Models)
    for (int64_t degree : kTable1DataParallel)
      for (ZeroStage stage : kTable1Stages)
        std::fprintf(file, "table1,%s,%lld,1,%d,bytes_per_device,%.15g,%s\n",
                     model.name, static_cast<long long>(degree),
                     static_cast<int>(stage),
                     table1Bytes(model.numParams, degree, stage),
                     table1Cell(model.numParams, degree, stage).c_str());
  for (int64_t mp : kTable2ModelParallel)
    for (ZeroStage stage : kTable2Stages)
      std::fprintf(file, "table2,,%lld,%lld,%d,max_params,%.15g,%s\n",
                   static_cast<long long>(kTable2DataParallel),
                   static_cast<long long>(mp), static_cast<int>(stage),
                   table2Params(stage, mp), table2Cell(stage, mp).c_str());
  for (int64_t degree : kTable1DataParallel)
    for (ZeroStage stage : kTable2Stages)
      std::fprintf(
          file, "max_params_per_dp,,%lld,1,%d,max_params,%.15g,\n",
          static_cast<long long>(degree), static_cast<int>(stage),
          maxModelParams(stage, kV100Bytes, degree, kMixedPrecisionAdamK));
  return std::fclose(file) == 0;
}

int main(int argc, char **argv) {
  std::string csvPath;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--csv=", 6) == 0 && argv[i][6] != '\0') {
      csvPath = resolveOutputPath(argv[i] + 6);
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "memory_table: unknown argument '%s'\n%s", argv[i],
                   kUsage);
      return 1;
    }
  }
  printTable1();
  printTable2();
  printMaxModelPerDataParallel();
  printActivations();
  if (!csvPath.empty() && !writeCsv(csvPath)) {
    std::fprintf(stderr, "memory_table: cannot write '%s'\n", csvPath.c_str());
    return 1;
  }
  return 0;
}
