//===- zero-run.cpp - trains a compiled plan across ranks -----------------===//
//
//   zero-run model.zplan --ranks N [--backend inprocess|mpi]
//            [--device cpu|cuda] --steps K [--data DIR] [--init DIR] [--save
//            DIR] [--report=json]
//            [--report-file FILE] [--trace FILE] [--seed S]
//            [--timeout SECONDS] [--threads T] [--quiet]
//            [--resume DIR] [--checkpoint-dir DIR [--checkpoint-every K]
//            [--keep K]] [--check-gradients]
//   zero-run eval.zplan --eval --ranks N --steps K [--init DIR | --resume
//            DIR] [--data DIR] [--outputs DIR]
//
// Prints one progress line per step. With `--backend mpi` every process of
// `mpirun -n N` is one rank; started outside mpirun, zero-run launches
// itself under mpirun. SIGINT or SIGTERM stops every rank and exits 130 or
// 143; every file is written whole or not at all (docs/runtime.md#signals).
// `--trace` writes the last step's timeline of the compute and communication
// streams as Chrome trace-event JSON.
//
// `--checkpoint-dir` saves the whole training state (docs/checkpoint.md)
// every K steps and at the end; `--resume` continues from a checkpoint
// saved at any number of ranks and stage. `--steps` counts the steps of this
// run.
//
// `--eval` runs an inference plan (zero-compile --eval) on K batches: the
// parameters come from --init, from a training checkpoint (--resume: its
// parameters only) or the plan's initializers; batch b reads data row b;
// each batch's first 0-D output is printed as its loss, and `--outputs DIR`
// writes every output stacked over the batches (DIR/output<k>.npy).
//
// A NaN or Inf in --init or --data, or in the loss, stops the run; with
// `--check-gradients`, so does one in a gradient an update reads
// (docs/runtime.md#non-finite-numbers).
//
// `--device` overrides the plan's placement device. On `cuda` each rank
// runs on its own GPU (rank r of a process on device r mod the devices it
// sees), with NCCL between the GPUs.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/core/Limits.h"
#include "runtime/io/DurableFile.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/Interrupt.h"
#include "runtime/train/MpiTraining.h"
#include "runtime/train/Report.h"
#include "runtime/train/Trainer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <malloc.h>
#include <string>
#include <vector>

using namespace zerosbp::runtime;

namespace {

const char *const kUsage =
    "usage: zero-run model.zplan --ranks N [--backend inprocess|mpi] "
    "[--device cpu|cuda] --steps K [--data DIR] [--init DIR] [--save DIR] "
    "[--report=json] "
    "[--report-file FILE] [--trace FILE] [--seed S] [--timeout SECONDS] "
    "[--threads T] [--quiet] [--resume DIR] [--checkpoint-dir DIR] "
    "[--checkpoint-every K] [--keep K] [--check-gradients]\n"
    "       zero-run eval.zplan --eval --ranks N --steps K [--init DIR | "
    "--resume DIR] [--data DIR] [--outputs DIR] [--backend ...] "
    "[--report=json] [--report-file FILE]";

[[noreturn]] void usageError(const std::string &message) {
  throw RuntimeError(message + "\n" + kUsage);
}

int64_t parseInteger(const std::string &flag, const std::string &text,
                     int64_t min, int64_t max) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > max)
    usageError(flag + ": expected an integer in [" + std::to_string(min) +
               ", " + std::to_string(max) + "], got '" + text + "'");
  return value;
}

struct CommandLine {
  TrainOptions options;
  bool ranksGiven = false;
  bool stepsGiven = false;
  bool jsonToStdout = false;
  std::optional<std::string> reportFile;
};

