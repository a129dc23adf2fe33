// RUN: zero-opt %s -zero-optimizer=optimizer=sgd -zero-sbp-propagation -zero-stage=stage=0 -zero-grad-clip=max-norm=0.5 | FileCheck %s --check-prefix=STAGE0
// RUN: zero-opt %s -zero-optimizer=optimizer=sgd -zero-sbp-propagation -zero-stage=stage=2 -zero-grad-clip=max-norm=0.5 | FileCheck %s --check-prefix=STAGE2
// RUN: not zero-opt %s -zero-grad-clip=max-norm=0 2>&1 | FileCheck %s --check-prefix=BAD

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @clip() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x4xf32, #sbp.global<[S(0)], #p, input>>
  %a = nn.variable "a" param : tensor<4xf32, #sbp.global<[B], #p, param>>
  %b = nn.variable "b" param : tensor<8xf32, #sbp.global<[B], #p, param>>
  %h = nn.mul %x, %a : (tensor<8x4xf32, #sbp.global<[S(0)], #p, input>>, tensor<4xf32, #sbp.global<[B], #p, param>>) -> tensor<8x4xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  %ga = nn.reduce_sum %x {axes = array<i64: 0>} : (tensor<8x4xf32, #sbp.global<[S(0)], #p, input>>) -> tensor<4xf32>
  %gb = nn.fill 1.0 : tensor<8xf32>
  nn.gradient "a", %ga : tensor<4xf32>
  nn.gradient "b", %gb : tensor<8xf32>
  return %l : tensor<f32>
}

// Stage 0: the updates read all-reduced (broadcast) gradients; every rank
// sums all the squares itself, so the norm needs no collective (turning the
// broadcast sums into partial sums would need each rank's index).
// STAGE0-LABEL: func.func @clip
// STAGE0: %[[SQ:.*]] = nn.mul %[[GA:.*]], %[[GA]] : {{.*}}[B]
// STAGE0-NEXT: %[[S1:.*]] = nn.reduce_sum %[[SQ]] {axes = array<i64: 0>} : {{.*}} -> tensor<f32, #sbp.global<[B], #cpus4>>
// STAGE0-NOT: P(sum)
// STAGE0: %[[TOTAL:.*]] = nn.add %[[S1]], %{{.*}} : {{.*}} -> tensor<f32, #sbp.global<[B], #cpus4>>
// STAGE0-NEXT: %[[C:.*]] = nn.clip_coefficient %[[TOTAL]] {max_norm = 5.000000e-01 : f64}
// STAGE0-NEXT: %[[GA2:.*]] = nn.mul %{{.*}}, %[[C]]
// STAGE0-NEXT: nn.sgd %{{.*}}, %[[GA2]]

// Stage 2: the gradients are shards; each rank's sum of squares is a
// partial sum and one scalar all-reduce completes it.
// STAGE2-LABEL: func.func @clip
// STAGE2: nn.mul {{.*}} : (tensor<4xf32, #sbp.global<[S(0)], #cpus4>>, tensor<4xf32, #sbp.global<[S(0)], #cpus4>>)
// STAGE2-NEXT: nn.reduce_sum {{.*}} -> tensor<f32, #sbp.global<[P(sum)], #cpus4>>
// STAGE2: nn.mul {{.*}} : (tensor<8xf32, #sbp.global<[S(0)], #cpus4>>, tensor<8xf32, #sbp.global<[S(0)], #cpus4>>)
// STAGE2-NEXT: nn.reduce_sum {{.*}} -> tensor<f32, #sbp.global<[P(sum)], #cpus4>>
// STAGE2-NEXT: nn.add
// STAGE2-NEXT: sbp.cast %{{.*}} : tensor<f32, #sbp.global<[P(sum)], #cpus4>> to tensor<f32, #sbp.global<[B], #cpus4>>
// STAGE2-NEXT: nn.clip_coefficient
// STAGE2-COUNT-1: sbp.cast {{.*}} : tensor<f32, #sbp.global<[P(sum)], #cpus4>> to tensor<f32, #sbp.global<[B], #cpus4>>

// BAD: error: zero-grad-clip: max-norm must be finite and positive
