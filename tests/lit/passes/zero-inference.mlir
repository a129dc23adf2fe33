// RUN: zero-opt %s -zero-inference | FileCheck %s
// RUN: zero-opt %s --pass-pipeline='builtin.module(func.func(zero-inference,zero-sbp-propagation{world=2},zero-stage{stage=3 shard-min-size=1}),zero-partition)' | FileCheck %s --check-prefix=STAGE3

// A forward graph for prediction: dropout becomes the identity, the step
// that only fed it goes, the function is marked, and its results stay.

#cpus2 = #sbp.placement<cpu, [0, 1]>
// CHECK-LABEL: func.func @predict
// CHECK-SAME: attributes {zero.inference}
// CHECK-NOT: nn.step
// CHECK-NOT: nn.dropout
// CHECK: %[[H:.*]] = nn.matmul %[[X:.*]], %[[W:.*]] {transpose_rhs}
// CHECK-NEXT: %[[R:.*]] = nn.relu %[[H]]
// CHECK-NEXT: return %[[R]], %[[H]]
func.func @predict() -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #cpus2, input>>
  %w = nn.variable "w" param init = uniform(0.25) : tensor<4x16xf32, #sbp.global<[B], #cpus2, param>>
  %s = nn.step : tensor<i64>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus2, input>>, tensor<4x16xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x4xf32>
  %d = nn.dropout %h, %s {p = 0.5 : f64, seed = 7 : i64, stream = 0 : i64} : (tensor<8x4xf32>, tensor<i64>) -> tensor<8x4xf32>
  %r = nn.relu %d : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r, %d : tensor<8x4xf32>, tensor<8x4xf32>
}

// At stage 3 the parameter is a flat shard, gathered where the forward
// reads it; the results are handed back whole (all-gathered over the batch).
// STAGE3-LABEL: func.func @predict
// STAGE3: nn.variable "w" param {{.*}} : tensor<32xf32>
// STAGE3: shard.all_gather {{.*}} : tensor<32xf32> -> tensor<64xf32>
// STAGE3: %[[H:.*]] = nn.matmul {{.*}} -> tensor<4x4xf32>
// STAGE3: %[[R:.*]] = nn.relu %[[H]]
// STAGE3: %[[RG:.*]] = shard.all_gather %[[R]] {{.*}} : tensor<4x4xf32> -> tensor<8x4xf32>
// STAGE3: %[[HG:.*]] = shard.all_gather %[[H]] {{.*}} : tensor<4x4xf32> -> tensor<8x4xf32>
// STAGE3-NOT: nn.gradient
// STAGE3: return %[[RG]], %[[HG]]
