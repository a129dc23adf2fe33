//===- pipeline_test_plan.h - a two-stage pipeline plan for tests -*- C++ -*-=//
//
// A hand-written pipeline-parallel plan (docs/plan-format.md#pipeline): 2
// ranks, hierarchy [2], one rank per stage. Stage 0 holds the
// parameters w and u and the input x, stage 1 the parameters v and t and
// the step count. One step:
//
//   [0]    a = w + x                 [0, 1] send a (stage 0) -> b (stage 1)
//   [1]    c = b + v                 [0, 1] send c (stage 1) -> d (stage 0)
//   [0]    e = d + w  (the output)   [0]    w = 0.5 w   [1]    v = 3 v
//
// so e = 2w + x + v. Each stage's buffers share arena bytes with the
// other's: v with w, b with a, c with d, the step count with u, t with x.
// A rank that wrote another stage's variable, input or step, or ran
// another stage's instruction, would overwrite a value its own stage reads
// later (w, u, v or t): the tests see it in the outputs and the variables.
//
// kSplitPipelinePlan is the same step with each send_recv in halves, as the
// compiler places them: the send half right after its value is computed,
// the receive half right before the value's first use, each with its own
// bucket and wait. Stage 1 first computes k = v + t, work of its own that
// needs nothing from stage 0, then receives:
//
//   [0]    a = w + x                 [0]    send half a -> b
//   [1]    k = v + t                 [1]    receive half a -> b
//   [1]    c = b + k                 [1]    send half c -> d
//   [0]    receive half c -> d       [0]    e = d + w  (the output)
//   [0]    w = 0.5 w   [1]    v = 3 v
//
// so e = 2w + x + v + t. Stage 1's k shares bytes with stage 0's e.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_PIPELINE_TEST_PLAN_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_PIPELINE_TEST_PLAN_H

namespace zerosbp::testing {

// Checksum "00000000": read it with verifyChecksum off, or seal it.
inline constexpr const char *kPipelinePlan = R"({
  "format": "zerosbp-plan", "version": 2, "function": "pipe", "stage": 0,
  "world": 2,
  "placement": {"device": "cpu", "ranks": [0, 1], "hierarchy": [2]},
  "pipeline": {"stages": 2, "micro_batches": 1, "schedule": "1f1b",
               "bubble": 0.25},
  "memory": {"arena": 96, "lower_bound": 72, "model_states": 32,
             "peak": {"param": 32, "activation": 40, "input": 16}},
  "arena_bytes": 96,
  "arenas": [{"memory": "device", "bytes": 96}],
  "buffers": [
    {"offset": 0, "bytes": 16, "live": [0, 9], "role": "param", "arena": 0, "stage": 0},
    {"offset": 0, "bytes": 16, "live": [0, 9], "role": "param", "arena": 0, "stage": 1},
    {"offset": 16, "bytes": 16, "live": [0, 2], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 16, "bytes": 16, "live": [1, 3], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 32, "bytes": 16, "live": [3, 5], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 32, "bytes": 16, "live": [4, 6], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 48, "bytes": 16, "live": [6, 9], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 64, "bytes": 16, "live": [0, 9], "role": "param", "arena": 0, "stage": 0},
    {"offset": 64, "bytes": 8, "live": [0, 9], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 80, "bytes": 16, "live": [0, 9], "role": "param", "arena": 0, "stage": 1},
    {"offset": 80, "bytes": 16, "live": [0, 0], "role": "input", "arena": 0, "stage": 0}],
  "values": [
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 2, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 3, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 4, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 5, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 6, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 7, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 8, "offset": 0, "dtype": "i64", "shape": []},
    {"buffer": 9, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 10, "offset": 0, "dtype": "f32", "shape": [4]}],
  "variables": [
    {"name": "w", "value": 0, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 0},
    {"name": "u", "value": 9, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 0},
    {"name": "v", "value": 1, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 1},
    {"name": "t", "value": 11, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 1}],
  "inputs": [
    {"name": "x", "value": 12, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "stage": 0}],
  "steps": [10], "outputs": [6],
  "instructions": [
    {"op": "nn.add", "stages": [0], "results": [2], "operands": [0, 12],
     "free": [10]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 0, "group_axis": 0, "group_size": 2, "source_stage": 0,
     "target_stage": 1, "stages": [0, 1], "results": [3],
     "segments": [{"offset": 0, "numel": 4}], "operands": [2]},
    {"op": "collective_wait", "bucket": 0, "stages": [0, 1], "free": [2]},
    {"op": "nn.add", "stages": [1], "results": [4], "operands": [3, 1],
     "free": [3]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 1, "group_axis": 0, "group_size": 2, "source_stage": 1,
     "target_stage": 0, "stages": [0, 1], "results": [5],
     "segments": [{"offset": 0, "numel": 4}], "operands": [4]},
    {"op": "collective_wait", "bucket": 1, "stages": [0, 1], "free": [4]},
    {"op": "nn.add", "stages": [0], "results": [6], "operands": [5, 0],
     "free": [5]},
    {"op": "nn.scale", "stages": [0], "results": [7], "attrs": {"factor": 0.5},
     "operands": [0]},
    {"op": "nn.scale", "stages": [1], "results": [8], "attrs": {"factor": 3.0},
     "operands": [1]}],
  "checksum": "00000000"
})";

