// Tensor parallelism at stage 0 (docs/design.md#tensor-parallelism): on a
// [dp, tp] = [2, 2] placement, variables captured split on the model axis
// (axis 1) stay split, each rank holding and updating its part, and each
// gradient is all-reduced over the data axis (axis 0) alone; what the next
// op cannot read as it is crosses the model axis: Megatron's column- and
// row-parallel pair.
// RUN: zero-opt %s --zero-pipeline='stage=0 world=4 optimizer=sgd' -zero-partition | FileCheck %s

// CHECK: shard.grid @[[GRID:.*]](shape = 2x2)
// CHECK-DAG: %[[W1:.*]] = nn.variable "fc1.weight" {{.*}}#sbp.global<[B, S(0)]{{.*}} : tensor<4x6xf32>
// CHECK-DAG: %[[B1:.*]] = nn.variable "fc1.bias" {{.*}}#sbp.global<[B, S(0)]{{.*}} : tensor<4xf32>
// CHECK-DAG: %[[W2:.*]] = nn.variable "fc2.weight" {{.*}}#sbp.global<[B, S(1)]{{.*}} : tensor<4x4xf32>
// CHECK-DAG: %[[B2:.*]] = nn.variable "fc2.bias" {{.*}}#sbp.global<[B, B]{{.*}} : tensor<4xf32>
// The column-parallel layer computes on the rank's columns.
// CHECK: %[[H:.*]], %{{.*}} = nn.matmul_bias_gelu %{{.*}}, %[[W1]], %[[B1]] {transpose_rhs} : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
// The row-parallel layer reads the columns as they are and gives partial
// sums; its bias is added once (the first rank of the model axis keeps it).
// CHECK: %[[B2P:.*]] = sbp.to_partial %[[B2]] on axis 1 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[Z:.*]] = nn.matmul_bias %[[H]], %[[W2]], %[[B2P]] {transpose_rhs} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// The model axis reduces the partial sums.
// CHECK-NEXT: shard.reduce_scatter %[[Z]] on @[[GRID]] grid_axes = [1]
// Each update reads its gradient all-reduced over the data axis.
// CHECK: %[[G1:.*]] = shard.all_reduce %{{.*}} on @[[GRID]] grid_axes = [0] : tensor<4x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT: nn.sgd %[[W1]], %[[G1]] {{.*}} -> tensor<4x6xf32>
// CHECK: %[[G2:.*]] = shard.all_reduce %{{.*}} on @[[GRID]] grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: nn.sgd %[[B1]], %[[G2]] {{.*}} -> tensor<4xf32>
// CHECK: %[[G3:.*]] = shard.all_reduce %{{.*}} on @[[GRID]] grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: nn.sgd %[[W2]], %[[G3]] {{.*}} -> tensor<4x4xf32>

#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0), B], #g, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0), B], #g, input>>
  %w1 = nn.variable "fc1.weight" param init = uniform(0.4) : tensor<8x6xf32, #sbp.global<[B, S(0)], #g, param>>
  %b1 = nn.variable "fc1.bias" param init = uniform(0.4) : tensor<8xf32, #sbp.global<[B, S(0)], #g, param>>
  %w2 = nn.variable "fc2.weight" param init = uniform(0.4) : tensor<4x8xf32, #sbp.global<[B, S(1)], #g, param>>
  %b2 = nn.variable "fc2.bias" param init = uniform(0.4) : tensor<4xf32, #sbp.global<[B, B], #g, param>>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0), B], #g, input>>, tensor<8x6xf32, #sbp.global<[B, S(0)], #g, param>>) -> tensor<8x8xf32>
  %hb = nn.bias_add %h, %b1 : (tensor<8x8xf32>, tensor<8xf32, #sbp.global<[B, S(0)], #g, param>>) -> tensor<8x8xf32>
  %r = nn.gelu %hb : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %z = nn.matmul %r, %w2 {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32, #sbp.global<[B, S(1)], #g, param>>) -> tensor<8x4xf32>
  %zb = nn.bias_add %z, %b2 : (tensor<8x4xf32>, tensor<4xf32, #sbp.global<[B, B], #g, param>>) -> tensor<8x4xf32>
  %l = nn.cross_entropy %zb, %y : (tensor<8x4xf32>, tensor<8xi64, #sbp.global<[S(0), B], #g, input>>) -> tensor<f32>
  return %l : tensor<f32>
}
