//===- machine_probe.cpp - measures this machine for zero-sim -------------===//
//
//   machine_probe compute
//       one core's rates, through the runtime's own CPU kernels: f32 matmul
//       FLOP/s (nn.matmul on square sizes 256, 512 and 1024, their mean),
//       element-wise FLOP/s (nn.gelu, counted as zero-sim counts it),
//       memory bandwidth (nn.add on 4M elements) and the cost of a kernel
//       call (nn.add on 16 elements): a zero-sim device file on stdout.
//   machine_probe comm --backend inprocess|mpi --ranks N
//       all-reduce, reduce-scatter and all-gather of 4 KiB to 16 MiB over N
//       ranks through the runtime's communicators (under mpirun for mpi),
//       and the latency a and per-rank bandwidth b that fit
//       t = a + bytes sent / b best (least squares): JSON on stdout.
//
// bench/sim/sim_bench.py runs both and compares zero-sim's predictions
// with measured runs (docs/scale.md#validation).
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessComm.h"
#include "runtime/comm/MpiComm.h"
#include "runtime/core/Error.h"
#include "runtime/kernels/Kernel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace zerosbp::runtime;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The fastest of `repeats` timings of `iterations` calls, per call.
template <typename Body>
double bestPerCall(int repeats, int iterations, Body body) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < iterations; ++i)
      body();
    best = std::min(best, secondsSince(start) / iterations);
  }
  return best;
}

TensorRef tensor(std::vector<float> &storage, std::vector<int64_t> shape) {
  TensorRef ref;
  ref.data = storage.data();
  ref.shape = std::move(shape);
  return ref;
}

double kernelSeconds(const char *op, std::vector<TensorRef> operands,
                     std::vector<TensorRef> results, int iterations,
                     const std::string &flag = "") {
  KernelFn kernel = findCpuKernel(op);
  if (!kernel)
    throw RuntimeError(std::string("no CPU kernel ") + op);
  AttrMap attrs;
  if (!flag.empty())
    attrs.set(flag, true);
  kernel(attrs, operands, results); // Warm up.
  return bestPerCall(5, iterations, [&] { kernel(attrs, operands, results); });
}

int probeCompute() {
  setCpuKernelThreads(1);
  // The matmul rate against GEMM size on 1 to `cores` BLAS threads, and
  // the flat one-thread rate zero-sim uses without the curves: the mean of
  // 256, 512 and 1024.
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string curves;
  double matmulRate = 0;
  for (unsigned threads = 1; threads <= cores; ++threads) {
    setCpuKernelThreads(static_cast<int>(threads));
    std::string curve;
    for (int64_t n = 32; n <= 1024; n *= 2) {
      std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
      int iterations = static_cast<int>(
          std::max<int64_t>(2, (int64_t(1) << 28) / (n * n * n)));
      // A model's matmuls come in three forms (forward, and the two
      // gradients, which read one operand transposed): their mean time.
      double seconds = 0;
      for (const char *transposed : {"", "transpose_lhs", "transpose_rhs"})
        seconds +=
            kernelSeconds("nn.matmul", {tensor(a, {n, n}), tensor(b, {n, n})},
                          {tensor(c, {n, n})}, iterations, transposed) /
            3;
      double rate = 2.0 * n * n * n / seconds;
      if (threads == 1 && n >= 256)
        matmulRate += rate / 3;
      char point[64];
      std::snprintf(point, sizeof(point), "%s[%lld, %.6g]",
                    curve.empty() ? "" : ", ", static_cast<long long>(n), rate);
      curve += point;
    }
    curves += (curves.empty() ? "\"" : ",\n    \"") + std::to_string(threads) +
              "\": [" + curve + "]";
  }
  setCpuKernelThreads(1);
  const int64_t kElements = 4 << 20;
  std::vector<float> x(kElements, 0.5f), y(kElements, 0.25f), z(kElements);
  // zero-sim counts 14 FLOPs per element of nn.gelu.
  double gelu = kernelSeconds("nn.gelu", {tensor(x, {kElements})},
                              {tensor(z, {kElements})}, 4);
  double add =
      kernelSeconds("nn.add", {tensor(x, {kElements}), tensor(y, {kElements})},
                    {tensor(z, {kElements})}, 4);
  std::vector<float> small(16, 1.0f), smallOut(16);
  double call =
      kernelSeconds("nn.add", {tensor(small, {16}), tensor(small, {16})},
                    {tensor(smallOut, {16})}, 100000);
  double bandwidth = 3.0 * kElements * sizeof(float) / add;
  // The same add on 3 x 256 KiB: what a kernel whose tensors stay in the
  // caches streams at.
  const int64_t kCached = 64 << 10;
  double cachedAdd =
      kernelSeconds("nn.add", {tensor(x, {kCached}), tensor(y, {kCached})},
                    {tensor(z, {kCached})}, 200);
  double cacheBandwidth = 3.0 * kCached * sizeof(float) / cachedAdd;
  std::printf("{\n"
              "  \"name\": \"cpu (this machine, %u cores)\",\n"
              "  \"matmul_flops\": {\"f32\": %.6g},\n"
              "  \"matmul_size_curve\": {\n    %s},\n"
              "  \"vector_flops\": %.6g,\n"
              "  \"memory_bandwidth\": %.6g,\n"
              "  \"cache_bytes\": %lld,\n"
              "  \"cache_bandwidth\": %.6g,\n"
              "  \"kernel_overhead_s\": %.6g,\n"
              "  \"cores\": %u,\n"
              "  \"algorithm\": \"direct\",\n"
              "  \"collectives_use_cores\": true,\n"
              "  \"measured\": \"machine_probe compute: one core; nn.matmul "
              "32-1024 (plain and transposed), nn.gelu, nn.add on 4M and 64K "
              "elements\"\n"
              "}\n",
              cores, matmulRate, curves.c_str(), 14.0 * kElements / gelu,
              bandwidth, static_cast<long long>(3 * kCached * sizeof(float)),
              cacheBandwidth, call, cores);
  return 0;
}

