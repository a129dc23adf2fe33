// Every rank's program issues the same buckets in the same order: the
// programs of ranks 0 and 3 (uneven batch shares: 10 rows over 4 ranks)
// bucket identically.
// RUN: zero-opt %s --zero-pipeline='stage=2 world=4 shard-min-size=0' --zero-partition=rank=0 --zero-bucketing | FileCheck %s
// RUN: zero-opt %s --zero-pipeline='stage=2 world=4 shard-min-size=0' --zero-partition=rank=3 --zero-bucketing | FileCheck %s

// CHECK: sbp.collective_start all_reduce {{.*}} {bucket = 0 : i64} : tensor<f32>
// CHECK: sbp.collective_start reduce_scatter {{.*}} {bucket = 1 : i64, scatter_axis = 0 : i64} : tensor<4xf32>, tensor<64xf32> ->
// CHECK: sbp.collective_start all_gather {{.*}} {bucket = 2 : i64, gather_axis = 0 : i64} : tensor<16xf32>, tensor<1xf32> ->
// CHECK-NOT: sbp.collective_start

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<10x16xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<10xi64, #sbp.global<[S(0)], #p, input>>
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[B], #p, param>>
  %b = nn.variable "b" param : tensor<4xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<10x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<4x16xf32, #sbp.global<[B], #p, param>>) -> tensor<10x4xf32>
  %z = nn.bias_add %h, %b : (tensor<10x4xf32>, tensor<4xf32, #sbp.global<[B], #p, param>>) -> tensor<10x4xf32>
  %l = nn.cross_entropy %z, %y : (tensor<10x4xf32>, tensor<10xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %l : tensor<f32>
}
