//===- plan_reader_test.cc - the runtime's plan reader --------------------===//
//
// A minimal hand-written plan (one all-reduce over two ranks) and one that
// offloads (transfers between device, host and NVMe arenas) that read, and
// one mutation per check the reader makes, each against its message; each is
// sealed with its checksum first, so that the check behind it is reached. A
// plan zero-compile wrote for GPT-2 tiny must read as well.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"
#include "tests/unit/runtime/plan/plan_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

using namespace zerosbp::runtime;
using ::testing::HasSubstr;
using zerosbp::testing::errorOf;
using zerosbp::testing::replacedIn;
using zerosbp::testing::sealed;

namespace {

const char *const kValidPlan = R"({
  "format": "zerosbp-plan", "version": 2, "function": "f", "stage": 0,
  "world": 2,
  "placement": {"device": "cpu", "ranks": [0, 1], "hierarchy": [2]},
  "memory": {"arena": 128, "lower_bound": 128, "model_states": 64,
             "peak": {"param": 64, "activation": 64}},
  "arena_bytes": 128,
  "arenas": [{"memory": "device", "bytes": 128}],
  "buffers": [{"offset": 0, "bytes": 64, "live": [0, 3], "role": "param",
               "arena": 0},
              {"offset": 64, "bytes": 64, "live": [1, 3], "role": "activation",
               "arena": 0}],
  "values": [{"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]}],
  "variables": [{"name": "w", "value": 0, "dtype": "f32", "local_shape": [4],
                 "global_shape": [4], "sbp": ["B"],
                 "shards": [[[0, 4]], [[0, 4]]], "role": "param",
                 "init": "ones", "init_scale": 0, "frozen": false}],
  "inputs": [], "steps": [], "outputs": [2],
  "instructions": [
    {"op": "nn.scale", "results": [1], "attrs": {"factor": 2.0},
     "operands": [0]},
    {"op": "collective_start", "kind": "all_reduce", "stream": "comm",
     "bucket": 0, "group_axis": 0, "group_size": 2, "reduce": "sum",
     "results": [2], "segments": [{"offset": 0, "numel": 4}],
     "operands": [1]},
    {"op": "collective_wait", "bucket": 0}],
  "checksum": "00000000"
})";

// One rank, ZeRO-Offload: the gradient goes to host memory, the optimizer
// state comes from NVMe, the host updates the fp32 master, the state goes
// back to NVMe and the new parameter to the device. Buffers 0 (device),
// 2 (host) and 4 (NVMe) all sit at offset 0 of their arenas, live at once.
const char *const kOffloadPlan = R"({
  "format": "zerosbp-plan", "version": 2, "function": "f", "stage": 2,
  "world": 1,
  "placement": {"device": "cpu", "ranks": [0], "hierarchy": [1]},
  "memory": {"arena": 32, "lower_bound": 32, "model_states": 32,
             "peak": {"param": 16, "grad": 16},
             "host": {"arena": 48, "lower_bound": 48,
                      "peak": {"grad": 16, "master": 16, "opt_state": 16}},
             "nvme": {"arena": 16, "lower_bound": 16,
                      "peak": {"opt_state": 16}}},
  "arena_bytes": 32,
  "arenas": [{"memory": "device", "bytes": 32},
             {"memory": "host", "bytes": 48, "pinned": true},
             {"memory": "nvme", "bytes": 16, "path": "/tmp/zero"}],
  "buffers": [
    {"offset": 0, "bytes": 16, "live": [0, 10], "role": "param", "arena": 0},
    {"offset": 16, "bytes": 16, "live": [1, 3], "role": "grad", "arena": 0},
    {"offset": 0, "bytes": 16, "live": [2, 6], "role": "grad", "arena": 1},
    {"offset": 16, "bytes": 16, "live": [0, 10], "role": "master", "arena": 1},
    {"offset": 0, "bytes": 16, "live": [0, 10], "role": "opt_state", "arena": 2},
    {"offset": 32, "bytes": 16, "live": [4, 8], "role": "opt_state", "arena": 1}],
  "values": [{"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 2, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 3, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 4, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 5, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 3, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 5, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 4, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
             {"buffer": 2, "offset": 0, "dtype": "f32", "shape": [2]}],
  "variables": [
    {"name": "w", "value": 0, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "shards": [[[0, 4]]], "role": "param",
     "init": "ones", "init_scale": 0, "frozen": false},
    {"name": "w.master", "value": 3, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "shards": [[[0, 4]]], "role": "master",
     "init": "ones", "init_scale": 0, "frozen": false, "copy_of": "w"},
    {"name": "w.state", "value": 4, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "shards": [[[0, 4]]], "role": "opt_state",
     "init": "zeros", "init_scale": 0, "frozen": false}],
  "inputs": [], "steps": [], "outputs": [],
  "instructions": [
    {"op": "nn.scale", "results": [1], "attrs": {"factor": 2.0},
     "operands": [0]},
    {"op": "transfer_start", "transfer": 0, "from": "device", "to": "host",
     "stream": "copy", "results": [2], "operands": [1]},
    {"op": "transfer_wait", "transfer": 0, "free": [1]},
    {"op": "transfer_start", "transfer": 1, "from": "nvme", "to": "host",
     "stream": "copy", "results": [5], "operands": [4]},
    {"op": "transfer_wait", "transfer": 1},
    {"op": "nn.add", "results": [6], "operands": [3, 2], "memory": "host",
     "free": [2]},
    {"op": "nn.scale", "results": [7], "attrs": {"factor": 0.5},
     "operands": [5], "memory": "host"},
    {"op": "transfer_start", "transfer": 2, "from": "host", "to": "nvme",
     "stream": "copy", "results": [8], "operands": [7]},
    {"op": "transfer_wait", "transfer": 2, "free": [5]},
    {"op": "transfer_start", "transfer": 3, "from": "host", "to": "device",
     "stream": "copy", "results": [9], "operands": [6]},
    {"op": "transfer_wait", "transfer": 3}],
  "checksum": "00000000"
})";

