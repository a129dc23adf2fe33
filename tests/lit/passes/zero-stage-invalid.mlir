// Variables captured split (not Broadcast) are refused by zero-stage at
// stages 1-3, naming the variable; the stage rewrite decides what is split.
// (At stage 0 a captured split is a model-parallel layout:
// zero-stage-tensor-parallel.mlir.)
// An update whose optimizer state is not a variable is refused too.
// RUN: split-file %s %t
// RUN: zero-opt %t/split.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage=stage=1 -verify-diagnostics
// RUN: zero-opt %t/split.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage=stage=2 -verify-diagnostics
// RUN: zero-opt %t/split.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage=stage=3 -verify-diagnostics
// RUN: zero-opt %t/state.mlir -zero-stage=stage=1 -verify-diagnostics
// RUN: zero-opt %t/state.mlir -zero-stage=stage=3 -verify-diagnostics
//
// The first line of the message and the exit status, from zero-opt and
// from zero-compile at each stage (no crash, no assertion):
// RUN: sh -c 'echo BEGIN; zero-opt %t/linear.mlir --zero-pipeline="stage=2 world=4" -o /dev/null 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=OPT
// RUN: sh -c 'echo BEGIN; zero-compile %t/linear.mlir --world=4 --stage=1 --report=none 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=COMPILE
// RUN: sh -c 'echo BEGIN; zero-compile %t/linear.mlir --world=4 --stage=2 --report=none 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=COMPILE
// RUN: sh -c 'echo BEGIN; zero-compile %t/linear.mlir --world=4 --stage=3 --report=none 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=COMPILE

// OPT: BEGIN
// OPT-NEXT: {{.*}}linear.mlir:6:8: error: zero-stage: param variable 'w' is captured [S(0)]; at stages 1-3 variables must be captured Broadcast (B on every axis): ZeRO splits them (a layout split for model parallelism trains at stage 0)
// OPT: exit 1
// COMPILE: BEGIN
// COMPILE-NEXT: zero-compile: zero-stage: param variable 'w' is captured [S(0)]; at stages 1-3 variables must be captured Broadcast (B on every axis): ZeRO splits them (a layout split for model parallelism trains at stage 0)
// COMPILE-NEXT: exit 1

//--- split.mlir
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @split_rows() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>
  // expected-error@+1 {{zero-stage: param variable 'w' is captured [S(0)]; at stages 1-3 variables must be captured Broadcast (B on every axis): ZeRO splits them (a layout split for model parallelism trains at stage 0)}}
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[S(0)], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<4x16xf32, #sbp.global<[S(0)], #p, param>>) -> tensor<8x4xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// On a 2-D hierarchy, a split on either axis is refused.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @split_columns_2d() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0), S(0)], #p, input>>
  %b = nn.variable "b" param : tensor<4xf32, #sbp.global<[B, B], #p, param>>
  // expected-error@+1 {{zero-stage: param variable 'w' is captured [B, S(1)]; at stages 1-3 variables must be captured Broadcast (B on every axis): ZeRO splits them (a layout split for model parallelism trains at stage 0)}}
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[B, S(1)], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0), S(0)], #p, input>>, tensor<4x16xf32, #sbp.global<[B, S(1)], #p, param>>) -> tensor<8x4xf32>
  %z = nn.bias_add %h, %b : (tensor<8x4xf32>, tensor<4xf32, #sbp.global<[B, B], #p, param>>) -> tensor<8x4xf32>
  %l = nn.reduce_mean %z {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

//--- state.mlir
// An update whose first moment is computed, not a variable: zero-stage
// cannot shard it (and must not build an update with fewer results).
#p = #sbp.placement<cpu, [0, 1]>
func.func @computed_state() -> tensor<f32, #sbp.global<[B], #p>> {
  %w = nn.variable "w" param : tensor<4xf32, #sbp.global<[B], #p, param>>
  %m = nn.fill 0.0 : tensor<4xf32, #sbp.global<[B], #p, opt_state>>
  %v = nn.variable "w.v" opt_state : tensor<4xf32, #sbp.global<[B], #p, opt_state>>
  %g = nn.fill 1.0 : tensor<4xf32, #sbp.global<[B], #p, grad>>
  %s = nn.step : tensor<i64, #sbp.global<[B], #p>>
  // expected-error@+1 {{'nn.adam' op zero-stage: operand 2 is not an opt_state variable; zero-stage expects zero-optimizer's output}}
  %nw, %nm, %nv = nn.adam %w, %g, %m, %v, %s {lr = 1.0e-03 : f64} : (tensor<4xf32, #sbp.global<[B], #p, param>>, tensor<4xf32, #sbp.global<[B], #p, grad>>, tensor<4xf32, #sbp.global<[B], #p, opt_state>>, tensor<4xf32, #sbp.global<[B], #p, opt_state>>, tensor<i64, #sbp.global<[B], #p>>) -> (tensor<4xf32, #sbp.global<[B], #p, param>>, tensor<4xf32, #sbp.global<[B], #p, opt_state>>, tensor<4xf32, #sbp.global<[B], #p, opt_state>>)
  nn.assign "w", %nw : tensor<4xf32, #sbp.global<[B], #p, param>>
  nn.assign "w.v", %nv : tensor<4xf32, #sbp.global<[B], #p, opt_state>>
  %l = nn.fill 0.0 : tensor<f32, #sbp.global<[B], #p>>
  return %l : tensor<f32, #sbp.global<[B], #p>>
}

//--- linear.mlir
// The issue's graph: a linear model whose weight is captured S(0).
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0)], #p, input>>
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[S(0)], #p, param>>
  %b = nn.variable "b" param : tensor<4xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<4x16xf32, #sbp.global<[S(0)], #p, param>>) -> tensor<8x4xf32>
  %z = nn.bias_add %h, %b : (tensor<8x4xf32>, tensor<4xf32, #sbp.global<[B], #p, param>>) -> tensor<8x4xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x4xf32>, tensor<8xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %l : tensor<f32>
}
