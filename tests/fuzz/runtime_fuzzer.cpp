//===- runtime_fuzzer.cpp - fuzzes the runtime's file readers -------------===//
//
// The first byte picks the reader and the rest is its input:
//
//   first byte % 4 == 0 (0)    plan reader (parsePlan), checksum skipped
//   first byte % 4 == 2 ('2')  plan reader, checksum verified
//   first byte % 4 == 1        .npy parser (parseNpy)
//   first byte % 8 == 3 ('3')  safetensors header parser: 8 bytes of data
//                              section size (little-endian, top bit
//                              cleared), then the header's JSON text
//   first byte % 8 == 7 ('7')  checkpoint manifest parser (parseManifest)
//   first byte % 8 == 5 ('5')  zero-sim's --topology text (first line) and
//                              device file (the rest)
//
// A plan that reads is also simulated (zero-sim) on one node of its ranks:
// the simulator may refuse it with a RuntimeError but must not crash.
// (Seeds that begin with 0 or '2' are plans, with 1 .npy files. A mutated
// plan rarely keeps its checksum, so plans that begin with 0 skip it to
// reach the checks behind it.) Each reader may reject its input with a
// RuntimeError; any other exception, a crash, a sanitizer report or a broken
// invariant of what it accepted (abort) is a bug. An accepted manifest must
// also survive its own printer: printed, re-parsed and printed again, it
// gives the same text.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Manifest.h"
#include "runtime/core/Error.h"
#include "runtime/core/Limits.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/Plan.h"
#include "runtime/sim/DeviceModel.h"
#include "runtime/sim/Simulator.h"
#include "runtime/sim/Topology.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace zerosbp::runtime;

namespace {

void check(bool condition, const char *what) {
  if (!condition) {
    std::fprintf(stderr, "runtime_fuzzer: %s\n", what);
    std::abort();
  }
}

// zero-sim on an accepted plan: one node of the plan's ranks, an H100.
void simulatePlan(const sim::Topology &topology, const Plan &plan) {
  sim::Simulation result =
      sim::simulate(plan, topology, sim::presetDevice("h100"));
  check(result.stepSeconds >= 0 && result.commExposedSeconds >= 0,
        "simulated a negative time");
}

void fuzzPlan(const std::string &text, bool verifyChecksum) {
  PlanReadOptions options;
  options.verifyChecksum = verifyChecksum;
  Plan plan = parsePlan(text, "fuzz.zplan", options);
  // A plan that reads must be safe to walk: every id is in range.
  for (const Instruction &instruction : plan.instructions)
    for (int id : instruction.operands)
      check(id >= 0 && id < static_cast<int>(plan.values.size()),
            "plan operand out of range");
  // Every buffer lies inside its own arena.
  const std::vector<PlanBuffer> &buffers = plan.buffers;
  for (const PlanBuffer &buffer : buffers)
    check(buffer.arena >= 0 &&
              buffer.arena < static_cast<int>(plan.arenas.size()) &&
              buffer.offset + buffer.bytes <= plan.arenas[buffer.arena].bytes,
          "plan buffer outside its arena");
  // The reader's sweep against brute force: buffers that share bytes of one
  // arena are never live together, unless they belong to different pipeline
  // stages, whose ranks never hold both.
  for (size_t a = 0; a < buffers.size() && buffers.size() <= 1000; ++a)
    for (size_t b = a + 1; b < buffers.size(); ++b)
      check(buffers[a].arena != buffers[b].arena || buffers[a].bytes == 0 ||
                (buffers[a].stage >= 0 && buffers[b].stage >= 0 &&
                 buffers[a].stage != buffers[b].stage) ||
                buffers[b].bytes == 0 ||
                buffers[a].offset + buffers[a].bytes <= buffers[b].offset ||
                buffers[b].offset + buffers[b].bytes <= buffers[a].offset ||
                buffers[a].liveLast < buffers[b].liveFirst ||
                buffers[b].liveLast < buffers[a].liveFirst,
            "plan buffers share bytes while both are live");
  sim::Topology topology;
  topology.ranksPerNode = plan.world;
  topology.intraBandwidth = 1e9;
  topology.intraLatency = 1e-6;
  try {
    simulatePlan(topology, plan);
  } catch (const RuntimeError &) {
  }
}

void fuzzSimulator(const std::string &text) {
  size_t newline = text.find('\n');
  sim::Topology topology = sim::parseTopology(text.substr(0, newline));
  check(topology.ranks() >= 1 && topology.ranks() <= kMaxRanks,
        "topology rank count out of range");
  if (newline != std::string::npos) {
    sim::DeviceModel device =
        sim::parseDeviceModel(text.substr(newline + 1), "fuzz.json");
    check(device.matmulRate(DType::F32, 100, 1) > 0 &&
              device.memoryRate(100) > 0,
          "device rate not positive");
  }
}

void fuzzNpy(const std::string &text) {
  NpyArray array = parseNpy(text, "fuzz.npy");
  check(array.data.size() ==
            static_cast<size_t>(array.numel()) * dtypeBytes(array.dtype),
        "npy data size differs from its shape");
}

void fuzzSafetensors(const std::string &input) {
  if (input.size() < 8)
    return;
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i)
    size = size << 8 | static_cast<unsigned char>(input[i]);
  int64_t dataBytes = static_cast<int64_t>(size & ~(uint64_t(1) << 63));
  SafetensorsHeader header =
      parseSafetensorsHeader(input.substr(8), dataBytes, "fuzz.safetensors");
  // What it accepts: every tensor inside the data, sized by its shape, and
  // no two sharing a byte.
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const SafetensorsEntry &entry : header.tensors) {
    check(0 <= entry.begin && entry.begin <= entry.end &&
              entry.end <= dataBytes,
          "safetensors tensor outside the data");
    int64_t bytes = static_cast<int64_t>(dtypeBytes(entry.dtype));
    for (int64_t dim : entry.shape) {
      check(dim >= 0, "safetensors negative dimension");
      bytes *= dim;
    }
    check(bytes == entry.bytes(), "safetensors size differs from its shape");
    check(header.find(entry.name) == &entry, "safetensors find");
    if (entry.bytes() > 0)
      spans.emplace_back(entry.begin, entry.end);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    check(spans[i].first >= spans[i - 1].second, "safetensors overlap");
}