std::string replaced(const std::string &from, const std::string &to) {
  return replacedIn(kValidPlan, from, to);
}

std::string offloadReplaced(const std::string &from, const std::string &to) {
  return replacedIn(kOffloadPlan, from, to);
}

TEST(PlanReader, ReadsAValidPlan) {
  Plan plan = parsePlan(sealed(kValidPlan), "model.zplan");
  EXPECT_EQ(plan.world, 2);
  EXPECT_EQ(plan.arenaBytes, 128);
  ASSERT_EQ(plan.arenas.size(), 1u);
  EXPECT_EQ(plan.arenas[0].memory, MemoryKind::Device);
  EXPECT_EQ(plan.arenas[0].bytes, 128);
  EXPECT_EQ(plan.buffers[1].arena, 0);
  EXPECT_EQ(plan.numTransfers, 0);
  ASSERT_EQ(plan.instructions.size(), 3u);
  EXPECT_EQ(plan.instructions[0].kind, InstructionKind::Kernel);
  EXPECT_DOUBLE_EQ(plan.instructions[0].attrs.getFloat("factor"), 2.0);
  EXPECT_EQ(plan.instructions[1].kind, InstructionKind::CollectiveStart);
  EXPECT_EQ(plan.instructions[1].collective, CollectiveKind::AllReduce);
  EXPECT_EQ(plan.numBuckets, 1);
  EXPECT_EQ(plan.variables[0].init, "ones");
  EXPECT_EQ(plan.memory.peak[static_cast<int>(Role::Param)], 64);
  EXPECT_EQ(plan.groupOf(1, 0), (std::vector<int>{0, 1}));
}

TEST(PlanReader, ReadsTheMode) {
  EXPECT_FALSE(parsePlan(sealed(kValidPlan), "model.zplan").inference);
  auto withMode = [](const std::string &mode) {
    return replaced("\"function\": \"f\",",
                    "\"function\": \"f\", \"mode\": " + mode + ",");
  };
  EXPECT_TRUE(parsePlan(sealed(withMode("\"eval\"")), "model.zplan").inference);
  EXPECT_FALSE(
      parsePlan(sealed(withMode("\"train\"")), "model.zplan").inference);
  EXPECT_THAT(errorOf(withMode("\"predict\"")),
              HasSubstr("model.zplan: mode: unknown mode 'predict' (expected "
                        "train or eval)"));
  EXPECT_THAT(errorOf(withMode("1")), HasSubstr("model.zplan: mode: "));
}

TEST(PlanReader, RejectsForeignAndBrokenFiles) {
  EXPECT_THAT(errorOf("{\"format\": \"onnx\", \"version\": 1}"),
              HasSubstr("model.zplan: not a ZeroSBP plan (format 'onnx'"));
  EXPECT_THAT(errorOf("[1, 2]"), HasSubstr("not a ZeroSBP plan"));
  EXPECT_EQ(errorOf(replaced("\"version\": 2", "\"version\": 3")),
            "model.zplan: plan version 3 is not supported; this runtime reads "
            "version 2");
  std::string truncated = kValidPlan;
  truncated.resize(truncated.size() / 2);
  EXPECT_THAT(errorOf(truncated), HasSubstr("model.zplan: not valid JSON"));
  EXPECT_THAT(errorOf(""), HasSubstr("not valid JSON"));
  // A number beyond double's range is nlohmann's out_of_range, not a
  // parse_error; found by the fuzzer.
  EXPECT_THAT(errorOf("22e2222222222222222222"),
              HasSubstr("not valid JSON (number overflow"));
}

