//===- plan_reader_test.cc - the runtime's plan reader --------------------===//
//
// A minimal hand-written plan (one all-reduce over two ranks) that reads,
// and one mutation per check the reader makes, each against its message;
// each is sealed with its checksum first, so that the check behind it is
// reached. A plan zero-compile wrote for GPT-2 tiny must read as well.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/plan/Plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

using namespace zerosbp::runtime;
using ::testing::HasSubstr;

namespace {

const char *const kValidPlan = R"({
  "format": "zerosbp-plan", "version": 1, "function": "f", "stage": 0,
  "world": 2,
  "placement": {"device": "cpu", "ranks": [0, 1], "hierarchy": [2]},
  "memory": {"arena": 128, "lower_bound": 128, "model_states": 64,
             "peak": {"param": 64, "activation": 64}},
  "arena_bytes": 128,
  "buffers": [{"offset": 0, "bytes": 64, "live": [0, 3], "role": "param"},
              {"offset": 64, "bytes": 64, "live": [1, 3], "role": "activation"}],
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

/// `text` with its checksum filled in, as zero-compile writes it.
std::string sealed(std::string text) {
  size_t quote = text.rfind("\"00000000\"");
  if (quote == std::string::npos)
    return text;
  char digits[9];
  std::snprintf(digits, sizeof(digits), "%08x", planChecksum(text, quote + 1));
  return text.replace(quote + 1, 8, digits);
}

std::string replaced(const std::string &from, const std::string &to) {
  std::string text = kValidPlan;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string errorOf(const std::string &text) {
  try {
    parsePlan(sealed(text), "model.zplan");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(PlanReader, ReadsAValidPlan) {
  Plan plan = parsePlan(sealed(kValidPlan), "model.zplan");
  EXPECT_EQ(plan.world, 2);
  EXPECT_EQ(plan.arenaBytes, 128);
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
  EXPECT_THAT(errorOf(replaced("\"version\": 1", "\"version\": 2")),
              HasSubstr("plan version 2 is not supported; this runtime reads "
                        "version 1"));
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
              HasSubstr("buffers[1]: buffer ends at byte 704, past the arena"));
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
  std::string reused = replaced(
      "\"live\": [0, 3], \"role\": \"param\"},\n              {\"offset\": 64",
      "\"live\": [0, 0], \"role\": \"param\"},\n              {\"offset\": 0");
  EXPECT_EQ(errorOf(reused), "(no error)");
  EXPECT_EQ(
      errorOf(replaced("\"live\": [0, 3], \"role\": \"param\"},\n              "
                       "{\"offset\": 64",
                       "\"live\": [0, 1], \"role\": \"param\"},\n              "
                       "{\"offset\": 0")),
      "model.zplan: buffers[1]: shares arena bytes [0, 64) with buffer 0 "
      "while both are live (positions 1 to 1)");
}

/// kValidPlan with `extra` buffers after its two, each {offset, bytes,
/// first, last}, in an arena of `arena` bytes.
std::string planWithBuffers(const std::vector<std::array<int64_t, 4>> &extra,
                            int64_t arena) {
  std::string buffers;
  for (const auto &[offset, bytes, first, last] : extra)
    buffers += ",\n {\"offset\": " + std::to_string(offset) +
               ", \"bytes\": " + std::to_string(bytes) + ", \"live\": [" +
               std::to_string(first) + ", " + std::to_string(last) +
               "], \"role\": \"activation\"}";
  std::string text = replaced("\"role\": \"activation\"}],",
                              "\"role\": \"activation\"}" + buffers + "],");
  std::string from = "\"arena_bytes\": 128";
  return text.replace(text.find(from), from.size(),
                      "\"arena_bytes\": " + std::to_string(arena));
}

// The sweep against brute force, on random small layouts.
TEST(PlanReader, OverlapCheckAgreesWithBruteForce) {
  std::mt19937 random(17);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::array<int64_t, 4>> extra;
    int count = 1 + static_cast<int>(random() % 12);
    for (int i = 0; i < count; ++i) {
      int64_t first = random() % 8;
      extra.push_back({128 + static_cast<int64_t>(random() % 8) * 16,
                       static_cast<int64_t>(random() % 4) * 16, first,
                       first + static_cast<int64_t>(random() % 4)});
    }
    bool conflict = false;
    for (size_t a = 0; a < extra.size(); ++a)
      for (size_t b = a + 1; b < extra.size(); ++b) {
        const auto &x = extra[a], &y = extra[b];
        conflict |= x[1] > 0 && y[1] > 0 && x[0] < y[0] + y[1] &&
                    y[0] < x[0] + x[1] && x[2] <= y[3] && y[2] <= x[3];
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
  std::vector<std::array<int64_t, 4>> extra;
  for (int64_t i = 0; i < 100000; ++i)
    extra.push_back(
        {128 + (i % 1000) * 64, 64, (i / 1000) * 2, (i / 1000) * 2 + 1});
  int64_t arena = 128 + 1000 * 64;
  EXPECT_EQ(errorOf(planWithBuffers(extra, arena)), "(no error)");
  // One more, live across two windows, on the bytes of buffer 2 + 999.
  extra.push_back({128 + 999 * 64 + 32, 64, 1, 2});
  EXPECT_EQ(errorOf(planWithBuffers(extra, arena + 64)),
            "model.zplan: buffers[100002]: shares arena bytes [64096, 64128) "
            "with buffer 1001 while both are live (positions 1 to 1)");
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
  const PlanVariable *wte = plan.findVariable("wte.weight");
  ASSERT_NE(wte, nullptr);
  EXPECT_EQ(wte->modelShape(), (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(wte->init, "normal");
}

} // namespace
