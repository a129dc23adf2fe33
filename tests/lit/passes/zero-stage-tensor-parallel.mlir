// Tensor parallelism at stage 0 (docs/design.md#tensor-parallelism): on a
// [dp, tp] = [2, 2] placement, variables captured split on the model axis
// (axis 1) stay split, each rank holding and updating its part, and each
// gradient is all-reduced over the data axis (axis 0) alone; what the next
// op cannot read as it is crosses the model axis: Megatron's column- and
// row-parallel pair.
// RUN: zero-opt %s --zero-pipeline='stage=0 world=4 optimizer=sgd' -zero-partition | FileCheck %s
//
// At stages 1-3 ZeRO partitions each model part over the data axis
// (docs/design.md#zero-on-the-data-axis): a split variable's shard is a
// (tp, n) tensor [S(1), S(0)], row t its model part t flattened and padded;
// a row-parallel weight's part is cut out of its columns by a reshape and a
// transpose (locally of a unit dim). Broadcast variables shard over every
// rank as without a model axis.
// RUN: zero-opt %s --zero-pipeline='stage=3 world=4 optimizer=adam stage3-param-persistence-threshold=0' | FileCheck %s --check-prefix=STAGE3
// RUN: zero-opt %s --zero-pipeline='stage=3 world=4 optimizer=adam stage3-param-persistence-threshold=0' -zero-partition | FileCheck %s --check-prefix=LOCAL3
// RUN: zero-opt %s --zero-pipeline='stage=1 world=4 optimizer=adam' -zero-partition | FileCheck %s --check-prefix=LOCAL1

// STAGE3-DAG: nn.variable "fc1.weight" param {{.*}}{logical_shape = array<i64: 8, 6>, model_split = array<i64: 1, 0>} : tensor<2x24xf32, #sbp.global<[S(1), S(0)], #{{.*}}, param>>
// STAGE3-DAG: nn.variable "fc1.weight.exp_avg" opt_state {logical_shape = array<i64: 8, 6>, model_split = array<i64: 1, 0>} : tensor<2x24xf32, #sbp.global<[S(1), S(0)], #{{.*}}, opt_state>>
// STAGE3-DAG: nn.variable "fc1.bias" param {{.*}}{logical_shape = array<i64: 8>, model_split = array<i64: 1, 0>} : tensor<2x4xf32, #sbp.global<[S(1), S(0)], #{{.*}}, param>>
// STAGE3-DAG: %[[W2:.*]] = nn.variable "fc2.weight" param {{.*}}{logical_shape = array<i64: 4, 8>, model_split = array<i64: 1, 1>} : tensor<2x16xf32, #sbp.global<[S(1), S(0)], #{{.*}}, param>>
// STAGE3-DAG: nn.variable "fc2.bias" param {{.*}}{logical_shape = array<i64: 4>} : tensor<4xf32, #sbp.global<[S(0), S(0)], #{{.*}}, param>>
// The forward gathers fc2.weight over the data axis and moves its rows back
// to columns.
// STAGE3: %[[G:.*]] = sbp.cast %[[W2]] : tensor<2x16xf32, #sbp.global<[S(1), S(0)], #{{.*}}, param>> to tensor<2x16xf32, #sbp.global<[B, S(0)], #{{.*}}, param>>
// STAGE3-NEXT: %[[R:.*]] = nn.reshape %[[G]] : {{.*}} to tensor<2x4x4xf32, #sbp.global<[B, S(0)], #{{.*}}, param>>
// STAGE3-NEXT: %[[T:.*]] = nn.transpose %[[R]] {permutation = array<i64: 1, 0, 2>} : {{.*}} -> tensor<4x2x4xf32, #sbp.global<[B, S(1)], #{{.*}}, param>>
// STAGE3-NEXT: %[[FULL:.*]] = nn.reshape %[[T]] : {{.*}} to tensor<4x8xf32, #sbp.global<[B, S(1)], #{{.*}}, param>>
// STAGE3-NEXT: nn.matmul_bias %{{.*}}, %[[FULL]], %{{.*}} {transpose_rhs}
// Its gradient, a partial sum over the data axis, goes the other way and
// is reduce-scattered over the data axis.
// STAGE3: nn.reshape %{{.*}} : tensor<4x8xf32, #sbp.global<[P(sum), S(1)], #{{.*}}, grad>> to tensor<4x2x4xf32, #sbp.global<[P(sum), S(1)], #{{.*}}, grad>>
// STAGE3-NEXT: nn.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>} : {{.*}} -> tensor<2x4x4xf32, #sbp.global<[P(sum), S(0)], #{{.*}}, grad>>
// STAGE3-NEXT: nn.reshape %{{.*}} to tensor<2x16xf32, #sbp.global<[P(sum), S(0)], #{{.*}}, grad>>
// STAGE3-NEXT: sbp.cast %{{.*}} to tensor<2x16xf32, #sbp.global<[S(1), S(0)], #{{.*}}, grad>>

// Locally: a rank holds 1/dp of its model part; the data axis (axis 0)
// gathers and reduce-scatters it along the row.
// LOCAL3-DAG: %[[LW2:.*]] = nn.variable "fc2.weight" {{.*}} : tensor<1x8xf32>
// LOCAL3-DAG: %[[LW1:.*]] = nn.variable "fc1.weight" {{.*}} : tensor<1x12xf32>
// LOCAL3: shard.all_gather %[[LW1]] on @{{.*}} grid_axes = [0] gather_axis = 1 : tensor<1x12xf32> -> tensor<1x24xf32>
// LOCAL3: shard.all_gather %[[LW2]] on @{{.*}} grid_axes = [0] gather_axis = 1 : tensor<1x8xf32> -> tensor<1x16xf32>
// LOCAL3-NEXT: nn.reshape %{{.*}} : tensor<1x16xf32> to tensor<1x4x4xf32>
// LOCAL3-NEXT: nn.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>} : (tensor<1x4x4xf32>) -> tensor<4x1x4xf32>
// LOCAL3: %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @{{.*}} grid_axes = [0] scatter_axis = 1 : tensor<1x16xf32> -> tensor<1x8xf32>
// LOCAL3: nn.adam %[[LW2]], %[[RS]], {{.*}} : (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<i64>)

// Stage 1: the parameters stay whole model parts; the update runs on the
// shard and its result is gathered over the data axis.
// LOCAL1-DAG: nn.variable "fc1.weight" {{.*}} : tensor<4x6xf32>
// LOCAL1-DAG: nn.variable "fc1.weight.exp_avg" opt_state {{.*}} : tensor<1x12xf32>
// LOCAL1: %[[RS1:.*]] = shard.reduce_scatter %{{.*}} on @{{.*}} grid_axes = [0] scatter_axis = 1 : tensor<1x24xf32> -> tensor<1x12xf32>
// LOCAL1: %[[NEW:[a-z_0-9]*]], %{{.*}}, %{{.*}} = nn.adam %{{.*}}, %[[RS1]], {{.*}} -> (tensor<1x12xf32>, tensor<1x12xf32>, tensor<1x12xf32>)
// LOCAL1-NEXT: shard.all_gather %[[NEW]] on @{{.*}} grid_axes = [0] gather_axis = 1 : tensor<1x12xf32> -> tensor<1x24xf32>

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