TEST(PlanReader, NamesTheBadField) {
  EXPECT_THAT(errorOf(replaced("\"operands\": [0]", "\"operands\": [7]")),
              HasSubstr("instructions[0].operands[0]: value 7 out of range "
                        "[0, 2]"));
  EXPECT_THAT(errorOf(replaced("\"dtype\": \"f32\", \"shape\": [4]},\n"
                               "             {\"buffer\": 1",
                               "\"dtype\": \"q8\", \"shape\": [4]},\n"
                               "             {\"buffer\": 1")),
              HasSubstr("values[0].dtype: unknown dtype 'q8'"));
  EXPECT_THAT(
      errorOf(replaced("\"shape\": [4]},\n             {\"buffer\": 1, "
                       "\"offset\": 0, \"dtype\": \"f32\", \"shape\": "
                       "[4]},\n             {\"buffer\": 1",
                       "\"shape\": [40]},\n             {\"buffer\": 1, "
                       "\"offset\": 0, \"dtype\": \"f32\", \"shape\": "
                       "[4]},\n             {\"buffer\": 1")),
      HasSubstr("values[0]: value of 160 bytes at offset 0 does not "
                "fit its buffer of 64 bytes"));
  EXPECT_THAT(errorOf(replaced("\"bytes\": 64, \"live\": [1, 3]",
                               "\"bytes\": 640, \"live\": [1, 3]")),
              HasSubstr("buffers[1]: buffer ends at byte 704, past the device "
                        "arena (128 bytes)"));
  EXPECT_THAT(errorOf(replaced("\"op\": \"nn.scale\"", "\"op\": \"xla.dot\"")),
              HasSubstr("instructions[0].op: unknown instruction 'xla.dot'"));
  EXPECT_THAT(errorOf(replaced("{\"op\": \"collective_wait\", \"bucket\": 0}",
                               "{\"op\": \"collective_wait\", \"bucket\": 3}")),
              HasSubstr("waits for bucket 3 before it starts"));
  EXPECT_THAT(errorOf(replaced(",\n    {\"op\": \"collective_wait\", "
                               "\"bucket\": 0}",
                               "")),
              HasSubstr("bucket 0 is started but never waited for"));
  EXPECT_THAT(
      errorOf(
          replaced("\"kind\": \"all_reduce\"", "\"kind\": \"reduce_scatter\"")),
      HasSubstr("segment 0 does not fit a reduce_scatter over 2 ranks"));
  EXPECT_THAT(errorOf(replaced("\"init\": \"ones\"", "\"init\": \"xavier\"")),
              HasSubstr("variables[0].init: unknown init 'xavier'"));
  EXPECT_THAT(
      errorOf(replaced("\"shards\": [[[0, 4]], [[0, 4]]]",
                       "\"shards\": [[[0, 4]]]")),
      HasSubstr("variables[0].shards: expected one entry per rank (2)"));
  EXPECT_THAT(errorOf(replaced("\"world\": 2", "\"world\": 3")),
              HasSubstr("placement: hierarchy and ranks do not match world 3"));
  EXPECT_THAT(errorOf(replaced("\"function\": \"f\", ", "")),
              HasSubstr("missing key 'function'"));
}

TEST(PlanReader, RejectsAnotherRankCount) {
  Plan plan = parsePlan(sealed(kValidPlan), "model.zplan");
  EXPECT_NO_THROW(checkRankCount(plan, 2));
  try {
    checkRankCount(plan, 4);
    FAIL() << "a run on 4 ranks of a 2-rank plan must fail";
  } catch (const RuntimeError &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("model.zplan: the plan was compiled for 2 ranks, "
                          "not 4 (recompile with --world=4)"));
  }
}

// zlib's CRC-32 of the text with the digits as 00000000: Python's
// zlib.crc32(b'{"checksum": "00000000"}') is 0xe2474a7c.
TEST(PlanReader, ChecksumIsTheCrcOfTheTextWithZeroDigits) {
  std::string text = R"({"checksum": "12345678"})";
  EXPECT_EQ(planChecksum(text, text.find("12345678")), 0xe2474a7cu);
  EXPECT_EQ(planChecksum(R"({"checksum": "00000000"})", 14), 0xe2474a7cu);
}

TEST(PlanReader, RefusesAnEditedPlan) {
  std::string plan = sealed(kValidPlan);
  size_t digits = plan.rfind("\"checksum\": \"") + 13;
  // One digit changed, the checksum not.
  std::string edited = plan;
  edited.replace(edited.find("\"factor\": 2.0"), 13, "\"factor\": 3.0");
  char actual[9];
  std::snprintf(actual, sizeof(actual), "%08x", planChecksum(edited, digits));
  EXPECT_EQ(errorOf(edited), "model.zplan: checksum: the content gives " +
                                 std::string(actual) + ", not " +
                                 plan.substr(digits, 8) +
                                 "; the plan was edited or corrupted "
                                 "(recompile it)");
  std::string unsealed = kValidPlan;
  unsealed.replace(unsealed.find(",\n  \"checksum\""),
                   std::string(",\n  \"checksum\": \"00000000\"").size(), "");
  EXPECT_EQ(errorOf(unsealed),
            "model.zplan: checksum: missing; the plan was edited or "
            "corrupted, or written by an older zero-compile (recompile it)");
  EXPECT_EQ(errorOf(replaced("\"checksum\": \"00000000\"",
                             "\"checksum\": \"0000000G\"")),
            "model.zplan: checksum: expected 8 lowercase hex digits; the "
            "plan was edited or corrupted (recompile it)");
  // Hand-written plans may skip it.
  PlanReadOptions unchecked;
  unchecked.verifyChecksum = false;
  EXPECT_NO_THROW(parsePlan(unsealed, "model.zplan", unchecked));
  EXPECT_NO_THROW(parsePlan(edited, "model.zplan", unchecked));
}

