//===- zero-run.cpp - trains a compiled plan across ranks -----------------===//
//
//   zero-run model.zplan --ranks N [--backend inprocess|mpi]
//            [--device cpu|cuda] --steps K [--data DIR] [--init DIR] [--save
//            DIR] [--report=json]
//            [--report-file FILE] [--trace FILE] [--seed S]
//            [--timeout SECONDS] [--threads T] [--quiet]
//            [--resume DIR] [--checkpoint-dir DIR [--checkpoint-every K]
//            [--keep K]] [--check-gradients] [--skip-nonfinite-steps]
//            [--cuda-graph on|off|auto]
//            [--allow-tf32] [--multi-tensor on|off]
//            [--defer-transfer-waits on|off]
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
// (docs/runtime.md#non-finite-numbers). With `--skip-nonfinite-steps`, a
// step whose loss is not finite makes no update and the run goes on.
//
// `--device` overrides the plan's placement device. On `cuda` each rank
// runs on its own GPU (rank r of a process on device r mod the devices it
// sees), with NCCL between the GPUs. `--cuda-graph` (default auto) replays
// one captured CUDA graph per step from the second step on;
// `--allow-tf32` runs f32 matrix products on TF32 tensor cores;
// `--multi-tensor` (default on) launches the optimizer's updates and casts
// as multi-tensor kernels. `--defer-transfer-waits` (default on) lets the
// parameters an offloaded optimizer copies back arrive during the next
// step's forward.
//
// `zero-run --help` lists every flag with its help and default.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/core/Limits.h"
#include "runtime/io/DurableFile.h"
#include "runtime/plan/Plan.h"
#include "runtime/tools/common/CommandLine.h"
#include "runtime/tools/common/OutputPaths.h"
#include "runtime/train/Hostfile.h"
#include "runtime/train/Interrupt.h"
#include "runtime/train/MpiTraining.h"
#include "runtime/train/Report.h"
#include "runtime/train/Trainer.h"

#include "absl/flags/flag.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <malloc.h>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

// The command line is `--name value` or `--name=value`, with `-` for `_` in
// the names below. An unset optional flag leaves the choice to the plan or
// the runtime.
ABSL_FLAG(std::optional<int>, ranks, std::nullopt,
          "ranks, which must equal the plan's world (-n N is the same); "
          "without it, the plan's world");
ABSL_FLAG(std::string, backend, "inprocess",
          "inprocess: one thread per rank in this process; mpi: one process "
          "per rank (started under mpirun, or starting it)");
ABSL_FLAG(std::optional<std::string>, hostfile, std::nullopt,
          "with --backend mpi: OpenMPI's hostfile (`host slots=N` per "
          "line); ranks fill each host's slots in order, and a plan's groups "
          "of its inner axis must each fit on one host");
ABSL_FLAG(std::string, device, "",
          "cpu or cuda: where the ranks run; without it, the plan's "
          "placement");
ABSL_FLAG(std::optional<int64_t>, steps, std::nullopt,
          "training steps of this run, or batches with --eval; required");
ABSL_FLAG(std::optional<std::string>, data, std::nullopt,
          "a directory of one <input>.npy per graph input, shape (steps, "
          "*global shape); without it, synthetic inputs from --seed");
ABSL_FLAG(std::optional<std::string>, init, std::nullopt,
          "a directory of one <param>.npy per parameter, PyTorch names and "
          "layouts; without it, each variable's init with --seed");
ABSL_FLAG(std::optional<std::string>, save, std::nullopt,
          "writes the final full parameters to this directory as .npy "
          "files, replacing it as a whole");
ABSL_FLAG(std::optional<std::string>, resume, std::nullopt,
          "continues from a checkpoint: a step directory, or a directory "
          "with `latest`; not with --init");
ABSL_FLAG(std::optional<std::string>, checkpoint_dir, std::nullopt,
          "saves the whole training state to this directory after the last "
          "step, and every --checkpoint-every steps");
ABSL_FLAG(std::optional<int64_t>, checkpoint_every, std::nullopt,
          "also saves a checkpoint every K steps (needs --checkpoint-dir)");
ABSL_FLAG(std::optional<int>, keep, std::nullopt,
          "keeps the newest K checkpoints (needs --checkpoint-dir); without "
          "it, all");
ABSL_FLAG(std::string, report, "none",
          "json: prints the report on stdout (progress lines go to stderr); "
          "none: no report on stdout");
ABSL_FLAG(std::optional<std::string>, report_file, std::nullopt,
          "writes the report to this file");
ABSL_FLAG(std::optional<std::string>, trace, std::nullopt,
          "writes the last step's compute and communication timeline to "
          "this file as Chrome trace-event JSON");
ABSL_FLAG(std::optional<uint64_t>, seed, std::nullopt,
          "seed of the synthetic data and initial values; without it, 0, or "
          "the checkpoint's with --resume");
ABSL_FLAG(int64_t, timeout, 300,
          "seconds a collective waits for its peers before the run fails");