struct Sample {
  double bytesSent;
  double seconds;
};

// One rank's timings of every collective and size; the caller keeps the
// slowest rank's.
std::vector<Sample> timeCollectives(Communicator &comm, int ranks) {
  std::vector<int> all(ranks);
  for (int r = 0; r < ranks; ++r)
    all[r] = r;
  CommGroup &group = comm.createGroup(all);
  std::vector<Sample> samples;
  for (int64_t bytes = 4096; bytes <= (16 << 20); bytes *= 4) {
    int64_t count = bytes / 4;
    count -= count % ranks;
    std::vector<float> send(count, 1.0f), recv(count, 0.0f);
    int iterations = bytes <= (256 << 10) ? 50 : 5;
    for (CollectiveKind kind :
         {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
          CollectiveKind::AllGather}) {
      int64_t part = count / ranks;
      auto run = [&] {
        switch (kind) {
        case CollectiveKind::AllReduce:
          comm.allReduce(group, DType::F32, send.data(), count, ReduceOp::Sum);
          break;
        case CollectiveKind::ReduceScatter:
          comm.reduceScatter(group, DType::F32, send.data(), recv.data(), part,
                             ReduceOp::Sum);
          break;
        default:
          comm.allGather(group, DType::F32, send.data(), recv.data(), part);
          break;
        }
      };
      run(); // Warm up.
      double seconds = bestPerCall(3, iterations, run);
      int64_t argument = kind == CollectiveKind::AllReduce ? count : part;
      samples.push_back({static_cast<double>(directBytesSent(
                             kind, DType::F32, argument, ranks, 0)),
                         seconds});
    }
  }
  return samples;
}

// t = a + x / b: b from the collectives of 1 MiB and more sent (least
// squares, where bandwidth dominates), then a as the median of t - x / b
// over those of 64 KiB and less (where latency dominates).
void printFit(const std::string &backend, int ranks,
              const std::vector<Sample> &samples) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Sample &s : samples) {
    if (s.bytesSent < (1 << 20))
      continue;
    n += 1;
    sx += s.bytesSent;
    sy += s.seconds;
    sxx += s.bytesSent * s.bytesSent;
    sxy += s.bytesSent * s.seconds;
  }
  double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  std::vector<double> rests;
  for (const Sample &s : samples)
    if (s.bytesSent <= (64 << 10))
      rests.push_back(s.seconds - s.bytesSent * slope);
  std::sort(rests.begin(), rests.end());
  double intercept = rests.empty() ? 0 : rests[rests.size() / 2];
  std::printf("{\"backend\": \"%s\", \"ranks\": %d, \"latency_s\": %.6g, "
              "\"bandwidth\": %.6g, \"samples\": [",
              backend.c_str(), ranks, std::max(intercept, 0.0), 1.0 / slope);
  for (size_t i = 0; i < samples.size(); ++i)
    std::printf("%s[%.0f, %.6g]", i ? ", " : "", samples[i].bytesSent,
                samples[i].seconds);
  std::printf("]}\n");
}

int probeComm(const std::string &backend, int ranks, int *argc, char ***argv) {
  setCpuKernelThreads(1);
  if (backend == "mpi") {
    MpiSession session(argc, argv);
    std::unique_ptr<Communicator> comm = session.communicator();
    std::vector<Sample> mine = timeCollectives(*comm, session.size());
    std::vector<double> times;
    for (const Sample &s : mine)
      times.push_back(s.seconds);
    std::vector<double> every = session.gatherRecords(times);
    if (session.rank() == 0) {
      for (size_t i = 0; i < mine.size(); ++i)
        for (int r = 1; r < session.size(); ++r)
          mine[i].seconds =
              std::max(mine[i].seconds, every[r * mine.size() + i]);
      printFit(backend, session.size(), mine);
    }
    return 0;
  }
  InProcessWorld world(ranks);
  std::vector<std::vector<Sample>> perRank(ranks);
  std::vector<std::exception_ptr> errors =
      world.runOnAllRanks([&](Communicator &comm) {
        perRank[comm.rank()] = timeCollectives(comm, ranks);
      });
  for (const std::exception_ptr &error : errors)
    if (error)
      std::rethrow_exception(error);
  std::vector<Sample> slowest = perRank[0];
  for (int r = 1; r < ranks; ++r)
    for (size_t i = 0; i < slowest.size(); ++i)
      slowest[i].seconds = std::max(slowest[i].seconds, perRank[r][i].seconds);
  printFit(backend, ranks, slowest);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "compute" && argc == 2)
      return probeCompute();
    if (mode == "comm" && argc == 6 && std::strcmp(argv[2], "--backend") == 0 &&
        std::strcmp(argv[4], "--ranks") == 0) {
      std::string backend = argv[3];
      int ranks = std::atoi(argv[5]);
      if ((backend == "inprocess" || backend == "mpi") && ranks >= 2 &&
          ranks <= 64)
        return probeComm(backend, ranks, &argc, &argv);
    }
    std::cerr << "usage: machine_probe compute | machine_probe comm "
                 "--backend inprocess|mpi --ranks N (2-64)"
              << std::endl;
    return 2;
  } catch (const std::exception &error) {
    std::cerr << "machine_probe: " << error.what() << std::endl;
    return 1;
  }
}
