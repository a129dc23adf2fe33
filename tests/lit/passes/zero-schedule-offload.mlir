// RUN: zero-opt %s --zero-pipeline='stage=2 world=1 offload-optimizer=cpu' -zero-partition | zero-opt -zero-bucketing -zero-schedule=overlap-comm=true -zero-memory-plan -zero-verify-memory-plan | FileCheck %s
// RUN: zero-opt %s --zero-pipeline='stage=2 world=1 offload-optimizer=cpu' -zero-partition | zero-opt -zero-bucketing -zero-schedule -zero-memory-plan -zero-verify-memory-plan | FileCheck %s --check-prefix=SYNC

// Two layers trained with Adam, their states in host memory. With
// overlap_comm each update runs on the host as soon as its gradient shard
// is there: the step goes to the host at the start, and so do the
// parameters, each waited for right before the update that reads it (a
// variable's bytes need no freeing); the second layer's gradient right
// after the backward makes it, and its update before the backward reaches
// the first layer. The new parameters come back after
// the backward (so that each lands in its own bytes), all started before any
// is waited for.
#p = #sbp.placement<cpu, [0]>
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<4x8xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<4xi64, #sbp.global<[S(0)], #p, input>>
  %w1 = nn.variable "w1" param : tensor<8x8xf32, #sbp.global<[B], #p, param>>
  %w2 = nn.variable "w2" param : tensor<16x8xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<4x8xf32, #sbp.global<[S(0)], #p, input>>, tensor<8x8xf32, #sbp.global<[B], #p, param>>) -> tensor<4x8xf32>
  %logits = nn.matmul %h, %w2 {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32, #sbp.global<[B], #p, param>>) -> tensor<4x16xf32>
  %loss = nn.cross_entropy %logits, %y : (tensor<4x16xf32>, tensor<4xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK:      %[[STEP:.*]] = nn.step
// CHECK-NEXT: %[[F:.*]] = sbp.transfer_start %[[STEP]] from device to host
// CHECK-NEXT: %[[STEPHOST:.*]] = sbp.transfer_wait %[[F]]
// CHECK-NEXT: nn.variable "w1" param
// CHECK-NEXT: nn.reshape
// CHECK-NEXT: %[[FW1:.*]] = sbp.transfer_start {{.*}} from device to host : tensor<64xf32>
// CHECK:      nn.cross_entropy_grad
// CHECK-NEXT: %[[G2:.*]] = nn.matmul {{.*}}transpose_lhs{{.*}} -> tensor<16x8xf32>
// CHECK-NEXT: %[[G2FLAT:.*]] = nn.reshape %[[G2]]
// CHECK-NEXT: %[[F2:.*]] = sbp.transfer_start %[[G2FLAT]] from device to host
// CHECK-NEXT: %[[G2HOST:.*]] = sbp.transfer_wait %[[F2]]
// CHECK-NEXT: %[[W2HOST:.*]] = sbp.transfer_wait
// CHECK-NEXT: %[[NEW2:.*]], %{{.*}}, %{{.*}} = nn.adam %[[W2HOST]], %[[G2HOST]], {{.*}}, %[[STEPHOST]] {{.*}}zero.memory_kind = #sbp<memory host>
// CHECK-NEXT: nn.matmul {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: nn.matmul {{.*}}transpose_lhs{{.*}} -> tensor<8x8xf32>
// CHECK:      %[[G1HOST:.*]] = sbp.transfer_wait
// CHECK-NEXT: %[[W1HOST:.*]] = sbp.transfer_wait %[[FW1]]
// CHECK-NEXT: %[[NEW1:.*]], %{{.*}}, %{{.*}} = nn.adam %[[W1HOST]], %[[G1HOST]], {{.*}}zero.memory_kind = #sbp<memory host>
// CHECK-NEXT: sbp.transfer_start %[[NEW1]] from host to device
// CHECK-NEXT: sbp.transfer_start %[[NEW2]] from host to device
// CHECK-NEXT: sbp.transfer_wait
// CHECK-NEXT: sbp.transfer_wait
// CHECK-NOT:  zero.copy
// CHECK:      return

// Without overlap_comm both updates follow the whole backward.
// SYNC:     nn.matmul {{.*}}transpose_lhs{{.*}} -> tensor<8x8xf32>
// SYNC-NOT: nn.matmul
// SYNC:     nn.adam
// SYNC:     nn.adam
