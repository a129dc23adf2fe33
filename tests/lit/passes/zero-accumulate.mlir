// RUN: zero-opt %s -split-input-file -zero-accumulate=steps=2 | FileCheck %s
// RUN: zero-opt %s -split-input-file -zero-accumulate=steps=2 -zero-autodiff -zero-optimizer=optimizer=sgd -zero-sbp-propagation -zero-stage=stage=1 | FileCheck %s --check-prefix=STEP
// RUN: not zero-opt %s -split-input-file -zero-accumulate=steps=3 2>&1 | FileCheck %s --check-prefix=UNEVEN

#p = #sbp.placement<cpu, [0, 1]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0)], #p, input>>
  %w = nn.variable "w" param : tensor<3x6xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0)], #p, input>>, tensor<3x6xf32, #sbp.global<[B], #p, param>>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %h, %y : (tensor<8x3xf32>, tensor<8xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %l : tensor<f32>
}

// Each of the 2 ranks holds 4 rows and cuts them into 2 micro-batches of
// 2: the batch viewed as (ranks, micro-batches, rows) and sliced on the
// middle axis. The forward runs per micro-batch on 4 rows; the loss is the
// mean of the two.
// CHECK-LABEL: func.func @linear
// CHECK: %[[X:.*]] = nn.input "x"
// CHECK: %[[W:.*]] = nn.variable "w"
// CHECK: %[[V0:.*]] = nn.reshape %[[X]] {zero.micro_batch = 0 : i64} : {{.*}} to tensor<2x2x2x6xf32>
// CHECK-NEXT: %[[S0:.*]] = nn.slice %[[V0]] {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 2, 1, 2, 6>, zero.micro_batch = 0 : i64}
// CHECK-NEXT: %[[M0:.*]] = nn.reshape %[[S0]] {zero.micro_batch = 0 : i64} : tensor<2x1x2x6xf32> to tensor<4x6xf32>
// CHECK: nn.matmul %[[M0]], %[[W]] {transpose_rhs, zero.micro_batch = 0 : i64} : {{.*}} -> tensor<4x3xf32>
// CHECK: %[[L0:.*]] = nn.cross_entropy
// CHECK: nn.slice %{{.*}} {offsets = array<i64: 0, 1, 0, 0>, sizes = array<i64: 2, 1, 2, 6>, zero.micro_batch = 1 : i64}
// CHECK: %[[L1:.*]] = nn.cross_entropy
// CHECK: %[[SUM:.*]] = nn.add %[[L0]], %[[L1]]
// CHECK-NEXT: %[[MEAN:.*]] = nn.scale %[[SUM]] {factor = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[MEAN]]

// The micro-batches stay split on the ranks (no input is gathered), their
// weight gradients add up as partial sums and are reduce-scattered once.
// STEP-LABEL: func.func @linear
// STEP-NOT: to tensor<{{.*}}#sbp.global<[B], #cpus2, input>>
// STEP: %[[G:.*]] = nn.add {{.*}} -> tensor<3x6xf32, #sbp.global<[P(sum)], #cpus2, grad>>
// STEP: sbp.cast {{.*}} : tensor<18xf32, #sbp.global<[P(sum)], #cpus2, grad>> to tensor<18xf32, #sbp.global<[S(0)], #cpus2, grad>>
// STEP-COUNT-1: nn.sgd

// UNEVEN: error: 'nn.input' op batch of 8 does not split into 3 micro-batches on each of 2 ranks

// -----

// On [data, model] the batch is split over the data axis only: each of the
// 2 data ranks cuts its 4 rows into 2 micro-batches of 2, and the model
// axis holds them whole.
#q = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @model_axis() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0), B], #q, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0), B], #q, input>>
  %w = nn.variable "w" param : tensor<3x6xf32, #sbp.global<[B, B], #q, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0), B], #q, input>>, tensor<3x6xf32, #sbp.global<[B, B], #q, param>>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %h, %y : (tensor<8x3xf32>, tensor<8xi64, #sbp.global<[S(0), B], #q, input>>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @model_axis
// CHECK: nn.reshape %{{.*}} {zero.micro_batch = 0 : i64} : {{.*}} to tensor<2x2x2x6xf32>
// CHECK: nn.matmul {{.*}} -> tensor<4x3xf32>