ABSL_FLAG(std::optional<int>, threads, std::nullopt,
          "kernel threads per rank (matmuls, large elementwise updates); "
          "without it, the cores shared among this process's ranks");
ABSL_FLAG(bool, quiet, false, "prints no progress lines");
ABSL_FLAG(bool, check_gradients, false,
          "before every optimizer update, checks that the gradient it reads "
          "is finite");
ABSL_FLAG(bool, skip_nonfinite_steps, false,
          "a step whose loss is NaN or Inf makes no update (parameters, "
          "optimizer state and step count stay as they were), prints one "
          "line and the run goes on; the report lists these steps in "
          "skipped_steps. Without it, such a step stops the run");
ABSL_FLAG(std::string, cuda_graph, "auto",
          "on, off or auto: on cuda, captures the second step as one CUDA "
          "graph and replays it every later step; auto where that is "
          "verified, on also with NCCL between ranks; a plan that cannot be "
          "captured (offload, --check-gradients) runs op by op, saying why");
ABSL_FLAG(bool, allow_tf32, false,
          "on cuda, f32 matrix products use TF32 tensor cores "
          "(CUBLAS_COMPUTE_32F_FAST_TF32); bf16 and f16 ones are unchanged");
ABSL_FLAG(std::string, multi_tensor, "on",
          "on or off: on cuda, launches each run of optimizer updates (and "
          "of casts to the parameters' precision) as one multi-tensor kernel, "
          "bit for bit the per-instruction kernels' results");
ABSL_FLAG(std::string, defer_transfer_waits, "on",
          "on or off: a transfer whose bytes nothing later in the step "
          "touches (an offloaded optimizer's parameters copied back) is "
          "waited for by the next step's first reader, so that it overlaps "
          "that step's forward");
ABSL_FLAG(bool, eval, false,
          "runs an inference plan (zero-compile --eval) on --steps batches "
          "instead of training");
ABSL_FLAG(std::optional<std::string>, outputs, std::nullopt,
          "with --eval, writes every output stacked over the batches to "
          "<dir>/output<k>.npy");

using namespace zerosbp::runtime;

