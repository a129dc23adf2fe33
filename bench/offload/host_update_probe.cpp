//===- host_update_probe.cpp - host optimizer updates against bandwidth ---===//
//
// Measures what an offloaded update runs: the CPU runtime's nn.adam kernel,
// in place on fp32 states as the offload plans update them, against
// STREAM-like probes of this machine's memory bandwidth (copy, triad, and an
// in-place update that, like Adam, writes the lines it reads), each on one
// thread and on the kernels' host threads (runtime/kernels/cpu/HostThreads.h).
// Also ZeRO++'s block quantization (nn.quantize and nn.dequantize, 8 and 4
// bits, blocks of 2048), which a quantized gradient's reduction runs on the
// host. Prints one JSON object per line; bench/offload/host_update_bench.py
// makes the tables.
//
// host_update_probe [--elements N] [--repeats R] [--threads T]
//
//===----------------------------------------------------------------------===//

#include "runtime/core/AttrMap.h"
#include "runtime/core/Tensor.h"
#include "runtime/kernels/Kernel.h"
#include "runtime/kernels/cpu/HostThreads.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace zerosbp::runtime;

namespace {

// Elements per range handed to a thread, as the parallel kernels use.
constexpr int64_t kGrain = 16 * 1024;

struct Options {
  int64_t elements = int64_t(1) << 25;
  int repeats = 10;
  int threads = 0; // 0: every core.
};

[[noreturn]] void usage(const std::string &message) {
  std::fprintf(stderr,
               "host_update_probe: %s\nusage: host_update_probe "
               "[--elements N] [--repeats R] [--threads T]\n",
               message.c_str());
  std::exit(2);
}

int64_t parsePositive(const char *flag, const char *text, int64_t most) {
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (!*text || *end || value < 1 || value > most)
    usage(std::string(flag) + " takes an integer in [1, " +
          std::to_string(most) + "], not '" + text + "'");
  return value;
}

Options parse(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      usage(flag == "--elements" || flag == "--repeats" || flag == "--threads"
                ? flag + " needs a value"
                : "unknown argument '" + flag + "'");
    const char *value = argv[++i];
    if (flag == "--elements")
      options.elements = parsePositive("--elements", value, int64_t(1) << 31);
    else if (flag == "--repeats")
      options.repeats =
          static_cast<int>(parsePositive("--repeats", value, 1000));
    else if (flag == "--threads")
      options.threads =
          static_cast<int>(parsePositive("--threads", value, 1024));
    else
      usage("unknown argument '" + flag + "'");
  }
  return options;
}

/// The fastest of `repeats` calls of `work`, in seconds.
template <typename Work> double fastest(int repeats, Work &&work) {
  work(); // Warm up: faults the pages in, starts the pool.
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto begin = std::chrono::steady_clock::now();
    work();
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - begin;
    best = std::min(best, took.count());
  }
  return best;
}

void report(const char *kernel, int threads, int64_t elements,
            int bytesPerElement, double seconds) {
  double bytes = static_cast<double>(bytesPerElement) * elements;
  std::printf("{\"kernel\": \"%s\", \"threads\": %d, \"elements\": %lld, "
              "\"bytes_per_element\": %d, \"seconds\": %.9g, \"gb_s\": %.6g, "
              "\"elements_per_s\": %.6g}\n",
              kernel, threads, static_cast<long long>(elements),
              bytesPerElement, seconds, bytes / seconds / 1e9,
              elements / seconds);
  std::fflush(stdout);
}

/// As report, for a fractional byte count per element.
void reportBytes(const char *kernel, int threads, int64_t elements,
                 double bytesPerElement, double seconds) {
  std::printf("{\"kernel\": \"%s\", \"threads\": %d, \"elements\": %lld, "
              "\"bytes_per_element\": %.6g, \"seconds\": %.9g, "
              "\"gb_s\": %.6g, \"elements_per_s\": %.6g}\n",
              kernel, threads, static_cast<long long>(elements),
              bytesPerElement, seconds,
              bytesPerElement * elements / seconds / 1e9, elements / seconds);
  std::fflush(stdout);
}

TensorRef vector(float *data, int64_t elements) {
  TensorRef ref;
  ref.data = data;
  ref.dtype = DType::F32;
  ref.shape = {elements};
  return ref;
}

