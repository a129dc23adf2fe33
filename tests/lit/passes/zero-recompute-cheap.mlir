// RUN: zero-opt %s -zero-fuse-epilogues -zero-autodiff -zero-recompute-cheap | FileCheck %s
// RUN: zero-opt %s -zero-fuse-epilogues -zero-autodiff | FileCheck %s --check-prefix=KEPT

// A block's layer norm, its fused matmul + GELU and a transpose: the
// backward reads the layer norm's output (fc's weight gradient), the GELU's
// output (proj's weight gradient) and the transposed value; each is
// computed again right before that read from values the backward keeps
// anyway (the layer norm's input for its gradient, gamma and the variable
// beta, the pre-activation for GELU's gradient, the transpose's input for
// proj's weight gradient), so the forward's copies die in the forward.
// CHECK-LABEL: func.func @block
// CHECK: %[[LN:.*]] = nn.layer_norm %[[X:[^,]*]], %[[G:[^,]*]], %[[B:[^ ]*]]
// CHECK: %[[H:.*]], %[[PRE:.*]] = nn.matmul_bias_gelu %[[LN]]
// CHECK: %[[T:.*]] = nn.transpose %[[H]]
// CHECK: nn.cross_entropy
// CHECK: zero.loss_seed
// CHECK-NOT: %[[LN]]{{[ ,:]}}
// CHECK-NOT: %[[H]]{{[ ,:]}}
// CHECK-NOT: %[[T]]{{[ ,:]}}
// CHECK: %[[H2:.*]] = nn.gelu %[[PRE]]
// CHECK-NEXT: %[[T2:.*]] = nn.transpose %[[H2]]
// CHECK-NEXT: nn.matmul %{{.*}}, %[[T2]] {transpose_lhs, transpose_rhs}
// CHECK-NOT: %[[LN]]{{[ ,:]}}
// CHECK: %[[LN2:.*]] = nn.layer_norm %[[X]], %[[G]], %[[B]]
// CHECK-NEXT: nn.matmul %{{.*}}, %[[LN2]] {transpose_lhs}
// CHECK-NOT: %[[LN]]{{[ ,:]}}
// CHECK-NOT: %[[H]]{{[ ,:]}}
// CHECK: return

// Without the pass the backward reads the forward's values.
// KEPT-LABEL: func.func @block
// KEPT: %[[LN:.*]] = nn.layer_norm
// KEPT: zero.loss_seed
// KEPT-NOT: nn.layer_norm %
// KEPT: nn.matmul %{{.*}}, %[[LN]] {transpose_lhs}
func.func @block() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x4xf32>
  %y = nn.input "y" : tensor<8xi64>
  %g = nn.variable "ln.weight" param init = ones : tensor<4xf32>
  %b = nn.variable "ln.bias" param : tensor<4xf32>
  %w1 = nn.variable "fc.weight" param init = normal(0.02) : tensor<16x4xf32>
  %b1 = nn.variable "fc.bias" param : tensor<16xf32>
  %w2 = nn.variable "proj.weight" param init = normal(0.02) : tensor<3x16xf32>
  %n = nn.layer_norm %x, %g, %b : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %m = nn.matmul %n, %w1 {transpose_rhs} : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %z = nn.bias_add %m, %b1 : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %h = nn.gelu %z : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %t = nn.transpose %h {permutation = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %o = nn.matmul %t, %w2 {transpose_lhs, transpose_rhs} : (tensor<16x8xf32>, tensor<3x16xf32>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %o, %y : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
