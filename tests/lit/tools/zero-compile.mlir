// zero-compile on this file (a 2-parameter linear model, 4 ranks) and on a
// built-in GPT-2; errors name the problem.
// RUN: zero-compile %s --world=4 --stage=2 --pipeline='shard-min-size=0' --report=json -o %t.zplan | FileCheck %s
// RUN: FileCheck %s --check-prefix=PLAN < %t.zplan
// RUN: zero-compile --preset=tiny --world=2 --stage=3 --report=json --pipeline='stage3-param-persistence-threshold=0' | FileCheck %s --check-prefix=GPT2
// RUN: zero-compile %s --world=4 --stage=1 --report=text --emit-ir %t.mlir | FileCheck %s --check-prefix=TEXT
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: echo '{"zero_optimization": {"stag": 2}}' > %t.json
// RUN: not zero-compile %s --world=4 --config=%t.json 2>&1 | FileCheck %s --check-prefix=CONFIG
// RUN: not zero-compile 2>&1 | FileCheck %s --check-prefix=NOMODEL
// RUN: not zero-compile --preset=huge 2>&1 | FileCheck %s --check-prefix=PRESET
// RUN: not zero-compile %s --world=2 2>&1 | FileCheck %s --check-prefix=WORLD

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0)], #p, input>>
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[B], #p, param>>
  %b = nn.variable "b" param : tensor<4xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<4x16xf32, #sbp.global<[B], #p, param>>) -> tensor<8x4xf32>
  %z = nn.bias_add %h, %b : (tensor<8x4xf32>, tensor<4xf32, #sbp.global<[B], #p, param>>) -> tensor<8x4xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x4xf32>, tensor<8xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %l : tensor<f32>
}

// Ψ = 68 fp32 parameters on 4 ranks, Adam: stage 2 keeps the parameters
// (272 bytes), shards gradients (68) and both moments (136); gradients go
// through one reduce-scatter and one all-gather each (68*4*3/4 = 204 bytes).
// CHECK: "bytes_per_rank": {
// CHECK-DAG: "grad": 68
// CHECK-DAG: "master": 0
// CHECK-DAG: "opt_state": 136
// CHECK-DAG: "param": 272
// CHECK: "collectives": {
// CHECK-DAG: "all_gather": 2
// CHECK-DAG: "all_reduce": 1
// CHECK-DAG: "reduce_scatter": 2
// CHECK: "comm_bytes_per_step": {
// CHECK-DAG: "all_gather": 204
// CHECK-DAG: "all_reduce": 6
// CHECK-DAG: "reduce_scatter": 204
// CHECK: "compile_ms":
// CHECK: "params": 68
// CHECK: "pass_ms": [
// CHECK: "pass": "zero-autodiff"
// CHECK: "pass": "zero-optimizer"
// CHECK: "pass": "zero-sbp-propagation"
// CHECK: "pass": "zero-stage"
// CHECK: "pass": "zero-partition"
// CHECK: "pass": "zero-bucketing"
// CHECK: "pass": "zero-schedule"
// CHECK: "pass": "zero-memory-plan"
// CHECK: "pass": "zero-export-plan"
// The local view: one gradient bucket (64 + 4 elements) and one bucket of
// updated parameters. The model states the memory plan holds at once equal
// the formula above: 272 + 68 + 136 = 476 bytes; the full-size gradient
// bucket (272 bytes) is the only communication buffer.
// CHECK: "plan": {
// CHECK: "by_kind": {
// CHECK: "all_gather": {
// CHECK-NEXT: "count": 1,
// CHECK-NEXT: "elements": [
// CHECK-NEXT: 68
// CHECK: "reduce_scatter": {
// CHECK-NEXT: "count": 1,
// CHECK-NEXT: "elements": [
// CHECK-NEXT: 68
// CHECK: "count": 3
// CHECK: "memory_plan": {
// CHECK: "model_state_bytes": 476,
// CHECK: "peak_bytes_by_role": {
// CHECK-NEXT: "activation":
// CHECK-NEXT: "comm_buffer": 272,
// CHECK-NEXT: "grad": 68,
// CHECK-NEXT: "input": 144,
// CHECK-NEXT: "master": 0,
// CHECK-NEXT: "opt_state": 136,
// CHECK-NEXT: "param": 272
// CHECK: "overlap": {
// CHECK: "plan_file": "{{.*}}.zplan"
// CHECK: "stage": 2
// CHECK: "world": 4

// GPT2: "params": 134912
// GPT2: "stage": 3
// GPT2: "world": 2

// TEXT: params 68  world 4  stage 1
// TEXT: opt_state 136 bytes per rank
// IR: shard.grid @cpus4(shape = 4) {zero.placement = #cpus4}
// IR: func.func @linear() {{.*}}zero.stage = 1 : i64
// IR: sbp.collective_start reduce_scatter

// PLAN: "format": "zerosbp-plan",
// PLAN-NEXT: "version": 2,
// PLAN-NEXT: "function": "linear",
// PLAN-NEXT: "stage": 2,
// PLAN-NEXT: "world": 4,
// PLAN: "config": {
// PLAN: "instructions": [

// CONFIG: zero-compile: {{.*}}.json: unknown key 'zero_optimization.stag'; did you mean 'stage'?
// NOMODEL: zero-compile: no model: give a .mlir file or GPT-2 flags
// PRESET: zero-compile: unknown preset 'huge' (expected tiny, small, medium, large or xl)
// WORLD: zero-compile: zero-sbp-propagation: @linear is placed on 4 ranks but world=2