void fuzzManifest(const std::string &text) {
  CheckpointManifest manifest = parseManifest(text, "fuzz.json");
  check(static_cast<int>(manifest.files.size()) == manifest.world,
        "manifest files differ from world");
  for (size_t rank = 0; rank < manifest.files.size(); ++rank)
    check(manifest.files[rank].rank == static_cast<int>(rank),
          "manifest files not one per rank in order");
  for (const CheckpointTensor &tensor : manifest.tensors)
    for (const CheckpointPiece &piece : tensor.pieces) {
      check(piece.rank >= 0 && piece.rank < manifest.world,
            "manifest piece rank out of range");
      check(piece.ranges.size() == tensor.layout.globalShape.size(),
            "manifest piece ranges differ from its dims");
      for (size_t d = 0; d < piece.ranges.size(); ++d)
        check(0 <= piece.ranges[d].first &&
                  piece.ranges[d].first <= piece.ranges[d].second &&
                  piece.ranges[d].second <= tensor.layout.globalShape[d],
              "manifest piece outside the global shape");
    }
  std::string printed = manifestJson(manifest);
  CheckpointManifest again;
  try {
    again = parseManifest(printed, "printed.json");
  } catch (const RuntimeError &error) {
    std::fprintf(stderr,
                 "runtime_fuzzer: printed manifest does not parse: %s\n",
                 error.what());
    std::abort();
  }
  check(manifestJson(again) == printed, "manifest print is not stable");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0)
      fuzzPlan(text, /*verifyChecksum=*/data[0] % 4 == 2);
    else if (data[0] % 4 == 1)
      fuzzNpy(text);
    else if (data[0] % 8 == 3)
      fuzzSafetensors(text);
    else if (data[0] % 8 == 5)
      fuzzSimulator(text);
    else
      fuzzManifest(text);
  } catch (const RuntimeError &) {
  }
  return 0;
}