TEST(PlanReader, RefusesBuffersThatShareBytesWhileLive) {
  // Buffer 1 moved into the second half of buffer 0; both live in [1, 3].
  EXPECT_EQ(
      errorOf(replaced("{\"offset\": 64, \"bytes\": 64, \"live\": [1, 3]",
                       "{\"offset\": 32, \"bytes\": 64, \"live\": [1, 3]")),
      "model.zplan: buffers[1]: shares arena bytes [32, 64) with buffer "
      "0 while both are live (positions 1 to 3)");
  // The same bytes at other times are fine.
  std::string reused =
      replaced("\"live\": [0, 3], \"role\": \"param\",\n               "
               "\"arena\": 0},\n              {\"offset\": 64",
               "\"live\": [0, 0], \"role\": \"param\",\n               "
               "\"arena\": 0},\n              {\"offset\": 0");
  EXPECT_EQ(errorOf(reused), "(no error)");
  EXPECT_EQ(
      errorOf(replaced("\"live\": [0, 3], \"role\": \"param\",\n               "
                       "\"arena\": 0},\n              {\"offset\": 64",
                       "\"live\": [0, 1], \"role\": \"param\",\n               "
                       "\"arena\": 0},\n              {\"offset\": 0")),
      "model.zplan: buffers[1]: shares arena bytes [0, 64) with buffer 0 "
      "while both are live (positions 1 to 1)");
}

/// kValidPlan with `extra` buffers after its two, each {offset, bytes,
/// first, last, arena}, in a device and a host arena of `arena` bytes each.
std::string planWithBuffers(const std::vector<std::array<int64_t, 5>> &extra,
                            int64_t arena) {
  std::string buffers;
  for (const auto &[offset, bytes, first, last, index] : extra)
    buffers +=
        ",\n {\"offset\": " + std::to_string(offset) +
        ", \"bytes\": " + std::to_string(bytes) + ", \"live\": [" +
        std::to_string(first) + ", " + std::to_string(last) +
        "], \"role\": \"activation\", \"arena\": " + std::to_string(index) +
        "}";
  std::string text =
      replaced("\"role\": \"activation\",\n               \"arena\": 0}],",
               "\"role\": \"activation\", \"arena\": 0}" + buffers + "],");
  std::string bytes = std::to_string(arena);
  text = replacedIn(text, "\"arena_bytes\": 128", "\"arena_bytes\": " + bytes);
  return replacedIn(
      text, "\"arenas\": [{\"memory\": \"device\", \"bytes\": 128}]",
      "\"arenas\": [{\"memory\": \"device\", \"bytes\": " + bytes +
          "}, {\"memory\": \"host\", \"bytes\": " + bytes + "}]");
}

// The sweep against brute force, on random small layouts in two arenas.
TEST(PlanReader, OverlapCheckAgreesWithBruteForce) {
  std::mt19937 random(17);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::array<int64_t, 5>> extra;
    int count = 1 + static_cast<int>(random() % 12);
    for (int i = 0; i < count; ++i) {
      int64_t first = random() % 8;
      extra.push_back({128 + static_cast<int64_t>(random() % 8) * 16,
                       static_cast<int64_t>(random() % 4) * 16, first,
                       first + static_cast<int64_t>(random() % 4),
                       static_cast<int64_t>(random() % 2)});
    }
    bool conflict = false;
    for (size_t a = 0; a < extra.size(); ++a)
      for (size_t b = a + 1; b < extra.size(); ++b) {
        const auto &x = extra[a], &y = extra[b];
        conflict |= x[4] == y[4] && x[1] > 0 && y[1] > 0 &&
                    x[0] < y[0] + y[1] && y[0] < x[0] + x[1] && x[2] <= y[3] &&
                    y[2] <= x[3];
      }
    std::string error = errorOf(planWithBuffers(extra, 128 + 8 * 16 + 48));
    EXPECT_EQ(error != "(no error)", conflict)
        << "trial " << trial << ": " << error;
    if (conflict)
      EXPECT_THAT(error, HasSubstr("while both are live"));
  }
}

// 10^5 buffers, 1000 at a time reusing the same bytes: a quadratic check
// would compare 5 * 10^9 pairs.
TEST(PlanReader, ChecksManyBuffersQuickly) {
  std::vector<std::array<int64_t, 5>> extra;
  for (int64_t i = 0; i < 100000; ++i)
    extra.push_back(
        {128 + (i % 1000) * 64, 64, (i / 1000) * 2, (i / 1000) * 2 + 1, 0});
  int64_t arena = 128 + 1000 * 64;
  EXPECT_EQ(errorOf(planWithBuffers(extra, arena)), "(no error)");
  // One more, live across two windows, on the bytes of buffer 2 + 999.
  extra.push_back({128 + 999 * 64 + 32, 64, 1, 2, 0});
  EXPECT_EQ(errorOf(planWithBuffers(extra, arena + 64)),
            "model.zplan: buffers[100002]: shares arena bytes [64096, 64128) "
            "with buffer 1001 while both are live (positions 1 to 1)");
}

TEST(PlanReader, RefusesAVersion1Plan) {
  EXPECT_EQ(errorOf(replaced("\"version\": 2", "\"version\": 1")),
            "model.zplan: plan version 1 is not supported; this runtime reads "
            "version 2 (compile the model again)");
}

