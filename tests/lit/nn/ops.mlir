// RUN: zero-opt %s -split-input-file | FileCheck %s
// RUN: zero-opt %s -split-input-file | zero-opt -split-input-file | FileCheck %s
// RUN: zero-opt %s -split-input-file --mlir-print-op-generic | zero-opt -split-input-file | FileCheck %s

// Each section has a plain case (no encodings) and an annotated case on four
// CPU ranks, whose SBP signature is one of the op's legal ones
// (dialects/nn/IR/NNSbpRules.cpp). Result types are written out and checked
// against the inferred ones, so the CHECK lines show the inferred shapes.

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sources()
// CHECK: nn.variable "fc.weight" param init = normal(0.02) : tensor<32x16xf32>
// CHECK: nn.variable "fc.bias" param : tensor<32xf32>
// CHECK: nn.variable "fc.weight.grad" grad : tensor<32x16xf32>
// CHECK: nn.variable "fc.weight.master" master init = uniform(0.5) : tensor<32x16xf32>
// CHECK: nn.variable "fc.weight.exp_avg" opt_state : tensor<32x16xf32>
// CHECK: nn.variable "ln.gamma" param init = ones : tensor<16xf32>
// CHECK: nn.variable "scaled" param init = zeros(1.0) : tensor<4xf32>
// CHECK: nn.variable "tiny" param init = normal(1.0e-05) : tensor<4xbf16>
// CHECK: nn.input "x" : tensor<8x16xf32>
// CHECK: nn.input "labels" : tensor<8xi64>
// CHECK: nn.fill 1.000000e+00 : tensor<8x16xf16>
// CHECK: nn.fill -2.500000e-01 : tensor<f32>
// CHECK: nn.step : tensor<i64>
func.func @sources() {
  %w = nn.variable "fc.weight" param init = normal(0.02) : tensor<32x16xf32>
  // `init = zeros` is the default and is not printed.
  %b = nn.variable "fc.bias" param init = zeros : tensor<32xf32>
  %g = nn.variable "fc.weight.grad" grad : tensor<32x16xf32>
  %m = nn.variable "fc.weight.master" master init = uniform(0.5) : tensor<32x16xf32>
  %s = nn.variable "fc.weight.exp_avg" opt_state : tensor<32x16xf32>
  %gamma = nn.variable "ln.gamma" param init = ones : tensor<16xf32>
  // A scale without a fractional part still prints as a float literal.
  %c = nn.variable "scaled" param init = zeros(1.0) : tensor<4xf32>
  %t = nn.variable "tiny" param init = normal(1.0e-5) : tensor<4xbf16>
  %x = nn.input "x" : tensor<8x16xf32>
  %l = nn.input "labels" : tensor<8xi64>
  %f = nn.fill 1.0 : tensor<8x16xf16>
  %z = nn.fill -0.25 : tensor<f32>
  %step = nn.step : tensor<i64>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK-LABEL: func.func @sources_annotated()
// CHECK: nn.variable "w" param init = normal(0.02) : tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, param>>
// CHECK: nn.variable "w.grad" grad : tensor<32x16xf32, #sbp.global<[S(1)], #cpus4, grad>>
// CHECK: nn.variable "w.master" master : tensor<32x16xf32, #sbp.global<[B], #cpus4, master>>
// CHECK: nn.variable "w.exp_avg" opt_state : tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, opt_state>>
// CHECK: nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #cpus4, input>>
// CHECK: nn.fill 0.000000e+00 : tensor<8x16xf32, #sbp.global<[B], #cpus4>>
// CHECK: nn.step : tensor<i64, #sbp.global<[B], #cpus4>>
func.func @sources_annotated() {
  %w = nn.variable "w" param init = normal(0.02)
      : tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>
  %g = nn.variable "w.grad" grad
      : tensor<32x16xf32, #sbp.global<[S(1)], #p, grad>>
  %m = nn.variable "w.master" master
      : tensor<32x16xf32, #sbp.global<[B], #p, master>>
  %s = nn.variable "w.exp_avg" opt_state
      : tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>
  %f = nn.fill 0.0 : tensor<8x16xf32, #sbp.global<[B], #p>>
  %step = nn.step : tensor<i64, #sbp.global<[B], #p>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul(
func.func @matmul(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>,
                  %a: tensor<16x8xf32>, %b: tensor<16x32xf32>) {
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  %0 = nn.matmul %a, %x : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  // A linear layer: the weight is (out, in).
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  // The weight gradient: dy^T x.
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<16x8xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %2 = nn.matmul %a, %b {transpose_lhs} : (tensor<16x8xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_lhs, transpose_rhs} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %3 = nn.matmul %a, %w {transpose_lhs, transpose_rhs} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return
}

// CHECK-LABEL: func.func @batch_matmul(
func.func @batch_matmul(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x4x8x16xbf16>,
                        %x: tensor<3x8x16xf32>, %y: tensor<3x16x4xf32>) {
  // CHECK: nn.batch_matmul %{{.*}}, %{{.*}} : (tensor<3x8x16xf32>, tensor<3x16x4xf32>) -> tensor<3x8x4xf32>
  %0 = nn.batch_matmul %x, %y : (tensor<3x8x16xf32>, tensor<3x16x4xf32>) -> tensor<3x8x4xf32>
  // Attention scores: q k^T.
  // CHECK: nn.batch_matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x8xbf16>
  %1 = nn.batch_matmul %q, %k {transpose_rhs} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x8xbf16>
  // CHECK: nn.batch_matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x16x16xbf16>
  %2 = nn.batch_matmul %q, %k {transpose_lhs} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x16x16xbf16>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK-LABEL: func.func @matmul_annotated(
func.func @matmul_annotated(
    %x_rows: tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
    %x_cols: tensor<8x16xf32, #sbp.global<[S(1)], #p>>,
    %x_b: tensor<8x16xf32, #sbp.global<[B], #p>>,
    %w_b: tensor<32x16xf32, #sbp.global<[B], #p, param>>,
    %w_rows: tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>,
    %w_cols: tensor<32x16xf32, #sbp.global<[S(1)], #p, param>>) {
  // Data parallel: (S(0), B) -> S(0).
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<32x16xf32, #sbp.global<[B], #cpus4, param>>) -> tensor<8x32xf32, #sbp.global<[S(0)], #cpus4>>
  %0 = nn.matmul %x_rows, %w_b {transpose_rhs}
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<32x16xf32, #sbp.global<[B], #p, param>>)
      -> tensor<8x32xf32, #sbp.global<[S(0)], #p>>
  // Column parallel: the transposed weight's rows are the output columns.
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[B], #cpus4>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, param>>) -> tensor<8x32xf32, #sbp.global<[S(1)], #cpus4>>
  %1 = nn.matmul %x_b, %w_rows {transpose_rhs}
      : (tensor<8x16xf32, #sbp.global<[B], #p>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>)
      -> tensor<8x32xf32, #sbp.global<[S(1)], #p>>
  // Row parallel: splitting the contraction gives a partial sum.
  // CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>, tensor<32x16xf32, #sbp.global<[S(1)], #cpus4, param>>) -> tensor<8x32xf32, #sbp.global<[P(sum)], #cpus4>>
  %2 = nn.matmul %x_cols, %w_cols {transpose_rhs}
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>, tensor<32x16xf32, #sbp.global<[S(1)], #p, param>>)
      -> tensor<8x32xf32, #sbp.global<[P(sum)], #p>>
  return
}

// CHECK-LABEL: func.func @batch_matmul_annotated(
// CHECK: nn.batch_matmul %{{.*}}, %{{.*}} : (tensor<4x8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<4x16x8xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<4x8x8xf32, #sbp.global<[S(0)], #cpus4>>
func.func @batch_matmul_annotated(
    %a: tensor<4x8x16xf32, #sbp.global<[S(0)], #p>>,
    %b: tensor<4x16x8xf32, #sbp.global<[S(0)], #p>>) {
  %0 = nn.batch_matmul %a, %b
      : (tensor<4x8x16xf32, #sbp.global<[S(0)], #p>>, tensor<4x16x8xf32, #sbp.global<[S(0)], #p>>)
      -> tensor<4x8x8xf32, #sbp.global<[S(0)], #p>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary(
func.func @binary(%x: tensor<8x16xf32>, %row: tensor<16xf32>,
                  %col: tensor<8x1xf32>, %t: tensor<4x1x16xf32>) {
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %0 = nn.add %x, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // A missing leading axis broadcasts.
  // CHECK: nn.sub %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %1 = nn.sub %x, %row : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  // A size-1 axis broadcasts.
  // CHECK: nn.mul %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %2 = nn.mul %x, %col : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  // Both operands stretch.
  // CHECK: nn.div %{{.*}}, %{{.*}} : (tensor<4x1x16xf32>, tensor<8x1xf32>) -> tensor<4x8x16xf32>
  %3 = nn.div %t, %col : (tensor<4x1x16xf32>, tensor<8x1xf32>) -> tensor<4x8x16xf32>
  return
}

// CHECK-LABEL: func.func @unary(
func.func @unary(%x: tensor<8x16xf32>, %h: tensor<8x16xbf16>, %bias: tensor<16xf32>) {
  // CHECK: nn.bias_add %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %0 = nn.bias_add %x, %bias : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.relu %{{.*}} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %1 = nn.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.gelu %{{.*}} : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %2 = nn.gelu %h : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
  // CHECK: nn.tanh %{{.*}} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %3 = nn.tanh %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.scale %{{.*}} {factor = 1.250000e-01 : f64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %4 = nn.scale %x {factor = 0.125} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.cast %{{.*}} : tensor<8x16xf32> to tensor<8x16xf16>
  %5 = nn.cast %x : tensor<8x16xf32> to tensor<8x16xf16>
  // CHECK: nn.cast %{{.*}} : tensor<8x16xf32> to tensor<8x16xbf16>
  %6 = nn.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
  // CHECK: nn.cast %{{.*}} : tensor<8x16xbf16> to tensor<8x16xf32>
  %7 = nn.cast %h : tensor<8x16xbf16> to tensor<8x16xf32>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK-LABEL: func.func @elementwise_annotated(
func.func @elementwise_annotated(
    %x: tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
    %x_cols: tensor<8x16xf32, #sbp.global<[S(1)], #p>>,
    %partial: tensor<8x16xf32, #sbp.global<[P(sum)], #p>>,
    %pmax: tensor<8x16xf32, #sbp.global<[P(max)], #p>>,
    %row: tensor<16xf32, #sbp.global<[B], #p, param>>,
    %row_split: tensor<16xf32, #sbp.global<[S(0)], #p, param>>,
    %b: tensor<8x16xf32, #sbp.global<[B], #p>>) {
  // The broadcast operand is B where it stretches.
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<16xf32, #sbp.global<[B], #cpus4, param>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>
  %0 = nn.add %x, %row
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[B], #p, param>>)
      -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  // ... and split along its own matching axis where it does not.
  // CHECK: nn.sub %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>, tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>) -> tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>
  %1 = nn.sub %x_cols, %row_split
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>, tensor<16xf32, #sbp.global<[S(0)], #p, param>>)
      -> tensor<8x16xf32, #sbp.global<[S(1)], #p>>
  // Partial sums add; a partial times a broadcast stays partial.
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>, tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>
  %2 = nn.add %partial, %partial
      : (tensor<8x16xf32, #sbp.global<[P(sum)], #p>>, tensor<8x16xf32, #sbp.global<[P(sum)], #p>>)
      -> tensor<8x16xf32, #sbp.global<[P(sum)], #p>>
  // CHECK: nn.mul %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[B], #cpus4>>, tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>
  %3 = nn.mul %b, %partial
      : (tensor<8x16xf32, #sbp.global<[B], #p>>, tensor<8x16xf32, #sbp.global<[P(sum)], #p>>)
      -> tensor<8x16xf32, #sbp.global<[P(sum)], #p>>
  // CHECK: nn.div %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>, tensor<8x16xf32, #sbp.global<[B], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>
  %4 = nn.div %partial, %b
      : (tensor<8x16xf32, #sbp.global<[P(sum)], #p>>, tensor<8x16xf32, #sbp.global<[B], #p>>)
      -> tensor<8x16xf32, #sbp.global<[P(sum)], #p>>
  // CHECK: nn.bias_add %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<16xf32, #sbp.global<[B], #cpus4, param>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>
  %5 = nn.bias_add %x, %row
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[B], #p, param>>)
      -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  // CHECK: nn.bias_add %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>, tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>) -> tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>
  %6 = nn.bias_add %x_cols, %row_split
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>, tensor<16xf32, #sbp.global<[S(0)], #p, param>>)
      -> tensor<8x16xf32, #sbp.global<[S(1)], #p>>
  // CHECK: nn.gelu %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>
  %7 = nn.gelu %x_cols
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>) -> tensor<8x16xf32, #sbp.global<[S(1)], #p>>
  // CHECK: nn.relu %{{.*}} : (tensor<8x16xf32, #sbp.global<[B], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[B], #cpus4>>
  %8 = nn.relu %b
      : (tensor<8x16xf32, #sbp.global<[B], #p>>) -> tensor<8x16xf32, #sbp.global<[B], #p>>
  // CHECK: nn.tanh %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>
  %9 = nn.tanh %x
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  // Scaling is linear: a partial sum stays one.
  // CHECK: nn.scale %{{.*}} {factor = 2.500000e-01 : f64} : (tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>
  %10 = nn.scale %partial {factor = 0.25}
      : (tensor<8x16xf32, #sbp.global<[P(sum)], #p>>) -> tensor<8x16xf32, #sbp.global<[P(sum)], #p>>
  // A cast moves data only: it keeps any SBP, P(max) included.
  // CHECK: nn.cast %{{.*}} : tensor<8x16xf32, #sbp.global<[P(max)], #cpus4>> to tensor<8x16xbf16, #sbp.global<[P(max)], #cpus4>>
  %11 = nn.cast %pmax : tensor<8x16xf32, #sbp.global<[P(max)], #p>>
                     to tensor<8x16xbf16, #sbp.global<[P(max)], #p>>
  // CHECK: nn.cast %{{.*}} : tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>> to tensor<8x16xf16, #sbp.global<[S(0)], #cpus4>>
  %12 = nn.cast %x : tensor<8x16xf32, #sbp.global<[S(0)], #p>>
                  to tensor<8x16xf16, #sbp.global<[S(0)], #p>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, loss
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @norm_softmax_loss(
func.func @norm_softmax_loss(%x: tensor<2x8x16xf32>, %gamma: tensor<16xf32>,
                             %scores: tensor<2x4x8x8xf32>,
                             %table: tensor<100x16xf32>, %ids: tensor<2x8xi32>,
                             %logits: tensor<2x8x100xf32>, %labels: tensor<2x8xi64>) {
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %0 = nn.layer_norm %x, %gamma, %gamma
      : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %1 = nn.layer_norm %x, %gamma, %gamma {epsilon = 1.0e-3}
      : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // The default axis (-1) is not printed.
  // CHECK: nn.softmax %{{.*}} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %2 = nn.softmax %x {axis = -1} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: nn.softmax %{{.*}} {axis = 1 : i64} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %3 = nn.softmax %x {axis = 1} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: nn.softmax %{{.*}} {causal} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %4 = nn.softmax %scores {causal} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  // The result is the ids' shape plus the embedding dim.
  // CHECK: nn.embedding %{{.*}}, %{{.*}} : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  %5 = nn.embedding %table, %ids : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  // The loss is a 0-D mean.
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} : (tensor<2x8x100xf32>, tensor<2x8xi64>) -> tensor<f32>
  %6 = nn.cross_entropy %logits, %labels : (tensor<2x8x100xf32>, tensor<2x8xi64>) -> tensor<f32>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK-LABEL: func.func @norm_softmax_loss_annotated(
func.func @norm_softmax_loss_annotated(
    %x: tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
    %gamma: tensor<16xf32, #sbp.global<[B], #p, param>>,
    %scores: tensor<4x8x8xf32, #sbp.global<[S(0)], #p>>,
    %table: tensor<100x16xf32, #sbp.global<[B], #p, param>>,
    %table_rows: tensor<100x16xf32, #sbp.global<[S(0)], #p, param>>,
    %ids: tensor<8xi64, #sbp.global<[S(0)], #p, input>>,
    %ids_b: tensor<8xi64, #sbp.global<[B], #p, input>>,
    %logits: tensor<8x100xf32, #sbp.global<[S(0)], #p>>) {
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<16xf32, #sbp.global<[B], #cpus4, param>>, tensor<16xf32, #sbp.global<[B], #cpus4, param>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>
  %0 = nn.layer_norm %x, %gamma, %gamma
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[B], #p, param>>,
         tensor<16xf32, #sbp.global<[B], #p, param>>)
      -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  // A causal softmax splits on a batch axis only.
  // CHECK: nn.softmax %{{.*}} {causal} : (tensor<4x8x8xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<4x8x8xf32, #sbp.global<[S(0)], #cpus4>>
  %1 = nn.softmax %scores {causal}
      : (tensor<4x8x8xf32, #sbp.global<[S(0)], #p>>) -> tensor<4x8x8xf32, #sbp.global<[S(0)], #p>>
  // CHECK: nn.embedding %{{.*}}, %{{.*}} : (tensor<100x16xf32, #sbp.global<[B], #cpus4, param>>, tensor<8xi64, #sbp.global<[S(0)], #cpus4, input>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>
  %2 = nn.embedding %table, %ids
      : (tensor<100x16xf32, #sbp.global<[B], #p, param>>, tensor<8xi64, #sbp.global<[S(0)], #p, input>>)
      -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  // Vocab parallel: each rank looks up its rows, the sum is the result.
  // CHECK: nn.embedding %{{.*}}, %{{.*}} : (tensor<100x16xf32, #sbp.global<[S(0)], #cpus4, param>>, tensor<8xi64, #sbp.global<[B], #cpus4, input>>) -> tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>
  %3 = nn.embedding %table_rows, %ids_b
      : (tensor<100x16xf32, #sbp.global<[S(0)], #p, param>>, tensor<8xi64, #sbp.global<[B], #p, input>>)
      -> tensor<8x16xf32, #sbp.global<[P(sum)], #p>>
  // A mean over an S(0) batch is a partial sum of per-rank means.
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} : (tensor<8x100xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8xi64, #sbp.global<[S(0)], #cpus4, input>>) -> tensor<f32, #sbp.global<[P(sum)], #cpus4>>
  %4 = nn.cross_entropy %logits, %ids
      : (tensor<8x100xf32, #sbp.global<[S(0)], #p>>, tensor<8xi64, #sbp.global<[S(0)], #p, input>>)
      -> tensor<f32, #sbp.global<[P(sum)], #p>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @shapes(
func.func @shapes(%x: tensor<8x16xf32>, %y: tensor<8x4xf32>, %i: tensor<8x16xi64>) {
  // CHECK: nn.reshape %{{.*}} : tensor<8x16xf32> to tensor<8x4x4xf32>
  %0 = nn.reshape %x : tensor<8x16xf32> to tensor<8x4x4xf32>
  // Data movement works on any element type.
  // CHECK: nn.reshape %{{.*}} : tensor<8x16xi64> to tensor<128xi64>
  %1 = nn.reshape %i : tensor<8x16xi64> to tensor<128xi64>
  // CHECK: nn.transpose %{{.*}} {permutation = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %2 = nn.transpose %x {permutation = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  // CHECK: nn.slice %{{.*}} {offsets = array<i64: 2, 0>, sizes = array<i64: 4, 16>} : (tensor<8x16xf32>) -> tensor<4x16xf32>
  %3 = nn.slice %x {offsets = array<i64: 2, 0>, sizes = array<i64: 4, 16>}
      : (tensor<8x16xf32>) -> tensor<4x16xf32>
  // Rows 1, 3, 5, 7 and columns 0, 3, 6, 9, 12, 15.
  // CHECK: nn.slice %{{.*}} {offsets = array<i64: 1, 0>, sizes = array<i64: 4, 6>, strides = array<i64: 2, 3>} : (tensor<8x16xf32>) -> tensor<4x6xf32>
  %4 = nn.slice %x {offsets = array<i64: 1, 0>, sizes = array<i64: 4, 6>, strides = array<i64: 2, 3>}
      : (tensor<8x16xf32>) -> tensor<4x6xf32>
  // CHECK: %{{.*}}:3 = nn.split %{{.*}} {axis = 1 : i64, sizes = array<i64: 4, 4, 8>} : (tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>)
  %5:3 = nn.split %x {axis = 1, sizes = array<i64: 4, 4, 8>}
      : (tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>)
  // CHECK: nn.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x16xf32>, tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<8x36xf32>
  %6 = nn.concat %x, %y, %x {axis = 1}
      : (tensor<8x16xf32>, tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<8x36xf32>
  // CHECK: nn.reduce_sum %{{.*}} {axes = array<i64: 0>} : (tensor<8x16xf32>) -> tensor<16xf32>
  %7 = nn.reduce_sum %x {axes = array<i64: 0>} : (tensor<8x16xf32>) -> tensor<16xf32>
  // CHECK: nn.reduce_sum %{{.*}} {axes = array<i64: 0, 1>} : (tensor<8x16xf32>) -> tensor<f32>
  %8 = nn.reduce_sum %x {axes = array<i64: 0, 1>} : (tensor<8x16xf32>) -> tensor<f32>
  // CHECK: nn.reduce_mean %{{.*}} {axes = array<i64: 1>, keepdim} : (tensor<8x16xf32>) -> tensor<8x1xf32>
  %9 = nn.reduce_mean %x {axes = array<i64: 1>, keepdim} : (tensor<8x16xf32>) -> tensor<8x1xf32>
  // CHECK: nn.reduce_mean %{{.*}} {axes = array<i64: 1>} : (tensor<8x16xf32>) -> tensor<8xf32>
  %10 = nn.reduce_mean %x {axes = array<i64: 1>} : (tensor<8x16xf32>) -> tensor<8xf32>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK-LABEL: func.func @shapes_annotated(
func.func @shapes_annotated(
    %x: tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
    %y: tensor<8x4xf32, #sbp.global<[S(0)], #p>>,
    %cols: tensor<8x16xf32, #sbp.global<[S(1)], #p>>,
    %pmax: tensor<8x16xf32, #sbp.global<[P(max)], #p>>) {
  // The split axis keeps its row-major position.
  // CHECK: nn.reshape %{{.*}} : tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>> to tensor<8x4x4xf32, #sbp.global<[S(0)], #cpus4>>
  %0 = nn.reshape %x : tensor<8x16xf32, #sbp.global<[S(0)], #p>>
                    to tensor<8x4x4xf32, #sbp.global<[S(0)], #p>>
  // CHECK: nn.reshape %{{.*}} : tensor<8x16xf32, #sbp.global<[P(max)], #cpus4>> to tensor<128xf32, #sbp.global<[P(max)], #cpus4>>
  %1 = nn.reshape %pmax : tensor<8x16xf32, #sbp.global<[P(max)], #p>>
                       to tensor<128xf32, #sbp.global<[P(max)], #p>>
  // CHECK: nn.transpose %{{.*}} {permutation = array<i64: 1, 0>} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<16x8xf32, #sbp.global<[S(1)], #cpus4>>
  %2 = nn.transpose %x {permutation = array<i64: 1, 0>}
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>) -> tensor<16x8xf32, #sbp.global<[S(1)], #p>>
  // Axes at the same row-major position that both divide by the ranks
  // keep the split whatever their sizes: 8 rows of 16 as 4 rows of 32.
  // CHECK: nn.reshape %{{.*}} : tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>> to tensor<4x32xf32, #sbp.global<[S(0)], #cpus4>>
  %r = nn.reshape %x : tensor<8x16xf32, #sbp.global<[S(0)], #p>>
                    to tensor<4x32xf32, #sbp.global<[S(0)], #p>>
  // A slice keeps the split of an axis it takes whole.
  // CHECK: nn.slice %{{.*}} {offsets = array<i64: 0, 4>, sizes = array<i64: 8, 8>} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<8x8xf32, #sbp.global<[S(0)], #cpus4>>
  %3 = nn.slice %x {offsets = array<i64: 0, 4>, sizes = array<i64: 8, 8>}
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>) -> tensor<8x8xf32, #sbp.global<[S(0)], #p>>
  // CHECK: nn.split %{{.*}} {axis = 1 : i64, sizes = array<i64: 8, 8>} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>) -> (tensor<8x8xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8x8xf32, #sbp.global<[S(0)], #cpus4>>)
  %4:2 = nn.split %x {axis = 1, sizes = array<i64: 8, 8>}
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>)
      -> (tensor<8x8xf32, #sbp.global<[S(0)], #p>>, tensor<8x8xf32, #sbp.global<[S(0)], #p>>)
  // CHECK: nn.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8x4xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<8x20xf32, #sbp.global<[S(0)], #cpus4>>
  %5 = nn.concat %x, %y {axis = 1}
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<8x4xf32, #sbp.global<[S(0)], #p>>)
      -> tensor<8x20xf32, #sbp.global<[S(0)], #p>>
  // Reducing the split axis gives a partial sum.
  // CHECK: nn.reduce_sum %{{.*}} {axes = array<i64: 1>} : (tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>) -> tensor<8xf32, #sbp.global<[P(sum)], #cpus4>>
  %6 = nn.reduce_sum %cols {axes = array<i64: 1>}
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>) -> tensor<8xf32, #sbp.global<[P(sum)], #p>>
  // Other splits are renumbered when reduced axes are dropped.
  // CHECK: nn.reduce_mean %{{.*}} {axes = array<i64: 0>} : (tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>) -> tensor<16xf32, #sbp.global<[S(0)], #cpus4>>
  %7 = nn.reduce_mean %cols {axes = array<i64: 0>}
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>) -> tensor<16xf32, #sbp.global<[S(0)], #p>>
  // ... and kept with keepdim.
  // CHECK: nn.reduce_mean %{{.*}} {axes = array<i64: 0>, keepdim} : (tensor<8x16xf32, #sbp.global<[S(1)], #cpus4>>) -> tensor<1x16xf32, #sbp.global<[S(1)], #cpus4>>
  %8 = nn.reduce_mean %cols {axes = array<i64: 0>, keepdim}
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>) -> tensor<1x16xf32, #sbp.global<[S(1)], #p>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @grads(
func.func @grads(%dy: tensor<8x16xf32>, %x: tensor<8x16xf32>, %gamma: tensor<16xf32>,
                 %dloss: tensor<f32>, %logits: tensor<8x100xf32>, %labels: tensor<8xi64>,
                 %ids: tensor<2x4xi32>, %demb: tensor<2x4x16xf32>) {
  // CHECK: nn.relu_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %0 = nn.relu_grad %dy, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %1 = nn.gelu_grad %dy, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.tanh_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = nn.tanh_grad %dy, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // Input, gamma and beta gradients.
  // CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %3:3 = nn.layer_norm_grad %dy, %x, %gamma
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: nn.softmax_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %4 = nn.softmax_grad %dy, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.softmax_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %5 = nn.softmax_grad %dy, %x {axis = 0} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<8x100xf32>, tensor<8xi64>) -> tensor<8x100xf32>
  %6 = nn.cross_entropy_grad %dloss, %logits, %labels
      : (tensor<f32>, tensor<8x100xf32>, tensor<8xi64>) -> tensor<8x100xf32>
  // The table gradient is (vocab_size, dim).
  // CHECK: nn.embedding_grad %{{.*}}, %{{.*}} {vocab_size = 100 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<100x16xf32>
  %7 = nn.embedding_grad %demb, %ids {vocab_size = 100}
      : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<100x16xf32>
  return
}

// CHECK-LABEL: func.func @causal_softmax_grad(
// CHECK: nn.softmax_grad %{{.*}}, %{{.*}} {causal} : (tensor<2x8x8xf16>, tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
func.func @causal_softmax_grad(%dy: tensor<2x8x8xf16>, %y: tensor<2x8x8xf16>) {
  %0 = nn.softmax_grad %dy, %y {causal} : (tensor<2x8x8xf16>, tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK-LABEL: func.func @grads_annotated(
func.func @grads_annotated(
    %dy: tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
    %x: tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
    %dy_partial: tensor<8x16xf32, #sbp.global<[P(sum)], #p>>,
    %x_b: tensor<8x16xf32, #sbp.global<[B], #p>>,
    %gamma: tensor<16xf32, #sbp.global<[B], #p, param>>,
    %dloss: tensor<f32, #sbp.global<[B], #p>>,
    %logits: tensor<8x100xf32, #sbp.global<[S(0)], #p>>,
    %labels: tensor<8xi64, #sbp.global<[S(0)], #p, input>>,
    %demb: tensor<8x16xf32, #sbp.global<[S(0)], #p>>) {
  // CHECK: nn.relu_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>
  %0 = nn.relu_grad %dy, %x
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<8x16xf32, #sbp.global<[S(0)], #p>>)
      -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  // Linear in dy: a partial dy gives a partial result.
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>, tensor<8x16xf32, #sbp.global<[B], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[P(sum)], #cpus4>>
  %1 = nn.gelu_grad %dy_partial, %x_b
      : (tensor<8x16xf32, #sbp.global<[P(sum)], #p>>, tensor<8x16xf32, #sbp.global<[B], #p>>)
      -> tensor<8x16xf32, #sbp.global<[P(sum)], #p>>
  // CHECK: nn.tanh_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[B], #cpus4>>, tensor<8x16xf32, #sbp.global<[B], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[B], #cpus4>>
  %2 = nn.tanh_grad %x_b, %x_b
      : (tensor<8x16xf32, #sbp.global<[B], #p>>, tensor<8x16xf32, #sbp.global<[B], #p>>)
      -> tensor<8x16xf32, #sbp.global<[B], #p>>
  // A batch split gives partial gamma and beta gradients.
  // CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<16xf32, #sbp.global<[B], #cpus4, param>>) -> (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<16xf32, #sbp.global<[P(sum)], #cpus4, grad>>, tensor<16xf32, #sbp.global<[P(sum)], #cpus4, grad>>)
  %3:3 = nn.layer_norm_grad %dy, %x, %gamma
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
         tensor<16xf32, #sbp.global<[B], #p, param>>)
      -> (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[P(sum)], #p, grad>>,
          tensor<16xf32, #sbp.global<[P(sum)], #p, grad>>)
  // CHECK: nn.softmax_grad %{{.*}}, %{{.*}} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>
  %4 = nn.softmax_grad %dy, %x
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<8x16xf32, #sbp.global<[S(0)], #p>>)
      -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  // CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32, #sbp.global<[B], #cpus4>>, tensor<8x100xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8xi64, #sbp.global<[S(0)], #cpus4, input>>) -> tensor<8x100xf32, #sbp.global<[S(0)], #cpus4>>
  %5 = nn.cross_entropy_grad %dloss, %logits, %labels
      : (tensor<f32, #sbp.global<[B], #p>>, tensor<8x100xf32, #sbp.global<[S(0)], #p>>,
         tensor<8xi64, #sbp.global<[S(0)], #p, input>>)
      -> tensor<8x100xf32, #sbp.global<[S(0)], #p>>
  // Rows of a batch split scatter into a partial table gradient.
  // CHECK: nn.embedding_grad %{{.*}}, %{{.*}} {vocab_size = 100 : i64} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8xi64, #sbp.global<[S(0)], #cpus4, input>>) -> tensor<100x16xf32, #sbp.global<[P(sum)], #cpus4, grad>>
  %6 = nn.embedding_grad %demb, %labels {vocab_size = 100}
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<8xi64, #sbp.global<[S(0)], #p, input>>)
      -> tensor<100x16xf32, #sbp.global<[P(sum)], #p, grad>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @optimizers(
func.func @optimizers(%p: tensor<32x16xf32>, %g: tensor<32x16xf32>,
                      %m: tensor<32x16xf32>, %v: tensor<32x16xf32>, %step: tensor<i64>) {
  // CHECK: nn.sgd %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64} : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
  %0 = nn.sgd %p, %g {lr = 0.1} : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
  // Default betas, eps and weight decay are not printed.
  // CHECK: nn.adam %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-03 : f64} : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<i64>) -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>)
  %1:3 = nn.adam %p, %g, %m, %v, %step {lr = 1.0e-3}
      : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<i64>)
      -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>)
  // CHECK: nn.adam {{.*}} {beta1 = 5.000000e-01 : f64, beta2 = 7.500000e-01 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.250000e-01 : f64}
  %2:3 = nn.adam %p, %g, %m, %v, %step {lr = 1.0e-3, beta1 = 0.5, beta2 = 0.75, weight_decay = 0.125}
      : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<i64>)
      -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>)
  // CHECK: nn.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {eps = 9.9999999999999995E-7 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<i64>) -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>)
  %3:3 = nn.adamw %p, %g, %m, %v, %step {lr = 1.0e-3, eps = 1.0e-6, weight_decay = 1.0e-2}
      : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<i64>)
      -> (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>)
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// ZeRO: parameters, reduced gradients and optimizer state all split the same
// way; the step is replicated.
// CHECK-LABEL: func.func @optimizers_annotated(
func.func @optimizers_annotated(
    %p: tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>,
    %g: tensor<32x16xf32, #sbp.global<[S(0)], #p, grad>>,
    %m: tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>,
    %v: tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>,
    %pb: tensor<32x16xf32, #sbp.global<[B], #p, param>>,
    %gb: tensor<32x16xf32, #sbp.global<[B], #p, grad>>,
    %step: tensor<i64, #sbp.global<[B], #p>>) {
  // CHECK: nn.sgd %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64} : (tensor<32x16xf32, #sbp.global<[B], #cpus4, param>>, tensor<32x16xf32, #sbp.global<[B], #cpus4, grad>>) -> tensor<32x16xf32, #sbp.global<[B], #cpus4, param>>
  %0 = nn.sgd %pb, %gb {lr = 0.1}
      : (tensor<32x16xf32, #sbp.global<[B], #p, param>>, tensor<32x16xf32, #sbp.global<[B], #p, grad>>)
      -> tensor<32x16xf32, #sbp.global<[B], #p, param>>
  // CHECK: nn.sgd %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64} : (tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, grad>>) -> tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, param>>
  %1 = nn.sgd %p, %g {lr = 0.1}
      : (tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, grad>>)
      -> tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>
  // CHECK: nn.adam %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-03 : f64} : (tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, grad>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, opt_state>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, opt_state>>, tensor<i64, #sbp.global<[B], #cpus4>>) -> (tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, opt_state>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, opt_state>>)
  %2:3 = nn.adam %p, %g, %m, %v, %step {lr = 1.0e-3}
      : (tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, grad>>,
         tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>,
         tensor<i64, #sbp.global<[B], #p>>)
      -> (tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>,
          tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>)
  // CHECK: nn.adamw {{.*}} -> (tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, opt_state>>, tensor<32x16xf32, #sbp.global<[S(0)], #cpus4, opt_state>>)
  %3:3 = nn.adamw %p, %g, %m, %v, %step {lr = 1.0e-3, weight_decay = 0.01}
      : (tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, grad>>,
         tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>,
         tensor<i64, #sbp.global<[B], #p>>)
      -> (tensor<32x16xf32, #sbp.global<[S(0)], #p, param>>, tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>,
          tensor<32x16xf32, #sbp.global<[S(0)], #p, opt_state>>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// A 2-D hierarchy picks one legal signature per axis.
//===----------------------------------------------------------------------===//

#g = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>

// Data parallel over axis 0, tensor parallel (row parallel) over axis 1.
// CHECK-LABEL: func.func @matmul_2d(
// CHECK: nn.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0), S(1)], #gpus8>>, tensor<32x16xf32, #sbp.global<[B, S(1)], #gpus8, param>>) -> tensor<8x32xf32, #sbp.global<[S(0), P(sum)], #gpus8>>
func.func @matmul_2d(%x: tensor<8x16xf32, #sbp.global<[S(0), S(1)], #g>>,
                     %w: tensor<32x16xf32, #sbp.global<[B, S(1)], #g, param>>) {
  %0 = nn.matmul %x, %w {transpose_rhs}
      : (tensor<8x16xf32, #sbp.global<[S(0), S(1)], #g>>, tensor<32x16xf32, #sbp.global<[B, S(1)], #g, param>>)
      -> tensor<8x32xf32, #sbp.global<[S(0), P(sum)], #g>>
  return
}

// -----

#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>

// On [data, model], a split on the model axis needs its 2 parts to divide,
// not all 4 ranks: a column-parallel weight as one row per model part.
// CHECK-LABEL: func.func @reshape_model_axis(
func.func @reshape_model_axis(%w: tensor<8x6xf32, #sbp.global<[B, S(0)], #g, param>>) {
  // CHECK: nn.reshape %{{.*}} : tensor<8x6xf32, #sbp.global<[B, S(0)], #cpus4, param>> to tensor<2x24xf32, #sbp.global<[B, S(0)], #cpus4, param>>
  %0 = nn.reshape %w : tensor<8x6xf32, #sbp.global<[B, S(0)], #g, param>>
                    to tensor<2x24xf32, #sbp.global<[B, S(0)], #g, param>>
  return
}

// -----

// The vocabulary-parallel loss on logits split by class over the model axis
// of a [2, 2] grid: each row's max is a P(max), its sum of exponentials and
// label logit P(sum)s; the loss of whole rows is a partial sum over the
// batch split, and the gradient is split as the logits.
#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @vocab_parallel_loss(
    %logits: tensor<8x100xbf16, #sbp.global<[S(0), S(1)], #g>>,
    %labels: tensor<8xi64, #sbp.global<[S(0), B], #g, input>>,
    %max: tensor<8xf32, #sbp.global<[S(0), B], #g>>,
    %rows: tensor<8xf32, #sbp.global<[S(0), S(0)], #g>>,
    %dloss: tensor<f32, #sbp.global<[B, B], #g>>) {
  // CHECK: nn.cross_entropy_max %{{.*}} : (tensor<8x100xbf16, #sbp.global<[S(0), S(1)], #{{.*}}>>) -> tensor<8xf32, #sbp.global<[S(0), P(max)], #{{.*}}>>
  %0 = nn.cross_entropy_max %logits
      : (tensor<8x100xbf16, #sbp.global<[S(0), S(1)], #g>>)
      -> tensor<8xf32, #sbp.global<[S(0), P(max)], #g>>
  // CHECK: nn.cross_entropy_sums %{{.*}}, %{{.*}}, %{{.*}} : ({{.*}}) -> (tensor<8xf32, #sbp.global<[S(0), P(sum)], #{{.*}}>>, tensor<8xf32, #sbp.global<[S(0), P(sum)], #{{.*}}>>)
  %1:2 = nn.cross_entropy_sums %logits, %max, %labels
      : (tensor<8x100xbf16, #sbp.global<[S(0), S(1)], #g>>,
         tensor<8xf32, #sbp.global<[S(0), B], #g>>,
         tensor<8xi64, #sbp.global<[S(0), B], #g, input>>)
      -> (tensor<8xf32, #sbp.global<[S(0), P(sum)], #g>>,
          tensor<8xf32, #sbp.global<[S(0), P(sum)], #g>>)
  // CHECK: nn.cross_entropy_loss %{{.*}}, %{{.*}}, %{{.*}} {count = 8 : i64} : ({{.*}}) -> tensor<f32, #sbp.global<[P(sum), P(sum)], #{{.*}}>>
  %2 = nn.cross_entropy_loss %rows, %rows, %rows {count = 8}
      : (tensor<8xf32, #sbp.global<[S(0), S(0)], #g>>,
         tensor<8xf32, #sbp.global<[S(0), S(0)], #g>>,
         tensor<8xf32, #sbp.global<[S(0), S(0)], #g>>)
      -> tensor<f32, #sbp.global<[P(sum), P(sum)], #g>>
  // CHECK: nn.cross_entropy_split_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : ({{.*}}) -> tensor<8x100xbf16, #sbp.global<[S(0), S(1)], #{{.*}}>>
  %3 = nn.cross_entropy_split_grad %dloss, %logits, %max, %max, %labels
      : (tensor<f32, #sbp.global<[B, B], #g>>,
         tensor<8x100xbf16, #sbp.global<[S(0), S(1)], #g>>,
         tensor<8xf32, #sbp.global<[S(0), B], #g>>,
         tensor<8xf32, #sbp.global<[S(0), B], #g>>,
         tensor<8xi64, #sbp.global<[S(0), B], #g, input>>)
      -> tensor<8x100xbf16, #sbp.global<[S(0), S(1)], #g>>
  return
}