// Checksum "00000000": read it with verifyChecksum off, or seal it.
inline constexpr const char *kSplitPipelinePlan = R"({
  "format": "zerosbp-plan", "version": 2, "function": "pipe", "stage": 0,
  "world": 2,
  "placement": {"device": "cpu", "ranks": [0, 1], "hierarchy": [2]},
  "pipeline": {"stages": 2, "micro_batches": 1, "schedule": "1f1b",
               "bubble": 0.25},
  "memory": {"arena": 96, "lower_bound": 72, "model_states": 32,
             "peak": {"param": 32, "activation": 56, "input": 16}},
  "arena_bytes": 96,
  "arenas": [{"memory": "device", "bytes": 96}],
  "buffers": [
    {"offset": 0, "bytes": 16, "live": [0, 14], "role": "param", "arena": 0, "stage": 0},
    {"offset": 0, "bytes": 16, "live": [0, 14], "role": "param", "arena": 0, "stage": 1},
    {"offset": 16, "bytes": 16, "live": [0, 2], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 16, "bytes": 16, "live": [4, 6], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 32, "bytes": 16, "live": [6, 8], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 32, "bytes": 16, "live": [9, 11], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 48, "bytes": 16, "live": [11, 14], "role": "activation", "arena": 0, "stage": 0},
    {"offset": 64, "bytes": 16, "live": [0, 14], "role": "param", "arena": 0, "stage": 0},
    {"offset": 64, "bytes": 8, "live": [0, 14], "role": "activation", "arena": 0, "stage": 1},
    {"offset": 80, "bytes": 16, "live": [0, 14], "role": "param", "arena": 0, "stage": 1},
    {"offset": 80, "bytes": 16, "live": [0, 0], "role": "input", "arena": 0, "stage": 0},
    {"offset": 48, "bytes": 16, "live": [3, 6], "role": "activation", "arena": 0, "stage": 1}],
  "values": [
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 2, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 3, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 4, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 5, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 6, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 0, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 1, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 7, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 8, "offset": 0, "dtype": "i64", "shape": []},
    {"buffer": 9, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 10, "offset": 0, "dtype": "f32", "shape": [4]},
    {"buffer": 11, "offset": 0, "dtype": "f32", "shape": [4]}],
  "variables": [
    {"name": "w", "value": 0, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 0},
    {"name": "u", "value": 9, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 0},
    {"name": "v", "value": 1, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 1},
    {"name": "t", "value": 11, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "role": "param", "init": "ones",
     "init_scale": 0, "frozen": false, "stage": 1}],
  "inputs": [
    {"name": "x", "value": 12, "dtype": "f32", "local_shape": [4],
     "global_shape": [4], "sbp": ["B"], "stage": 0}],
  "steps": [10], "outputs": [6],
  "instructions": [
    {"op": "nn.add", "stages": [0], "results": [2], "operands": [0, 12],
     "free": [10]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 0, "group_axis": 0, "group_size": 2, "source_stage": 0,
     "target_stage": 1, "stages": [0], "results": [3],
     "segments": [{"offset": 0, "numel": 4}], "operands": [2]},
    {"op": "collective_wait", "bucket": 0, "stages": [0], "free": [2]},
    {"op": "nn.add", "stages": [1], "results": [13], "operands": [1, 11]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 1, "group_axis": 0, "group_size": 2, "source_stage": 0,
     "target_stage": 1, "stages": [1], "results": [3],
     "segments": [{"offset": 0, "numel": 4}], "operands": [2]},
    {"op": "collective_wait", "bucket": 1, "stages": [1]},
    {"op": "nn.add", "stages": [1], "results": [4], "operands": [3, 13],
     "free": [3, 11]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 2, "group_axis": 0, "group_size": 2, "source_stage": 1,
     "target_stage": 0, "stages": [1], "results": [5],
     "segments": [{"offset": 0, "numel": 4}], "operands": [4]},
    {"op": "collective_wait", "bucket": 2, "stages": [1], "free": [4]},
    {"op": "collective_start", "kind": "send_recv", "stream": "comm",
     "bucket": 3, "group_axis": 0, "group_size": 2, "source_stage": 1,
     "target_stage": 0, "stages": [0], "results": [5],
     "segments": [{"offset": 0, "numel": 4}], "operands": [4]},
    {"op": "collective_wait", "bucket": 3, "stages": [0]},
    {"op": "nn.add", "stages": [0], "results": [6], "operands": [5, 0],
     "free": [5]},
    {"op": "nn.scale", "stages": [0], "results": [7], "attrs": {"factor": 0.5},
     "operands": [0]},
    {"op": "nn.scale", "stages": [1], "results": [8], "attrs": {"factor": 3.0},
     "operands": [1]}],
  "checksum": "00000000"
})";

} // namespace zerosbp::testing

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_PIPELINE_TEST_PLAN_H