// Each rank's block follows from the SBP, so a plan need not list it and
// its size does not grow with the ranks.
TEST(PlanReader, ComputesShardsFromTheSbp) {
  // w split on 2 ranks: [0, 2) and [2, 4), from the SBP alone.
  std::string split =
      replacedIn(replaced("\"global_shape\": [4], \"sbp\": [\"B\"],\n"
                          "                 \"shards\": [[[0, 4]], [[0, 4]]], ",
                          "\"global_shape\": [8], \"sbp\": [\"S(0)\"], "),
                 "\"local_shape\": [4]", "\"local_shape\": [4]");
  Plan plan = parsePlan(sealed(split), "model.zplan");
  const PlanVariable &w = plan.variables[0];
  EXPECT_TRUE(w.shards.empty());
  EXPECT_EQ(w.shard(0), (std::vector<DimRange>{{0, 4}}));
  EXPECT_EQ(w.shard(1), (std::vector<DimRange>{{4, 8}}));
  // Listed blocks must be those.
  EXPECT_THAT(errorOf(replaced("\"shards\": [[[0, 4]], [[0, 4]]]",
                               "\"shards\": [[[0, 4]], [[0, 3]]]")),
              HasSubstr("variables[0].shards[1][0]: bad shard range for 'w'"));
  // A local shape that the SBP does not give.
  EXPECT_THAT(errorOf(replacedIn(split, "\"global_shape\": [8]",
                                 "\"global_shape\": [6]")),
              HasSubstr("'w': rank 0 holds 3 of dim 0 by its SBP, not the "
                        "local shape's 4"));
  EXPECT_THAT(
      errorOf(replacedIn(split, "\"sbp\": [\"S(0)\"]", "\"sbp\": [\"S(1)\"]")),
      HasSubstr("expected B, S(d) with d a dim of the global shape, "
                "P(sum) or P(max), got 'S(1)'"));
}

/// kValidPlan with w a flat partition split along model dim 1: the 2x4
/// model's two 2x2 parts, one per row of [2, 4], a row per rank.
std::string splitReplaced(const std::string &from, const std::string &to) {
  std::string text = replaced(
      "\"local_shape\": [4],\n                 \"global_shape\": [4], \"sbp\": "
      "[\"B\"],\n                 \"shards\": [[[0, 4]], [[0, 4]]], ",
      "\"local_shape\": [1, 4], \"global_shape\": [2, 4], \"sbp\": "
      "[\"S(0)\"], \"logical_shape\": [2, 4], \"model_split\": {\"axis\": "
      "0, \"dim\": 1}, ");
  text = replacedIn(text, "\"shape\": [4]}", "\"shape\": [1, 4]}");
  return from.empty() ? text : replacedIn(text, from, to);
}

