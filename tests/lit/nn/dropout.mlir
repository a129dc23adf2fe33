// RUN: split-file %s %t
// RUN: zero-opt %t/mlp.mlir | zero-opt | FileCheck %s --check-prefix=PRINT
// RUN: zero-opt %t/mlp.mlir -zero-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: zero-opt %t/mlp.mlir -zero-accumulate=steps=2 | FileCheck %s --check-prefix=ACCUM
// RUN: zero-opt %t/mlp.mlir --zero-pipeline='stage=2 world=4 optimizer=adam precision=bf16' -zero-partition | FileCheck %s --check-prefix=LOCAL
// RUN: zero-opt %t/grid.mlir --zero-pipeline='stage=1 world=4 optimizer=sgd' -zero-partition | FileCheck %s --check-prefix=GRID
// RUN: zero-compile %t/mlp.mlir --world=4 --stage=3 -o %t/mlp.zplan
// RUN: FileCheck %s --check-prefix=PLAN < %t/mlp.zplan

// nn.dropout (docs/compiler.md, "Dropout"): its mask is recomputed from the
// seed, the step, the stream, the micro-batch and global indices, so the
// backward is the same op on the result gradient; the pipeline keeps one
// nn.step, retypes the op under bf16, and zero-partition records where
// each rank's block lies.

//--- mlp.mlir
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32>
  %y = nn.input "y" : tensor<8xi64>
  %w1 = nn.variable "w1" param : tensor<5x6xf32>
  %w2 = nn.variable "w2" param : tensor<3x5xf32>
  %step = nn.step : tensor<i64>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x6xf32>, tensor<5x6xf32>) -> tensor<8x5xf32>
  %d = nn.dropout %h, %step {p = 0.25 : f64, seed = -1 : i64, stream = 3 : i64} : (tensor<8x5xf32>, tensor<i64>) -> tensor<8x5xf32>
  %r = nn.relu %d : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %z = nn.matmul %r, %w2 {transpose_rhs} : (tensor<8x5xf32>, tensor<3x5xf32>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// PRINT-LABEL: func.func @mlp
// PRINT: %[[STEP:.*]] = nn.step : tensor<i64>
// PRINT: nn.dropout %{{.*}}, %[[STEP]] {p = 2.500000e-01 : f64, seed = -1 : i64, stream = 3 : i64} : (tensor<8x5xf32>, tensor<i64>) -> tensor<8x5xf32>

// The gradient is dropout of the relu gradient, same attributes and step.
// GRAD-LABEL: func.func @mlp
// GRAD: %[[STEP:.*]] = nn.step : tensor<i64>
// GRAD: %[[H:.*]] = nn.matmul
// GRAD: %[[D:.*]] = nn.dropout %[[H]], %[[STEP]] {p = 2.500000e-01 : f64, seed = -1 : i64, stream = 3 : i64}
// GRAD: %[[DR:.*]] = nn.relu_grad %{{.*}}, %[[D]]
// GRAD-NEXT: %[[DH:.*]] = nn.dropout %[[DR]], %[[STEP]] {p = 2.500000e-01 : f64, seed = -1 : i64, stream = 3 : i64} : (tensor<8x5xf32>, tensor<i64>) -> tensor<8x5xf32>
// GRAD: nn.matmul %[[DH]], %{{.*}} {transpose_lhs}
// GRAD: nn.gradient "w1"

// Each micro-batch's copy draws its own mask.
// ACCUM-LABEL: func.func @mlp
// ACCUM: %[[STEP:.*]] = nn.step
// ACCUM: nn.dropout %{{.*}}, %[[STEP]] {micro_batch = 0 : i64, p = 2.500000e-01 : f64, seed = -1 : i64, stream = 3 : i64, zero.micro_batch = 0 : i64} : (tensor<4x5xf32>, tensor<i64>) -> tensor<4x5xf32>
// ACCUM: nn.dropout %{{.*}}, %[[STEP]] {micro_batch = 1 : i64, p = 2.500000e-01 : f64, seed = -1 : i64, stream = 3 : i64, zero.micro_batch = 1 : i64} : (tensor<4x5xf32>, tensor<i64>) -> tensor<4x5xf32>
// ACCUM-NOT: nn.dropout

// Adam reads the graph's step; both dropouts compute in bf16 on 2 of the 8
// rows, which start at row 2 r of the global 8x5 (split_dims: S(0)).
// LOCAL-LABEL: func.func @mlp
// LOCAL: %[[STEP:.*]] = nn.step : tensor<i64>
// LOCAL-NOT: nn.step
// LOCAL: nn.dropout %{{.*}}, %[[STEP]] {global_shape = array<i64: 8, 5>, p = 2.500000e-01 : f64, seed = -1 : i64, split_dims = array<i64: 0>, stream = 3 : i64} : (tensor<2x5xbf16>, tensor<i64>) -> tensor<2x5xbf16>
// LOCAL: nn.dropout %{{.*}}, %[[STEP]] {global_shape = array<i64: 8, 5>, p = 2.500000e-01 : f64, seed = -1 : i64, split_dims = array<i64: 0>, stream = 3 : i64} : (tensor<2x5xbf16>, tensor<i64>) -> tensor<2x5xbf16>
// LOCAL: nn.adam {{.*}}, %[[STEP]]

// The plan carries the attributes the runtime needs for the offsets.
// PLAN: "op": "nn.dropout",
// PLAN: "attrs": {
// PLAN-NEXT: "global_shape": [
// PLAN-NEXT: 8,
// PLAN-NEXT: 5
// PLAN-NEXT: ],
// PLAN-NEXT: "p": 0.25,
// PLAN-NEXT: "seed": -1,
// PLAN-NEXT: "split_dims": [
// PLAN-NEXT: 0
// PLAN-NEXT: ],
// PLAN-NEXT: "stream": 3
// PLAN-NEXT: },
// PLAN: "op": "nn.dropout",

//--- grid.mlir
// A 2x2 grid splitting the batch on both axes: split_dims names dim 0
// twice (nested splits).
#grid = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @grid() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0), S(0)], #grid, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0), S(0)], #grid, input>>
  %w = nn.variable "w" param : tensor<3x6xf32, #sbp.global<[B, B], #grid, param>>
  %step = nn.step : tensor<i64>
  %d = nn.dropout %x, %step {p = 0.5 : f64, seed = 3 : i64, stream = 1 : i64} : (tensor<8x6xf32, #sbp.global<[S(0), S(0)], #grid, input>>, tensor<i64>) -> tensor<8x6xf32>
  %z = nn.matmul %d, %w {transpose_rhs} : (tensor<8x6xf32>, tensor<3x6xf32, #sbp.global<[B, B], #grid, param>>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x3xf32>, tensor<8xi64, #sbp.global<[S(0), S(0)], #grid, input>>) -> tensor<f32>
  return %l : tensor<f32>
}

// GRID-LABEL: func.func @grid
// GRID: nn.dropout {{.*}} {global_shape = array<i64: 8, 6>, p = 5.000000e-01 : f64, seed = 3 : i64, split_dims = array<i64: 0, 0>, stream = 1 : i64} : (tensor<2x6xf32>, tensor<i64>) -> tensor<2x6xf32>