namespace {

const char *const kUsage =
    "usage: zero-run model.zplan --ranks N [--backend inprocess|mpi] "
    "[--hostfile FILE] [--device cpu|cuda] --steps K [--data DIR] [--init DIR] "
    "[--save DIR] "
    "[--report=json] "
    "[--report-file FILE] [--trace FILE] [--seed S] [--timeout SECONDS] "
    "[--threads T] [--quiet] [--resume DIR] [--checkpoint-dir DIR] "
    "[--checkpoint-every K] [--keep K] [--check-gradients] "
    "[--skip-nonfinite-steps] "
    "[--cuda-graph on|off|auto] [--allow-tf32] [--multi-tensor on|off] "
    "[--defer-transfer-waits on|off]\n"
    "       zero-run eval.zplan --eval --ranks N --steps K [--init DIR | "
    "--resume DIR] [--data DIR] [--outputs DIR] [--backend ...] "
    "[--report=json] [--report-file FILE]";

const tools::CommandLineSpec &commandLineSpec() {
  // Integers and choices are checked on the text as given, before Abseil
  // parses it, so that an error quotes it and only plain decimal integers
  // are taken.
  static const tools::CommandLineSpec kSpec = {
      kUsage,
      __FILE__,
      {{"ranks", 1, kMaxRanks},
       {"steps", 1, 1000000000},
       {"checkpoint_every", 1, 1000000000},
       {"keep", 1, 1000000},
       {"seed", 0, INT64_MAX},
       {"timeout", 1, 86400},
       {"threads", 1, 256}},
      {{"backend", {"inprocess", "mpi"}},
       {"device", {"cpu", "cuda"}},
       {"cuda_graph", {"on", "off", "auto"}},
       {"multi_tensor", {"on", "off"}},
       {"defer_transfer_waits", {"on", "off"}},
       {"report", {"json", "none"}}},
      {{"-n", "ranks"}}};
  return kSpec;
}

[[noreturn]] void usageError(const std::string &message) {
  tools::usageError(commandLineSpec(), message);
}

struct CommandLine {
  TrainOptions options;
  std::optional<std::string> hostfile;
  bool ranksGiven = false;
  bool jsonToStdout = false;
  std::optional<std::string> reportFile;
};

/// Before anything is read or written: no output may replace or remove
/// another output or an input.
void checkPathsApart(const CommandLine &line) {
  const TrainOptions &options = line.options;
  std::vector<tools::CommandPath> outputs = {
      {"--save", options.saveDir},
      {"--checkpoint-dir", options.checkpointDir, /*writtenInto=*/true},
      {"--outputs", options.outputsDir},
      {"--report-file", line.reportFile},
      {"--trace", options.tracePath}};
  // Under MPI every rank but 0 writes its timeline next to --trace.
  if (options.tracePath && options.backend == "mpi")
    for (int rank = 1; rank < options.ranks; ++rank)
      outputs.push_back({"--trace (rank " + std::to_string(rank) + ")",
                         *options.tracePath + ".rank" + std::to_string(rank)});
  tools::checkOutputsApart(outputs, {{"the plan", options.planPath},
                                     {"--init", options.initDir},
                                     {"--data", options.dataDir},
                                     {"--hostfile", line.hostfile}});
  // A resumed run goes on saving into the checkpoints it resumed from.
  for (const tools::CommandPath &output : outputs)
    if (output.name != "--checkpoint-dir")
      tools::checkApart(output, {"--resume", options.resumeDir});
}

CommandLine parse(int argc, char **argv) {
  std::string planPath =
      tools::parsePlanCommandLine(argc, argv, commandLineSpec());
  std::optional<int64_t> steps = absl::GetFlag(FLAGS_steps);
  if (!steps)
    usageError("--steps is required");
  std::optional<int64_t> checkpointEvery =
      absl::GetFlag(FLAGS_checkpoint_every);
  std::optional<int> keep = absl::GetFlag(FLAGS_keep);
  std::optional<std::string> checkpointDir =
      absl::GetFlag(FLAGS_checkpoint_dir);
  if ((checkpointEvery || keep) && !checkpointDir)
    usageError("--checkpoint-every and --keep need --checkpoint-dir");

  CommandLine line;
  TrainOptions &options = line.options;
  options.planPath = planPath;
  if (std::optional<int> ranks = absl::GetFlag(FLAGS_ranks)) {
    options.ranks = *ranks;
    line.ranksGiven = true;
  }
  options.backend = absl::GetFlag(FLAGS_backend);
  line.hostfile = absl::GetFlag(FLAGS_hostfile);
  if (line.hostfile && options.backend != "mpi")
    usageError("--hostfile needs --backend mpi");
  options.device = absl::GetFlag(FLAGS_device);
  options.steps = *steps;
  options.eval = absl::GetFlag(FLAGS_eval);
  options.outputsDir = absl::GetFlag(FLAGS_outputs);
  options.dataDir = absl::GetFlag(FLAGS_data);
  options.initDir = absl::GetFlag(FLAGS_init);
  options.saveDir = absl::GetFlag(FLAGS_save);
  options.resumeDir = absl::GetFlag(FLAGS_resume);
  options.checkpointDir = checkpointDir;
  options.checkpointEvery = checkpointEvery.value_or(0);
  options.keep = keep.value_or(0);
  line.jsonToStdout = absl::GetFlag(FLAGS_report) == "json";
  line.reportFile = absl::GetFlag(FLAGS_report_file);
  options.tracePath = absl::GetFlag(FLAGS_trace);
  if (std::optional<uint64_t> seed = absl::GetFlag(FLAGS_seed)) {
    options.seed = *seed;
    options.seedGiven = true;
  }
  options.timeoutSeconds = static_cast<double>(absl::GetFlag(FLAGS_timeout));
  options.threads = absl::GetFlag(FLAGS_threads).value_or(0);
  options.progress = !absl::GetFlag(FLAGS_quiet);
  options.checkGradients = absl::GetFlag(FLAGS_check_gradients);
  options.skipNonfiniteSteps = absl::GetFlag(FLAGS_skip_nonfinite_steps);
  std::string graph = absl::GetFlag(FLAGS_cuda_graph);
  options.deviceOptions.cudaGraph = graph == "on"    ? CudaGraphMode::On
                                    : graph == "off" ? CudaGraphMode::Off
                                                     : CudaGraphMode::Auto;
  options.deviceOptions.allowTf32 = absl::GetFlag(FLAGS_allow_tf32);
  options.deviceOptions.multiTensor = absl::GetFlag(FLAGS_multi_tensor) == "on";
  options.deviceOptions.deferTransferWaits =
      absl::GetFlag(FLAGS_defer_transfer_waits) == "on";
  checkPathsApart(line);
  return line;
}

/// The hostfile has slots for every rank, and the plan's groups of its
/// inner axis (MiCS's and hpZ's, docs/runtime.md#many-machines) each sit on
/// one host, so that their collectives stay within a machine.
void checkHostfile(const std::string &path, const TrainOptions &options) {
  std::vector<HostSlots> hosts = readHostfile(path);
  std::vector<int> hostOf = ranksToHosts(hosts, options.ranks, path);
  Plan plan = readPlan(options.planPath);
  int64_t group = plan.hierarchy.size() == 2 ? plan.hierarchy[1] : 1;
  if (std::optional<std::string> why = groupsAcrossHosts(hostOf, hosts, group))
    throw RuntimeError(path + ": " + *why);
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
      // Here, before mpirun starts, rather than by every rank after.
      checkRankCount(readPlan(options.planPath), options.ranks);
      if (line.hostfile)
        checkHostfile(*line.hostfile, options);
      return MpiTraining::relaunchUnderMpirun(argc, argv, options.ranks,
                                              line.hostfile.value_or(""));
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
      MpiTraining mpi(options.timeoutSeconds);
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
