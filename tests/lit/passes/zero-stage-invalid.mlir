// Variables captured split (tensor parallelism) are partitioned by
// zero-stage at stages 1-3 over the axes that do not split them
// (zero-stage-tensor-parallel.mlir); it refuses, naming the variable, a
// split on more than one axis, a split that does not divide evenly, and a
// split together with MiCS or hpZ, which make their own 2-D placement.
// An update whose optimizer state is not a variable is refused too.
// RUN: split-file %s %t
// RUN: zero-opt %t/split.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage=stage=1 -verify-diagnostics
// RUN: zero-opt %t/split.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage=stage=2 -verify-diagnostics
// RUN: zero-opt %t/split.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage=stage=3 -verify-diagnostics
// RUN: zero-opt %t/grouped.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage="stage=1 mics-shard-size=2" -verify-diagnostics
// RUN: zero-opt %t/grouped.mlir -split-input-file -zero-optimizer=optimizer=adam -zero-sbp-propagation -zero-stage="stage=3 hpz-partition-size=2" -verify-diagnostics
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
// OPT-NEXT: {{.*}}linear.mlir:6:8: error: zero-stage: param variable 'w' is captured [S(0)]; its dim 0 (6) does not divide by the 4 ranks of axis 0, and ZeRO over the other axes needs equal model parts
// OPT: exit 1
// COMPILE: BEGIN
// COMPILE-NEXT: zero-compile: zero-stage: param variable 'w' is captured [S(0)]; its dim 0 (6) does not divide by the 4 ranks of axis 0, and ZeRO over the other axes needs equal model parts
// COMPILE-NEXT: exit 1

//--- split.mlir
// Split on both axes of a 2-D placement.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @split_both_axes() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0), B], #p, input>>
  // expected-error@+1 {{zero-stage: param variable 'w' is captured [S(0), S(1)]; at stages 1-3 a variable is Broadcast, or split on one model axis (tensor parallelism) and Broadcast on the others}}
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[S(0), S(1)], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0), B], #p, input>>, tensor<4x16xf32, #sbp.global<[S(0), S(1)], #p, param>>) -> tensor<8x4xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A split that leaves the model parts unequal.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [1, 4]>
func.func @uneven() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0), B], #p, input>>
  // expected-error@+1 {{zero-stage: param variable 'w' is captured [B, S(1)]; its dim 1 (6) does not divide by the 4 ranks of axis 1, and ZeRO over the other axes needs equal model parts}}
  %w = nn.variable "w" param : tensor<16x6xf32, #sbp.global<[B, S(1)], #p, param>>
  %h = nn.matmul %x, %w : (tensor<8x16xf32, #sbp.global<[S(0), B], #p, input>>, tensor<16x6xf32, #sbp.global<[B, S(1)], #p, param>>) -> tensor<8x6xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

//--- grouped.mlir
// MiCS and hpZ group the ranks of a 2-D placement themselves.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @grouped() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0), B], #p, input>>
  // expected-error@+1 {{zero-stage: param variable 'w' is captured [B, S(0)]; MiCS and hpZ make their own 2-D placement and do not compose with a model axis (use mics-shard-size=0 and hpz-partition-size=0)}}
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[B, S(0)], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0), B], #p, input>>, tensor<4x16xf32, #sbp.global<[B, S(0)], #p, param>>) -> tensor<8x4xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
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
// A linear model whose weight is split S(0) into unequal parts.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0)], #p, input>>
  %w = nn.variable "w" param : tensor<6x16xf32, #sbp.global<[S(0)], #p, param>>
  %b = nn.variable "b" param : tensor<6xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<6x16xf32, #sbp.global<[S(0)], #p, param>>) -> tensor<8x6xf32>
  %z = nn.bias_add %h, %b : (tensor<8x6xf32>, tensor<6xf32, #sbp.global<[B], #p, param>>) -> tensor<8x6xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x6xf32>, tensor<8xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %l : tensor<f32>
}