/// nn.quantize of `n` f32 values at `values` into codes and scales, and
/// nn.dequantize back into `out`, at 8 and 4 bits: bytes as STREAM counts
/// them (the f32 elements, the codes and the scales, once each).
void quantization(const Options &options, int threads, float *values,
                  float *out) {
  constexpr int64_t kBlock = 2048;
  int64_t n = options.elements;
  KernelFn quantize = findCpuKernel("nn.quantize");
  KernelFn dequantize = findCpuKernel("nn.dequantize");
  if (!quantize || !dequantize) {
    std::fprintf(stderr, "host_update_probe: no CPU kernel nn.quantize\n");
    std::exit(1);
  }
  int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<int8_t> codes(static_cast<size_t>(n));
  std::vector<float> scales(static_cast<size_t>(blocks));
  for (int bits : {8, 4}) {
    AttrMap attrs;
    attrs.set("block_size", kBlock);
    attrs.set("bits", int64_t{bits});
    TensorRef codeRef;
    codeRef.data = codes.data();
    codeRef.dtype = DType::I8;
    codeRef.shape = {(n * bits + 7) / 8};
    TensorRef scaleRef = vector(scales.data(), blocks);
    std::vector<TensorRef> floats = {vector(values, n)};
    std::vector<TensorRef> quantized = {codeRef, scaleRef};
    std::vector<TensorRef> back = {vector(out, n)};
    double seconds =
        fastest(options.repeats, [&] { quantize(attrs, floats, quantized); });
    // Per element: 4 bytes in, bits / 8 out, and a block's scale.
    double bytes = 4.0 + bits / 8.0 + 4.0 / kBlock;
    std::string name = "quantize_" + std::to_string(bits);
    reportBytes(name.c_str(), threads, n, bytes, seconds);
    seconds =
        fastest(options.repeats, [&] { dequantize(attrs, quantized, back); });
    name = "dequantize_" + std::to_string(bits);
    reportBytes(name.c_str(), threads, n, bytes, seconds);
  }
}

} // namespace

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  int cores = std::max(1u, std::thread::hardware_concurrency());
  int most = options.threads ? options.threads : cores;
  int64_t n = options.elements;
  // Four arrays: Adam's parameter, gradient and two moments; the probes
  // use the first three.
  std::vector<std::unique_ptr<float[]>> arrays;
  for (int k = 0; k < 4; ++k)
    arrays.emplace_back(new float[n]);
  float *a = arrays[0].get(), *b = arrays[1].get(), *c = arrays[2].get(),
        *d = arrays[3].get();

  KernelFn adam = findCpuKernel("nn.adam");
  if (!adam) {
    std::fprintf(stderr, "host_update_probe: no CPU kernel nn.adam\n");
    return 1;
  }
  AttrMap attrs;
  attrs.set("lr", 1e-3);
  int64_t step = 1;
  TensorRef stepRef;
  stepRef.data = &step;
  stepRef.dtype = DType::I64;
  std::vector<TensorRef> operands = {vector(a, n), vector(b, n), vector(c, n),
                                     vector(d, n), stepRef};
  std::vector<TensorRef> results = {vector(a, n), vector(c, n), vector(d, n)};

  std::vector<int> threadCounts = {1};
  if (most > 1)
    threadCounts.push_back(most);
  for (int threads : threadCounts) {
    setCpuKernelThreads(threads);
    // Every page is first touched by the threads that stream it.
    cpu::parallelRanges(n, kGrain, [&](int64_t begin, int64_t end) {
      std::fill(a + begin, a + end, 0.5f);
      std::fill(b + begin, b + end, 0.01f);
      std::fill(c + begin, c + end, 0.0f);
      std::fill(d + begin, d + end, 0.0f);
    });
    double copy = fastest(options.repeats, [&] {
      cpu::parallelRanges(n, kGrain, [&](int64_t begin, int64_t end) {
        std::memcpy(c + begin, a + begin,
                    static_cast<size_t>(end - begin) * sizeof(float));
      });
    });
    report("copy", threads, n, 8, copy);
    double triad = fastest(options.repeats, [&] {
      cpu::parallelRanges(n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          c[i] = a[i] + 3.0f * b[i];
      });
    });
    report("triad", threads, n, 12, triad);
    double update = fastest(options.repeats, [&] {
      cpu::parallelRanges(n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          a[i] = a[i] + 1e-3f * b[i];
      });
    });
    report("in_place_update", threads, n, 12, update);
    std::fill(c, c + n, 0.0f);
    double adamSeconds =
        fastest(options.repeats, [&] { adam(attrs, operands, results); });
    // Reads parameter, gradient and both moments; writes the parameter and
    // both moments in place.
    report("adam", threads, n, 28, adamSeconds);
    quantization(options, threads, a, b);
  }
  return 0;
}
