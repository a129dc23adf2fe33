//===- loop_test_plan.h - a looped plan and its unrolled twin ---*- C++ -*-===//
//
// A two-stage plan whose file holds one micro-batch's instructions per
// chunk (docs/plan-format.md#micro-batch-loop), 2 ranks, one per stage,
// M micro-batches of x ([M, 4]) in 1F1B order:
//
//   before the loop  [0]  g = 0                       (the running total)
//   chunk 0, [0] fwd      s = x[m] (a view of x's row m)   a = s + w
//                         send half a -> b
//   chunk 1, [1] fwd      receive half a -> b   d = dropout(b)   e = d + v
//                         send half e -> f
//   chunk 2, [0] bwd      receive half e -> f   h = f * a   g = g + h
//   after the loop   [0]  out = 0.5 g (the output)   w = w - out
//                    [1]  v = 0.5 v
//
// Stage 0 keeps a from a micro-batch's forward to its backward, two
// micro-batches at once under 1F1B: its buffer has two slots. g is made
// before the loop and summed into in place by every micro-batch.
//
// loopedPlan(M) is that file; unrolledPlan(M) the same step as an unrolled
// plan, written out micro-batch by micro-batch in the order the reader
// merges the stages' invocations (kMergedOrder), with its own buffers per
// micro-batch at the loop's offsets.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_PLAN_LOOP_TEST_PLAN_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_PLAN_LOOP_TEST_PLAN_H

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace zerosbp::testing {

/// `text` with every `from` replaced by `to`.
inline std::string replacedEvery(std::string text, const std::string &from,
                                 const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// 1F1B on two stages: stage 0 runs one forward ahead, then a backward
/// after each forward; stage 1 runs its chunk per micro-batch.
inline std::string oneFOneBOrder(int micro) {
  std::string stage0 = "[0, 0]", stage1;
  for (int m = 1; m < micro; ++m)
    stage0 +=
        ", [0, " + std::to_string(m) + "], [2, " + std::to_string(m - 1) + "]";
  stage0 += ", [2, " + std::to_string(micro - 1) + "]";
  for (int m = 0; m < micro; ++m)
    stage1 += std::string(m ? ", " : "") + "[1, " + std::to_string(m) + "]";
  return "[[" + stage0 + "],\n                [" + stage1 + "]]";
}

// Checksum "00000000": read it with verifyChecksum off, or seal it.
inline constexpr const char *kLoopedPlanText = R"({
  "format": "zerosbp-plan", "version": 2, "function": "loop", "stage": 0,
  "world": 2,
  "placement": {"device": "cpu", "ranks": [0, 1], "hierarchy": [2]},
  "pipeline": {"stages": 2, "micro_batches": @M@, "schedule": "1f1b",
               "bubble": 0.25,
               "loop": {
      "chunks": [
        {"stage": 0, "phase": "forward", "model": 0, "instructions": [1, 5]},
        {"stage": 1, "phase": "forward", "model": 0, "instructions": [5, 11]},
        {"stage": 0, "phase": "backward", "model": 0, "instructions": [11, 15]}],
      "order": @ORDER@}},
  "memory": {"arena": 528, "lower_bound": 0, "model_states": 32,
             "peak": {"param": 32}},
  "arena_bytes": 528,
  "arenas": [{"memory": "device", "bytes": 528}],
  "buffers": [
    {"offset": 0, "bytes": 16, "live": [0, 19], "role": "param", "arena": 0, "stage": 0},
    {"offset": 64, "bytes": @XBYTES@, "live": [0, 2], "role": "input", "arena": 0, "stage": 0},
    {"offset": 128, "bytes": 16, "live": [1, 16], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 192, "bytes": 16, "live": [3, 14], "role": "activation", "arena": 0, "stage": 0, "micro_slots": 2, "slot_bytes": 64},
    {"offset": 320, "bytes": 16, "live": [12, 14], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 384, "bytes": 16, "live": [14, 15], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 448, "bytes": 16, "live": [16, 19], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 0, "bytes": 16, "live": [0, 19], "role": "param", "arena": 0, "stage": 1},
    {"offset": 64, "bytes": 8, "live": [0, 8], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 128, "bytes": 16, "live": [6, 8], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 192, "bytes": 16, "live": [8, 9], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 256, "bytes": 16, "live": [9, 11], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 512, "bytes": 16, "live": [0, 0], "role": "activation", "arena": 0, "stage": 0}],
  "values": [
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [@M@, 4]},
    {"buffer": 2, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 3, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 9, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 10, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 11, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 4, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 5, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 2, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 6, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 7, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 8, "offset": 0, "dtype": "i64", "shape": []},
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [1, 4]},
    {"buffer": 7, "offset": 0, "dtype": "f32", "shape": [1, 4]}],
  "variables": [
    {"name": "w", "value": 0, "dtype": "f32", "local_shape": [1, 4],
     "global_shape": [1, 4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 0},
    {"name": "v", "value": 12, "dtype": "f32", "local_shape": [1, 4],
     "global_shape": [1, 4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 1}],
  "inputs": [
    {"name": "x", "value": 1, "dtype": "f32", "local_shape": [@M@, 4],
     "global_shape": [@M@, 4], "sbp": ["B"], "stage": 0}],
  "steps": [13], "outputs": [11],
  "instructions": [
    {"op": "nn.fill", "stages": [0], "results": [2], "attrs": {"value": 0.0}},
    {"op": "nn.slice", "stages": [0], "results": [3], "operands": [1],
     "attrs": {"offsets": [0, 0], "sizes": [1, 4], "micro_batch_dim": 0}},
    {"op": "nn.add", "stages": [0], "results": [4], "operands": [3, 0]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 0, "group_axis": 0, "group_size": 2, "source_stage": 0,
     "target_stage": 1, "stages": [0], "results": [5],
     "segments": [{"offset": 0, "numel": 4}], "operands": [4]},
    {"op": "collective_wait", "bucket": 0, "stages": [0]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 1, "group_axis": 0, "group_size": 2, "source_stage": 0,
     "target_stage": 1, "stages": [1], "results": [5],
     "segments": [{"offset": 0, "numel": 4}], "operands": [4]},
    {"op": "collective_wait", "bucket": 1, "stages": [1]},
    {"op": "nn.dropout", "stages": [1], "results": [6], "operands": [5, 13],
     "attrs": {"p": 0.5, "seed": 7, "stream": 3}},
    {"op": "nn.add", "stages": [1], "results": [7], "operands": [6, 12]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 2, "group_axis": 0, "group_size": 2, "source_stage": 1,
     "target_stage": 0, "stages": [1], "results": [8],
     "segments": [{"offset": 0, "numel": 4}], "operands": [7]},
    {"op": "collective_wait", "bucket": 2, "stages": [1]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 3, "group_axis": 0, "group_size": 2, "source_stage": 1,
     "target_stage": 0, "stages": [0], "results": [8],
     "segments": [{"offset": 0, "numel": 4}], "operands": [7]},
    {"op": "collective_wait", "bucket": 3, "stages": [0]},
    {"op": "nn.mul", "stages": [0], "results": [9], "operands": [8, 4]},
    {"op": "nn.add", "stages": [0], "results": [10], "operands": [2, 9]},
    {"op": "nn.scale", "stages": [0], "results": [11], "operands": [10],
     "attrs": {"factor": 0.5}},
    {"op": "nn.sub", "stages": [0], "results": [14], "operands": [0, 11]},
    {"op": "nn.scale", "stages": [1], "results": [15], "operands": [12],
     "attrs": {"factor": 0.5}}],
  "checksum": "00000000"
})";

