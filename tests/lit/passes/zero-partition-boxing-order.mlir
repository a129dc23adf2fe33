// A cast whose direct order would have an outer hierarchy axis split a dim
// an inner axis already splits goes through Broadcast: the inner splits are
// gathered first (innermost first), then the outer axes reduce or split,
// then the inner ones split again, so nested splits cut in rank order.
// RUN: zero-opt %s -split-input-file -zero-partition | FileCheck %s

// Gathering the outer axis while the inner one still splits the same dim
// would concatenate parts out of rank order.
// CHECK-LABEL: func.func @gather_outer(
// CHECK-SAME: %[[X:.*]]: tensor<2xf32>
// CHECK: %[[A:.*]] = shard.all_gather %[[X]] on @{{.*}} grid_axes = [1] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = shard.all_gather %[[A]] on @{{.*}} grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT: shard.all_slice %[[B]] on @{{.*}} grid_axes = [1] slice_axis = 0 : tensor<8xf32> -> tensor<4xf32>
#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @gather_outer(%x: tensor<8xf32, #sbp.global<[S(0), S(0)], #g>>) -> tensor<8xf32, #sbp.global<[B, S(0)], #g>> {
  %0 = sbp.cast %x : tensor<8xf32, #sbp.global<[S(0), S(0)], #g>> to tensor<8xf32, #sbp.global<[B, S(0)], #g>>
  return %0 : tensor<8xf32, #sbp.global<[B, S(0)], #g>>
}

// -----

// A partial sum over the data axis whose model axis splits columns, wanted
// split on rows over both (a gradient of tensor parallelism): gather the
// columns, reduce-scatter the rows over the outer axis, slice the inner.
// CHECK-LABEL: func.func @partial_to_rows(
// CHECK-SAME: %[[X:.*]]: tensor<8x2xf32>
// CHECK: %[[A:.*]] = shard.all_gather %[[X]] on @{{.*}} grid_axes = [1] gather_axis = 1 : tensor<8x2xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[B:.*]] = shard.reduce_scatter %[[A]] on @{{.*}} grid_axes = [0] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: shard.all_slice %[[B]] on @{{.*}} grid_axes = [1] slice_axis = 0 : tensor<4x4xf32> -> tensor<2x4xf32>
#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @partial_to_rows(%x: tensor<8x4xf32, #sbp.global<[P(sum), S(1)], #g>>) -> tensor<8x4xf32, #sbp.global<[S(0), S(0)], #g>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[P(sum), S(1)], #g>> to tensor<8x4xf32, #sbp.global<[S(0), S(0)], #g>>
  return %0 : tensor<8x4xf32, #sbp.global<[S(0), S(0)], #g>>
}