TEST(PlanReader, ReadsAModelSplit) {
  Plan plan = parsePlan(sealed(splitReplaced("", "")), "model.zplan");
  const PlanVariable &w = plan.variables[0];
  ASSERT_TRUE(w.modelSplit);
  EXPECT_EQ(w.modelSplit->axis, 0);
  EXPECT_EQ(w.modelSplit->dim, 1);
  EXPECT_EQ(w.modelShape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(w.shard(1), (std::vector<DimRange>{{1, 2}, {0, 4}}));
  EXPECT_FALSE(
      parsePlan(sealed(kValidPlan), "model.zplan").variables[0].modelSplit);
}

TEST(PlanReader, RefusesBadModelSplits) {
  const std::string at = "model.zplan: variables[0].model_split";
  EXPECT_EQ(errorOf(splitReplaced("\"logical_shape\": [2, 4], ", "")),
            at + ": needs logical_shape, the model shape it splits");
  EXPECT_EQ(errorOf(splitReplaced("\"axis\": 0", "\"axis\": 1")),
            at + ".axis: axis 1 is not an axis of the hierarchy [2]");
  EXPECT_EQ(errorOf(splitReplaced("\"dim\": 1", "\"dim\": 2")),
            at + ".dim: dim 2 is not a dim of logical_shape [2, 4]");
  EXPECT_EQ(errorOf(splitReplaced("\"dim\": 1", "\"dim\": -1")),
            at + ".dim: dim -1 is not a dim of logical_shape [2, 4]");
  EXPECT_EQ(errorOf(splitReplaced("{\"axis\": 0, \"dim\": 1}", "[0, 1]")),
            at + ": expected an object");
  // Not a row per part: a flat [8].
  std::string flat =
      replacedIn(replacedIn(splitReplaced("\"global_shape\": [2, 4]",
                                          "\"global_shape\": [8]"),
                            "\"local_shape\": [1, 4]", "\"local_shape\": [4]"),
                 "\"shape\": [1, 4]}", "\"shape\": [4]}");
  EXPECT_EQ(errorOf(flat),
            at + ": global_shape [8] is not [2, N], a row per part");
  EXPECT_EQ(
      errorOf(splitReplaced("\"logical_shape\": [2, 4]",
                            "\"logical_shape\": [2, 3]")),
      at + ": dim 1 of logical_shape [2, 3] does not split into 2 equal parts");
  // Rows too short for a part: more model than global elements.
  EXPECT_EQ(errorOf(splitReplaced("\"logical_shape\": [2, 4]",
                                  "\"logical_shape\": [4, 4]")),
            "model.zplan: variables[0].logical_shape: larger than the global "
            "shape");
  // Each rank's row must be its part: S(0) on the model axis.
  std::string replicated = replacedIn(
      replacedIn(splitReplaced("\"sbp\": [\"S(0)\"]", "\"sbp\": [\"B\"]"),
                 "\"local_shape\": [1, 4]", "\"local_shape\": [2, 4]"),
      "\"shape\": [1, 4]}", "\"shape\": [2, 4]}");
  EXPECT_EQ(errorOf(replicated),
            at + ": sbp on hierarchy axis 0 is B, not S(0)");
  EXPECT_EQ(errorOf(replacedIn(replicated, "\"sbp\": [\"B\"], ", "")),
            at + ": sbp on hierarchy axis 0 is absent, not S(0)");
}

TEST(PlanReader, ReadsTheArenas) {
  Plan plan = parsePlan(sealed(kOffloadPlan), "model.zplan");
  ASSERT_EQ(plan.arenas.size(), 3u);
  EXPECT_EQ(plan.arenaBytes, 32);
  EXPECT_EQ(plan.arenas[0].memory, MemoryKind::Device);
  EXPECT_EQ(plan.arenas[0].bytes, 32);
  EXPECT_FALSE(plan.arenas[0].pinned);
  EXPECT_EQ(plan.arenas[1].memory, MemoryKind::Host);
  EXPECT_EQ(plan.arenas[1].bytes, 48);
  EXPECT_TRUE(plan.arenas[1].pinned);
  EXPECT_EQ(plan.arenas[2].memory, MemoryKind::Nvme);
  EXPECT_EQ(plan.arenas[2].bytes, 16);
  EXPECT_EQ(plan.arenas[2].path, "/tmp/zero");
  std::vector<int> arenas;
  for (const PlanBuffer &buffer : plan.buffers)
    arenas.push_back(buffer.arena);
  EXPECT_EQ(arenas, (std::vector<int>{0, 0, 1, 1, 2, 1}));
  EXPECT_EQ(plan.memoryOf(4), MemoryKind::Nvme);
  // Host memory is not pinned unless the plan says so.
  Plan unpinned =
      parsePlan(sealed(offloadReplaced(", \"pinned\": true", "")), "m.zplan");
  EXPECT_FALSE(unpinned.arenas[1].pinned);
}

TEST(PlanReader, RefusesBadArenas) {
  EXPECT_EQ(
      errorOf(replaced(
          "  \"arenas\": [{\"memory\": \"device\", \"bytes\": 128}],\n", "")),
      "model.zplan: missing key 'arenas'");
  EXPECT_EQ(
      errorOf(replaced("\"arenas\": [{\"memory\": \"device\", \"bytes\": 128}]",
                       "\"arenas\": []")),
      "model.zplan: arenas: expected the device arena first, found none");
  EXPECT_EQ(
      errorOf(replaced("{\"memory\": \"device\"", "{\"memory\": \"host\"")),
      "model.zplan: arenas[0].memory: the first arena is in host "
      "memory; the device arena comes first");
  EXPECT_EQ(
      errorOf(replaced("{\"memory\": \"device\"", "{\"memory\": \"disk\"")),
      "model.zplan: arenas[0].memory: unknown memory 'disk' (expected "
      "device, host or nvme)");
  EXPECT_EQ(errorOf(offloadReplaced("{\"memory\": \"nvme\"",
                                    "{\"memory\": \"host\"")),
            "model.zplan: arenas[2].memory: a second arena in host memory");
  EXPECT_EQ(errorOf(offloadReplaced("{\"memory\": \"host\"",
                                    "{\"memory\": \"device\"")),
            "model.zplan: arenas[1].memory: a second arena in device memory");
  EXPECT_EQ(errorOf(offloadReplaced(", \"path\": \"/tmp/zero\"", "")),
            "model.zplan: arenas[2]: missing key 'path'");
  EXPECT_EQ(
      errorOf(offloadReplaced("\"path\": \"/tmp/zero\"", "\"path\": \"\"")),
      "model.zplan: arenas[2].path: expected the directory of the NVMe "
      "files, not an empty string");
  EXPECT_EQ(errorOf(offloadReplaced("\"pinned\": true", "\"pinned\": 1")),
            "model.zplan: arenas[1].pinned: expected true or false");
  EXPECT_EQ(errorOf(replaced("\"bytes\": 128}]", "\"bytes\": -1}]")),
            "model.zplan: arenas[0].bytes: value -1 out of range [0, "
            "9007199254740992]");
  EXPECT_EQ(errorOf(replaced("\"arena_bytes\": 128", "\"arena_bytes\": 256")),
            "model.zplan: arena_bytes: 256 bytes, but the device arena "
            "(arenas[0]) has 128");
}

TEST(PlanReader, PlacesEachBufferInItsArena) {
  EXPECT_EQ(errorOf(replaced(
                "\"role\": \"activation\",\n               \"arena\": 0",
                "\"role\": \"activation\",\n               \"arena\": 1")),
            "model.zplan: buffers[1].arena: value 1 out of range [0, 0]");
  EXPECT_EQ(
      errorOf(replaced("\"role\": \"activation\",\n               \"arena\": 0",
                       "\"role\": \"activation\"")),
      "model.zplan: buffers[1]: missing key 'arena'");
  // Within the device arena's 32 bytes, but past the NVMe arena's 16.
  EXPECT_EQ(
      errorOf(offloadReplaced("{\"offset\": 0, \"bytes\": 16, \"live\": [0, "
                              "10], \"role\": \"opt_state\"",
                              "{\"offset\": 16, \"bytes\": 16, \"live\": [0, "
                              "10], \"role\": \"opt_state\"")),
      "model.zplan: buffers[4]: buffer ends at byte 32, past the nvme "
      "arena (16 bytes)");
  // Past the device arena's 32 bytes, within the host arena's 48.
  EXPECT_NO_THROW(parsePlan(sealed(kOffloadPlan), "model.zplan"));
  EXPECT_EQ(errorOf(offloadReplaced(
                "{\"offset\": 32, \"bytes\": 16, \"live\": [4, 8]",
                "{\"offset\": 40, \"bytes\": 16, \"live\": [4, 8]")),
            "model.zplan: buffers[5]: buffer ends at byte 56, past the host "
            "arena (48 bytes)");
}

TEST(PlanReader, ChecksOverlapPerArena) {
  // Buffers 0, 2 and 4 share offsets [0, 16) of three arenas, all live.
  EXPECT_EQ(errorOf(kOffloadPlan), "(no error)");
  // Two buffers of one arena still may not.
  EXPECT_EQ(errorOf(offloadReplaced(
                "{\"offset\": 32, \"bytes\": 16, \"live\": [4, 8]",
                "{\"offset\": 16, \"bytes\": 16, \"live\": [4, 8]")),
            "model.zplan: buffers[5]: shares arena bytes [16, 32) with buffer "
            "3 while both are live (positions 4 to 8)");
}

TEST(PlanReader, ReadsTransfers) {
  Plan plan = parsePlan(sealed(kOffloadPlan), "model.zplan");
  EXPECT_EQ(plan.numTransfers, 4);
  EXPECT_EQ(plan.numBuckets, 0);
  ASSERT_EQ(plan.instructions.size(), 11u);
  const Instruction &start = plan.instructions[3];
  EXPECT_EQ(start.kind, InstructionKind::TransferStart);
  EXPECT_EQ(start.op, "transfer_start");
  EXPECT_EQ(start.transfer, 1);
  EXPECT_EQ(start.from, MemoryKind::Nvme);
  EXPECT_EQ(start.to, MemoryKind::Host);
  EXPECT_EQ(start.operands, (std::vector<int>{4}));
  EXPECT_EQ(start.results, (std::vector<int>{5}));
  const Instruction &wait = plan.instructions[8];
  EXPECT_EQ(wait.kind, InstructionKind::TransferWait);
  EXPECT_EQ(wait.transfer, 2);
  EXPECT_EQ(wait.from, MemoryKind::Host);
  EXPECT_EQ(wait.to, MemoryKind::Nvme);
  EXPECT_TRUE(wait.operands.empty());
  EXPECT_TRUE(wait.results.empty());
  EXPECT_EQ(wait.free, (std::vector<int>{5}));
  EXPECT_EQ(plan.instructions[9].from, MemoryKind::Host);
  EXPECT_EQ(plan.instructions[9].to, MemoryKind::Device);
}

TEST(PlanReader, RefusesBadTransfers) {
  EXPECT_EQ(
      errorOf(offloadReplaced("{\"op\": \"transfer_wait\", \"transfer\": 0",
                              "{\"op\": \"transfer_wait\", \"transfer\": 3")),
      "model.zplan: instructions[2].transfer: waits for transfer 3 "
      "before it starts");
  EXPECT_EQ(
      errorOf(offloadReplaced("{\"op\": \"transfer_wait\", \"transfer\": 1}",
                              "{\"op\": \"transfer_wait\", \"transfer\": 0}")),
      "model.zplan: instructions[4].transfer: transfer 0 is waited for "
      "twice");
  EXPECT_EQ(errorOf(offloadReplaced("\"transfer\": 1, \"from\": \"nvme\"",
                                    "\"transfer\": 0, \"from\": \"nvme\"")),
            "model.zplan: instructions[3].transfer: transfer 0 is started "
            "twice");
  EXPECT_EQ(errorOf(offloadReplaced(",\n    {\"op\": \"transfer_wait\", "
                                    "\"transfer\": 3}",
                                    "")),
            "model.zplan: instructions: transfer 3 is started but never "
            "waited for");
  EXPECT_EQ(errorOf(offloadReplaced("\"transfer\": 0, \"from\": \"device\"",
                                    "\"transfer\": 5, \"from\": \"device\"")),
            "model.zplan: instructions[1].transfer: transfer 5 starts where "
            "transfer 0 is due; ids are 0, 1, 2, ... in the order of the "
            "starts");
  EXPECT_EQ(errorOf(offloadReplaced("\"from\": \"device\", \"to\": \"host\"",
                                    "\"from\": \"host\", \"to\": \"host\"")),
            "model.zplan: instructions[1]: a transfer from host memory to "
            "itself");
  EXPECT_EQ(errorOf(offloadReplaced("\"from\": \"device\", \"to\": \"host\"",
                                    "\"from\": \"device\", \"to\": \"disk\"")),
            "model.zplan: instructions[1].to: unknown memory 'disk' (expected "
            "device, host or nvme)");
  EXPECT_EQ(errorOf(offloadReplaced("\"from\": \"nvme\", \"to\": \"host\"",
                                    "\"from\": \"device\", \"to\": \"host\"")),
            "model.zplan: instructions[3].operands: value 4 is in buffer 4 in "
            "nvme memory, not device");
  EXPECT_EQ(errorOf(offloadReplaced("\"results\": [8]", "\"results\": [5]")),
            "model.zplan: instructions[7].results: value 5 is in buffer 5 in "
            "host memory, not nvme");
  EXPECT_EQ(errorOf(offloadReplaced("\"results\": [2], \"operands\": [1]",
                                    "\"results\": [10], \"operands\": [1]")),
            "model.zplan: instructions[1]: the operand (f32 [4]) and the "
            "result (f32 [2]) differ in dtype or shape");
  EXPECT_EQ(errorOf(offloadReplaced("\"results\": [2], \"operands\": [1]",
                                    "\"results\": [2], \"operands\": [1, 0]")),
            "model.zplan: instructions[1]: transfer_start takes one operand "
            "and one result");
  EXPECT_EQ(
      errorOf(offloadReplaced("{\"op\": \"transfer_wait\", \"transfer\": 3}",
                              "{\"op\": \"transfer_wait\", \"transfer\": 3, "
                              "\"results\": [9]}")),
      "model.zplan: instructions[10]: transfer_wait takes no operands or "
      "results (they are its transfer_start's)");
}

TEST(PlanReader, KernelsComputeInOneMemory) {
  // A device kernel may not read host memory: the CUDA runtime would hand
  // the GPU a host pointer.
  EXPECT_EQ(errorOf(offloadReplaced("\"operands\": [3, 2], \"memory\": "
                                    "\"host\",",
                                    "\"operands\": [3, 2],")),
            "model.zplan: instructions[5]: nn.add computes in device memory "
            "but reads value 3 in buffer 3, in host memory");
  EXPECT_EQ(errorOf(offloadReplaced("\"operands\": [5], \"memory\": "
                                    "\"host\"",
                                    "\"operands\": [5], \"memory\": "
                                    "\"nvme\"")),
            "model.zplan: instructions[6].memory: a kernel cannot compute in "
            "NVMe");
  Plan plan = parsePlan(sealed(kOffloadPlan), "model.zplan");
  EXPECT_EQ(plan.instructions[5].memory, MemoryKind::Host);
  EXPECT_EQ(plan.instructions[0].memory, MemoryKind::Device);
}

TEST(PlanReader, OnlyTransfersTouchNvme) {
  EXPECT_EQ(errorOf(offloadReplaced("\"results\": [7], \"attrs\": {\"factor\": "
                                    "0.5},\n     \"operands\": [5]",
                                    "\"results\": [7], \"attrs\": {\"factor\": "
                                    "0.5},\n     \"operands\": [4]")),
            "model.zplan: instructions[6]: nn.scale reads value 4 in buffer 4, "
            "in the nvme arena; only transfers may touch NVMe");
  EXPECT_EQ(errorOf(offloadReplaced("\"results\": [7], \"attrs\"",
                                    "\"results\": [8], \"attrs\"")),
            "model.zplan: instructions[6]: nn.scale writes value 8 in buffer "
            "4, in the nvme arena; only transfers may touch NVMe");
  // A copy into a variable that lives on NVMe.
  EXPECT_EQ(
      errorOf(offloadReplaced("{\"op\": \"transfer_wait\", \"transfer\": 3}",
                              "{\"op\": \"transfer_wait\", \"transfer\": 3},\n"
                              "    {\"op\": \"copy\", \"variable\": "
                              "\"w.state\", \"operands\": [7]}")),
      "model.zplan: instructions[11]: copy writes variable 'w.state' in "
      "buffer 4, in the nvme arena; only transfers may touch NVMe");
  // Kernels may read and write host memory.
  EXPECT_EQ(errorOf(kOffloadPlan), "(no error)");
}

TEST(PlanReader, ReadsACompiledGpt2Plan) {
  const char *path = std::getenv("GPT2_PLAN");
  ASSERT_NE(path, nullptr);
  Plan plan = readPlan(path);
  EXPECT_EQ(plan.world, 2);
  EXPECT_EQ(plan.stage, 3);
  EXPECT_GT(plan.instructions.size(), 100u);
  EXPECT_EQ(plan.inputs.size(), 2u);
  int starts = 0, waits = 0;
  for (const Instruction &instruction : plan.instructions) {
    starts += instruction.kind == InstructionKind::CollectiveStart;
    waits += instruction.kind == InstructionKind::CollectiveWait;
  }
  EXPECT_EQ(starts, plan.numBuckets);
  EXPECT_EQ(waits, plan.numBuckets);
  // No offload: the device arena only.
  ASSERT_EQ(plan.arenas.size(), 1u);
  EXPECT_EQ(plan.arenas[0].memory, MemoryKind::Device);
  EXPECT_EQ(plan.arenas[0].bytes, plan.arenaBytes);
  EXPECT_EQ(plan.numTransfers, 0);
  const PlanVariable *wte = plan.findVariable("wte.weight");
  ASSERT_NE(wte, nullptr);
  EXPECT_EQ(wte->modelShape(), (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(wte->init, "normal");
}

} // namespace