/// The looped plan of `micro` micro-batches in `order` (1F1B by default).
inline std::string loopedPlan(int micro, std::string order = "") {
  if (order.empty())
    order = oneFOneBOrder(micro);
  std::string text =
      replacedEvery(kLoopedPlanText, "@M@", std::to_string(micro));
  text = replacedEvery(text, "@XBYTES@", std::to_string(16 * micro));
  return replacedEvery(text, "@ORDER@", order);
}

/// The invocations of loopedPlan(M) as the reader merges them: stage 0
/// until it waits for stage 1's first message, then stage 1 until it
/// waits, and so on. F: chunk 0, S: chunk 1, B: chunk 2; the digit is the
/// micro-batch.
inline const std::map<int, std::string> kMergedOrder = {
    {1, "F0 S0 B0"},
    {2, "F0 F1 S0 S1 B0 B1"},
    {3, "F0 F1 S0 S1 B0 F2 B1 S2 B2"},
    {4, "F0 F1 S0 S1 B0 F2 B1 F3 S2 S3 B2 B3"}};

/// loopedPlan(M) unrolled by hand: each micro-batch's values and buffers
/// (a's in slot m mod 2), its row of x, its dropout mask, and each
/// backward adding to the total the previous one left.
inline std::string unrolledPlan(int micro) {
  using Json = nlohmann::ordered_json;
  Json buffers = Json::array(), values = Json::array(),
       instructions = Json::array();
  auto buffer = [&](int64_t offset, int64_t bytes, const char *role,
                    int stage) {
    buffers.push_back({{"offset", offset},
                       {"bytes", bytes},
                       {"live", {0, 0}},
                       {"role", role},
                       {"arena", 0},
                       {"stage", stage}});
    return static_cast<int>(buffers.size()) - 1;
  };
  auto value = [&](int buffer, int64_t offset, const char *dtype,
                   std::vector<int64_t> shape) {
    values.push_back({{"buffer", buffer},
                      {"offset", offset},
                      {"dtype", dtype},
                      {"shape", shape}});
    return static_cast<int>(values.size()) - 1;
  };
  std::vector<int64_t> row = {1, 4};
  int w = value(buffer(0, 16, "param", 0), 0, "f32", row);
  int xBuffer = buffer(64, 16 * micro, "input", 0);
  int x = value(xBuffer, 0, "f32", {micro, 4});
  int gBuffer = buffer(128, 16, "activation", 0);
  int outBuffer = buffer(448, 16, "activation", 0);
  int vBuffer = buffer(0, 16, "param", 1);
  int v = value(vBuffer, 0, "f32", row);
  int step = value(buffer(64, 8, "activation", 1), 0, "i64", {});
  // Each micro-batch's own values, by name.
  std::vector<std::map<std::string, int>> own(micro);
  for (int m = 0; m < micro; ++m) {
    std::map<std::string, int> &ids = own[m];
    ids["s"] = value(xBuffer, 16 * m, "f32", row);
    ids["a"] =
        value(buffer(192 + (m % 2) * 64, 16, "activation", 0), 0, "f32", row);
    ids["b"] = value(buffer(128, 16, "activation", 1), 0, "f32", row);
    ids["d"] = value(buffer(192, 16, "activation", 1), 0, "f32", row);
    ids["e"] = value(buffer(256, 16, "activation", 1), 0, "f32", row);
    ids["f"] = value(buffer(320, 16, "activation", 0), 0, "f32", row);
    ids["h"] = value(buffer(384, 16, "activation", 0), 0, "f32", row);
    ids["g"] = value(gBuffer, 0, "f32", row);
  }
  int bucket = 0;
  auto kernel = [&](const char *op, int stage, std::vector<int> operands,
                    int result, Json attrs) {
    Json entry = {{"op", op}, {"stages", {stage}}, {"results", {result}}};
    if (!operands.empty())
      entry["operands"] = operands;
    if (!attrs.empty())
      entry["attrs"] = attrs;
    instructions.push_back(entry);
  };
  auto half = [&](int from, int to, int stage, int operand, int result) {
    instructions.push_back({{"op", "collective_start"},
                            {"kind", "send_recv"},
                            {"stream", "comm"},
                            {"bucket", bucket},
                            {"group_axis", 0},
                            {"group_size", 2},
                            {"source_stage", from},
                            {"target_stage", to},
                            {"stages", {stage}},
                            {"results", {result}},
                            {"segments", {{{"offset", 0}, {"numel", 4}}}},
                            {"operands", {operand}}});
    instructions.push_back(
        {{"op", "collective_wait"}, {"bucket", bucket++}, {"stages", {stage}}});
  };
  int g0 = value(gBuffer, 0, "f32", row);
  kernel("nn.fill", 0, {}, g0, {{"value", 0.0}});
  std::istringstream order(kMergedOrder.at(micro));
  for (std::string run; order >> run;) {
    int m = run[1] - '0';
    std::map<std::string, int> &ids = own[m];
    if (run[0] == 'F') {
      kernel("nn.add", 0, {ids["s"], w}, ids["a"], {});
      half(0, 1, 0, ids["a"], ids["b"]);
    } else if (run[0] == 'S') {
      half(0, 1, 1, ids["a"], ids["b"]);
      Json dropout = {{"p", 0.5}, {"seed", 7}, {"stream", 3}};
      if (m > 0)
        dropout["micro_batch"] = m;
      kernel("nn.dropout", 1, {ids["b"], step}, ids["d"], dropout);
      kernel("nn.add", 1, {ids["d"], v}, ids["e"], {});
      half(1, 0, 1, ids["e"], ids["f"]);
    } else {
      half(1, 0, 0, ids["e"], ids["f"]);
      kernel("nn.mul", 0, {ids["f"], ids["a"]}, ids["h"], {});
      int total = m == 0 ? g0 : own[m - 1]["g"];
      kernel("nn.add", 0, {total, ids["h"]}, ids["g"], {});
    }
  }
  int out = value(outBuffer, 0, "f32", row);
  kernel("nn.scale", 0, {own[micro - 1]["g"]}, out, {{"factor", 0.5}});
  kernel("nn.sub", 0, {w, out}, value(0, 0, "f32", row), {});
  kernel("nn.scale", 1, {v}, value(vBuffer, 0, "f32", row), {{"factor", 0.5}});

  // Live from the first instruction that touches a buffer on its stage to
  // the last, a collective until its wait; inputs and the step from 0,
  // variables and the output to the end.
  int64_t end = static_cast<int64_t>(instructions.size()) + 1;
  std::vector<int64_t> first(buffers.size(), end), last(buffers.size(), -1);
  std::map<int, int64_t> waits;
  for (size_t i = 0; i < instructions.size(); ++i)
    if (instructions[i]["op"] == "collective_wait")
      waits[instructions[i]["bucket"].get<int>()] = i + 1;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Json &entry = instructions[i];
    int64_t to = entry["op"] == "collective_start"
                     ? waits[entry["bucket"].get<int>()]
                     : static_cast<int64_t>(i) + 1;
    for (const char *key : {"operands", "results"})
      if (entry.contains(key))
        for (int id : entry[key].get<std::vector<int>>()) {
          int b = values[id]["buffer"].get<int>();
          if (buffers[b]["stage"] != entry["stages"][0])
            continue;
          first[b] = std::min<int64_t>(first[b], i + 1);
          last[b] = std::max(last[b], to);
        }
  }
  for (int id : {w, v, x, step})
    first[values[id]["buffer"].get<int>()] = 0;
  for (int id : {w, v, out})
    last[values[id]["buffer"].get<int>()] = end;
  for (size_t b = 0; b < buffers.size(); ++b) {
    buffers[b]["live"] = {first[b], last[b]};
    if (last[b] < end) {
      Json &entry = instructions[last[b] - 1];
      if (!entry.contains("free"))
        entry["free"] = Json::array();
      entry["free"].push_back(b);
    }
  }

  Json plan = Json::parse(replacedEvery(
      replacedEvery(loopedPlan(micro), R"(, "micro_slots": 2)", ""),
      R"(, "slot_bytes": 64)", ""));
  plan["function"] = "unrolled";
  plan["pipeline"].erase("loop");
  plan["buffers"] = buffers;
  plan["values"] = values;
  plan["variables"][0]["value"] = w;
  plan["variables"][1]["value"] = v;
  plan["inputs"][0]["value"] = x;
  plan["steps"] = {step};
  plan["outputs"] = {out};
  plan["instructions"] = instructions;
  // The checksum last, as the reader expects.
  plan.erase("checksum");
  plan["checksum"] = "00000000";
  return plan.dump(1);
}

} // namespace zerosbp::testing

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_PLAN_LOOP_TEST_PLAN_H
