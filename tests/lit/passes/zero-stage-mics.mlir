// RUN: zero-opt %s --zero-pipeline='stage=2 world=4 optimizer=sgd mics-shard-size=2' -zero-partition | FileCheck %s
// RUN: zero-opt %s --zero-pipeline='stage=3 world=4 optimizer=sgd mics-shard-size=2 stage3-param-persistence-threshold=0' -zero-partition | FileCheck %s --check-prefix=STAGE3
// RUN: zero-opt %s --zero-pipeline='stage=3 world=4 optimizer=sgd mics-shard-size=4 stage3-param-persistence-threshold=0' -zero-partition | FileCheck %s --check-prefix=FLAT
// RUN: zero-opt %s --zero-pipeline='stage=3 world=4 optimizer=sgd hpz-partition-size=2 stage3-param-persistence-threshold=0 stage3-max-reuse-distance=0' -zero-partition | FileCheck %s --check-prefix=HPZ
// RUN: not zero-opt %s --zero-pipeline='stage=2 world=4 mics-shard-size=3' 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not zero-opt %s --zero-pipeline='stage=0 world=4 mics-shard-size=2' 2>&1 | FileCheck %s --check-prefix=STAGE0
// RUN: not zero-opt %s --pass-pipeline='builtin.module(func.func(zero-sbp-propagation{world=4},zero-stage{stage=2 mics-shard-size=2}))' 2>&1 | FileCheck %s --check-prefix=ONE-AXIS
// RUN: not zero-opt %s --pass-pipeline='builtin.module(func.func(zero-sbp-propagation{world=6 group-size=4}))' 2>&1 | FileCheck %s --check-prefix=PROPAGATION
// RUN: not zero-opt %s --pass-pipeline='builtin.module(func.func(zero-sbp-propagation{world=4 group-size=-2}))' 2>&1 | FileCheck %s --check-prefix=NEGATIVE-GROUP
// RUN: not zero-opt %s --pass-pipeline='builtin.module(func.func(zero-sbp-propagation{world=4},zero-stage{stage=3 hpz-partition-size=-2}))' 2>&1 | FileCheck %s --check-prefix=NEGATIVE-STAGE
// RUN: not zero-opt %s --zero-pipeline='stage=3 world=4 mics-shard-size=-2' 2>&1 | FileCheck %s --check-prefix=NEGATIVE-KEY

// MiCS: 4 ranks as 2 groups of 2. Shards are [B, S(0)], padded to a
// multiple of 2, not 4: the gradient is reduce-scattered within a group
// (axis 1), then its shard all-reduced across groups (axis 0); the updated
// shard is gathered within the group only.

// CHECK: shard.grid @cpus4_2x2(shape = 2x2)
// CHECK-LABEL: func.func @mlp
// CHECK: nn.input "x" {zero.global_type = tensor<8x6xf32, #sbp.global<[S(0), S(0)], #cpus4, input>>} : tensor<2x6xf32>
// CHECK: nn.variable "w" param {zero.global_type = tensor<6xf32, #sbp.global<[B, B], #cpus4, param>>} : tensor<6xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @cpus4_2x2 grid_axes = [1] scatter_axis = 0 : tensor<6xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[AR:.*]] = shard.all_reduce %[[RS]] on @cpus4_2x2 grid_axes = [0] : tensor<3xf32> -> tensor<3xf32>
// CHECK: %[[SHARD:.*]] = shard.all_slice %{{.*}} on @cpus4_2x2 grid_axes = [1] slice_axis = 0 : tensor<6xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[NEW:.*]] = nn.sgd %[[SHARD]], %{{.*}} -> tensor<3xf32>
// CHECK-NEXT: %[[ALL:.*]] = shard.all_gather %[[NEW]] on @cpus4_2x2 grid_axes = [1] gather_axis = 0 : tensor<3xf32> -> tensor<6xf32>
// CHECK-NEXT: nn.assign "w", %[[ALL]]
// CHECK-NOT: grid_axes = [0] gather_axis

// At stage 3 the parameter is a 3-element shard, gathered within the group.
// STAGE3-LABEL: func.func @mlp
// STAGE3: %[[W:.*]] = nn.variable "w" param {{.*}}#sbp.global<[B, S(0)], #cpus4, param>>} : tensor<3xf32>
// STAGE3: shard.all_gather %[[W]] on @cpus4_2x2 grid_axes = [1] gather_axis = 0 : tensor<3xf32> -> tensor<6xf32>
// STAGE3-NOT: shard.all_gather %[[W]] on @cpus4_2x2 grid_axes = [0]
// STAGE3: shard.reduce_scatter %{{.*}} grid_axes = [1] {{.*}} -> tensor<3xf32>
// STAGE3-NEXT: shard.all_reduce %{{.*}} grid_axes = [0] : tensor<3xf32> -> tensor<3xf32>

// A group of every rank is flat ZeRO: one axis, 6 elements padded to 8.
// FLAT: shard.grid @cpus4(shape = 4)
// FLAT: nn.variable "w" param {{.*}}#sbp.global<[S(0)], #cpus4, param>>} : tensor<2xf32>

// hpZ: the primary shards are split over every rank; the forward's gather
// of w2, which the backward reads, leaves a [B, S(0)] slice behind (no
// communication) that the backward gathers within the group (axis 1).
// HPZ-LABEL: func.func @mlp
// HPZ: %[[W2:.*]] = nn.variable "w2" param {{.*}}#sbp.global<[S(0), S(0)], #cpus4, param>>} : tensor<2xf32>
// HPZ: %[[G1:.*]] = shard.all_gather %[[W2]] on @cpus4_2x2 grid_axes = [1] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
// HPZ-NEXT: %[[G0:.*]] = shard.all_gather %[[G1]] on @cpus4_2x2 grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
// HPZ-NEXT: %[[SECONDARY:.*]] = shard.all_slice %[[G0]] on @cpus4_2x2 grid_axes = [1] slice_axis = 0 : tensor<8xf32> -> tensor<4xf32>
// HPZ: shard.all_gather %[[SECONDARY]] on @cpus4_2x2 grid_axes = [1] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
// HPZ-NOT: shard.all_gather %[[W2]]

// DIVIDE: mics-shard-size: expected a divisor of the world size 4, got 3
// NEGATIVE-GROUP: zero-sbp-propagation: group-size must not be negative, got -2
// NEGATIVE-STAGE: zero-stage: mics-shard-size and hpz-partition-size must be non-negative
// NEGATIVE-KEY: mics-shard-size: expected an integer >= -1, got -2
// STAGE0: mics-shard-size: needs ZeRO stage 1, 2 or 3
// ONE-AXIS: zero-stage: mics-shard-size=2 needs a 2-D placement [nodes, 2] (zero-sbp-propagation's group-size makes one); @mlp is placed on 4
// PROPAGATION: zero-sbp-propagation: group-size=4 must divide the ranks of a 1-D placement or be the inner size of a 2-D one; @mlp is placed on #sbp.placement<cpu, [0, 1, 2, 3, 4, 5]>
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32>
  %w = nn.variable "w" param : tensor<6xf32>
  %w2 = nn.variable "w2" param : tensor<6xf32>
  %h = nn.mul %x, %w : (tensor<8x6xf32>, tensor<6xf32>) -> tensor<8x6xf32>
  %g = nn.mul %h, %w2 : (tensor<8x6xf32>, tensor<6xf32>) -> tensor<8x6xf32>
  %l = nn.reduce_mean %g {axes = array<i64: 0, 1>} : (tensor<8x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