CommandLine parse(int argc, char **argv) {
  CommandLine line;
  TrainOptions &options = line.options;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool inlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t equals = arg.find('=');
      if (equals != std::string::npos) {
        value = arg.substr(equals + 1);
        arg = arg.substr(0, equals);
        inlineValue = true;
      }
    }
    auto next = [&]() -> std::string {
      if (inlineValue)
        return value;
      if (i + 1 >= args.size())
        usageError(arg + " needs a value");
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage << "\n";
      std::exit(0);
    } else if (arg == "--ranks" || arg == "-n") {
      options.ranks = static_cast<int>(parseInteger(arg, next(), 1, kMaxRanks));
      line.ranksGiven = true;
    } else if (arg == "--backend") {
      options.backend = next();
      if (options.backend != "inprocess" && options.backend != "mpi")
        usageError("--backend: expected inprocess or mpi, got '" +
                   options.backend + "'");
    } else if (arg == "--device") {
      options.device = next();
      if (options.device != "cpu" && options.device != "cuda")
        usageError("--device: expected cpu or cuda, got '" + options.device +
                   "'");
    } else if (arg == "--steps") {
      options.steps = parseInteger(arg, next(), 1, 1000000000);
      line.stepsGiven = true;
    } else if (arg == "--eval") {
      options.eval = true;
    } else if (arg == "--outputs") {
      options.outputsDir = next();
    } else if (arg == "--data") {
      options.dataDir = next();
    } else if (arg == "--init") {
      options.initDir = next();
    } else if (arg == "--save") {
      options.saveDir = next();
    } else if (arg == "--resume") {
      options.resumeDir = next();
    } else if (arg == "--checkpoint-dir") {
      options.checkpointDir = next();
    } else if (arg == "--checkpoint-every") {
      options.checkpointEvery = parseInteger(arg, next(), 1, 1000000000);
    } else if (arg == "--keep") {
      options.keep = static_cast<int>(parseInteger(arg, next(), 1, 1000000));
    } else if (arg == "--report") {
      std::string kind = next();
      if (kind == "json")
        line.jsonToStdout = true;
      else if (kind != "none")
        usageError("--report: expected json or none, got '" + kind + "'");
    } else if (arg == "--report-file") {
      line.reportFile = next();
    } else if (arg == "--trace") {
      options.tracePath = next();
    } else if (arg == "--seed") {
      options.seed =
          static_cast<uint64_t>(parseInteger(arg, next(), 0, INT64_MAX));
      options.seedGiven = true;
    } else if (arg == "--timeout") {
      options.timeoutSeconds =
          static_cast<double>(parseInteger(arg, next(), 1, 86400));
    } else if (arg == "--threads") {
      options.threads = static_cast<int>(parseInteger(arg, next(), 1, 256));
    } else if (arg == "--quiet") {
      options.progress = false;
    } else if (arg == "--check-gradients") {
      options.checkGradients = true;
    } else if (arg.rfind("-", 0) == 0) {
      usageError("unknown option '" + arg + "'");
    } else if (options.planPath.empty()) {
      options.planPath = arg;
    } else {
      usageError("unexpected argument '" + arg + "'");
    }
  }
  if (options.planPath.empty())
    usageError("no plan file given");
  if (!line.stepsGiven)
    usageError("--steps is required");
  if ((options.checkpointEvery > 0 || options.keep > 0) &&
      !options.checkpointDir)
    usageError("--checkpoint-every and --keep need --checkpoint-dir");
  return line;
}

} // namespace

int main(int argc, char **argv) {
  // Large set-up buffers (initial values, shards of a checkpoint) come
  // from mmap and go back to the system when freed, instead of staying in
  // malloc's heap: the resident memory of a run is what it holds
  // (docs/runtime.md#offload).
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  int rank = 0;
  try {
    CommandLine line = parse(argc, argv);
    TrainOptions &options = line.options;
    if (options.backend == "mpi" && !MpiTraining::launchedByMpirun()) {
      if (!line.ranksGiven)
        usageError("--backend mpi needs --ranks");
      return MpiTraining::relaunchUnderMpirun(argc, argv, options.ranks);
    }
    // In process, SIGINT and SIGTERM stop the run between writes; an MPI
    // rank is stopped by mpirun (docs/runtime.md#signals).
    if (options.backend != "mpi")
      catchInterrupts("zero-run", std::chrono::seconds(5));
    Plan plan = readPlan(options.planPath);
    if (!line.ranksGiven)
      options.ranks = plan.world;
    // With the report on stdout, progress goes to stderr.
    std::ostream &progress = line.jsonToStdout ? std::cerr : std::cout;
    TrainResult result;
    if (options.backend == "mpi") {
      MpiTraining mpi;
      rank = mpi.rank();
      if (mpi.size() != options.ranks)
        throw RuntimeError("mpirun started " + std::to_string(mpi.size()) +
                           " processes but --ranks is " +
                           std::to_string(options.ranks));
      result = mpi.train(plan, options, progress);
    } else {
      result = trainInProcess(plan, options, progress);
    }
    throwIfInterrupted();
    if (rank == 0) {
      std::string report = trainReportJson(plan, options, result);
      if (line.reportFile)
        writeOutputFile(*line.reportFile, report + "\n", "report");
      if (line.jsonToStdout)
        std::cout << report << std::endl;
    }
    return 0;
  } catch (const std::exception &error) {
    // Whatever a signal made fail, the signal is the reason.
    if (int signal = interruptSignal()) {
      std::cerr << "zero-run: interrupted by " << signalName(signal)
                << std::endl;
      return 128 + signal;
    }
    std::string message = error.what();
    std::cerr << "zero-run: " << message << std::endl;
    return 1;
  }
}
