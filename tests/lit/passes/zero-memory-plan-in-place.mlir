// RUN: zero-opt %s -split-input-file --zero-memory-plan --zero-verify-memory-plan | FileCheck %s

// The cross-entropy gradient goes over the logits when the gradient op is
// their last reader, so an LM head holds one (tokens x vocabulary) buffer
// in the backward, not two.
// CHECK-LABEL: func.func @head
// The peak is after the gradient op: the logits' gradient (4 x 16 x 4
// bytes), the input's gradient (4 x 8 x 4) and the loss (4). With bytes of
// its own, the gradient op would hold the logits, their gradient, the loss
// and its seed at once: 520.
// CHECK-SAME: peak = {activation = 388 : i64
// CHECK: nn.matmul {{.*}}zero.slots = array<i64: [[LOGITS:[0-9]+]], 0>
// CHECK: nn.cross_entropy_grad {{.*}}zero.slots = array<i64: [[LOGITS]], 0>
#p = #sbp.placement<cpu, [0]>
module {
  shard.grid @cpus1(shape = 1) {zero.placement = #p}
  func.func @head() -> tensor<f32> {
    %w = nn.variable "w" param : tensor<16x8xf32>
    %x = nn.input "x" : tensor<4x8xf32>
    %t = nn.input "t" : tensor<4xi64>
    %logits = nn.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %loss = nn.cross_entropy %logits, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
    %one = nn.fill 1.0 : tensor<f32>
    %dlogits = nn.cross_entropy_grad %one, %logits, %t : (tensor<f32>, tensor<4x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
    %dx = nn.matmul %dlogits, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %s = nn.reduce_sum %dx {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
    %r = nn.add %loss, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %r : tensor<f32>
  }
}

// -----

// Logits read after the gradient keep their own bytes.
// CHECK-LABEL: func.func @logits_read_after
// CHECK: nn.matmul {{.*}}zero.slots = array<i64: [[KEPT:[0-9]+]], 0>
// CHECK: nn.cross_entropy_grad
// CHECK-NOT: zero.slots = array<i64: [[KEPT]], 0>
// CHECK-SAME: -> tensor<4x16xf32>
#p = #sbp.placement<cpu, [0]>
module {
  shard.grid @cpus1(shape = 1) {zero.placement = #p}
  func.func @logits_read_after() -> tensor<4x16xf32> {
    %w = nn.variable "w" param : tensor<16x8xf32>
    %x = nn.input "x" : tensor<4x8xf32>
    %t = nn.input "t" : tensor<4xi64>
    %logits = nn.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %one = nn.fill 1.0 : tensor<f32>
    %dlogits = nn.cross_entropy_grad %one, %logits, %t : (tensor<f32>, tensor<4x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
    %sum = nn.add %dlogits, %logits : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    return %sum : tensor<4x16xf32>
  }
}
