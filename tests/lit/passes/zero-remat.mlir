// RUN: zero-opt %s -zero-autodiff -zero-remat | FileCheck %s
// RUN: zero-opt %s -zero-autodiff | FileCheck %s --check-prefix=PLAIN

// A segment of three ops. Its output %b is read by the loss, outside the
// segment: kept. %a is read only by the backward (tanh_grad): it is
// recomputed, with the matmul it needs, right before that read. The marks
// are gone afterwards.

func.func @step(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = nn.variable "w" param : tensor<3x3xf32>
  %h = nn.matmul %x, %w {zero.checkpoint = 0 : i64} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %a = nn.tanh %h {zero.checkpoint = 0 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %b = nn.tanh %a {zero.checkpoint = 0 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = nn.reduce_mean %b {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// The recomputed matmul costs 2 m n k = 2 x 4 x 3 x 3 = 72 FLOPs.
// CHECK-LABEL: func.func @step
// CHECK-SAME: attributes {zero.recompute_flops = 7.200000e+01 : f64}
// CHECK: %[[W:.*]] = nn.variable "w"
// CHECK: %[[H:.*]] = nn.matmul %[[X:.*]], %[[W]] :
// CHECK: %[[A:.*]] = nn.tanh %[[H]] :
// CHECK: %[[B:.*]] = nn.tanh %[[A]] :
// CHECK: nn.fill 1.000000e+00 {zero.loss_seed}
// CHECK: %[[DB:.*]] = nn.tanh_grad %{{.*}}, %[[B]]
// CHECK-NEXT: %[[H2:.*]] = nn.matmul %[[X]], %[[W]] :
// CHECK-NEXT: %[[A2:.*]] = nn.tanh %[[H2]] :
// CHECK-NEXT: nn.tanh_grad %[[DB]], %[[A2]]
// CHECK-NOT: zero.checkpoint

// Without zero-remat the backward reads the forward's %a.
// PLAIN: %[[A:.*]] = nn.tanh %{{.*}} {zero.checkpoint = 0 : i64}
// PLAIN: nn.tanh_grad %{{.*}}, %[[A]]
