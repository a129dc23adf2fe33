// A table split by vocabulary (tensor parallelism): each rank looks up the
// ids its rows hold, zeros for the others, a partial sum; the gradient
// scatters into the rank's rows only. zero-partition leaves the table's
// global shape and split dims on both ops, and the gradient's local rows in
// vocab_size, from which the runtime finds the rank's first row
// (docs/plan-format.md, "nn.embedding").
// RUN: zero-opt %s -zero-partition | FileCheck %s

// CHECK-LABEL: func.func @vocab_parallel(
// CHECK: %[[T:.*]] = nn.variable "wte" {{.*}} : tensor<4x8xf32>
// CHECK: nn.embedding %[[T]], %{{.*}} {global_shape = array<i64: 16, 8>, split_dims = array<i64: -1, 0>} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
// CHECK: nn.embedding_grad %{{.*}}, %{{.*}} {global_shape = array<i64: 16, 8>, split_dims = array<i64: -1, 0>, split_of = "result", vocab_size = 4 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
#g = #sbp.placement<cpu, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>
func.func @vocab_parallel(%dy: tensor<4x8xf32, #sbp.global<[S(0), B], #g>>) {
  %table = nn.variable "wte" param : tensor<16x8xf32, #sbp.global<[B, S(0)], #g, param>>
  %ids = nn.input "ids" : tensor<4xi64, #sbp.global<[S(0), B], #g, input>>
  %e = nn.embedding %table, %ids : (tensor<16x8xf32, #sbp.global<[B, S(0)], #g, param>>, tensor<4xi64, #sbp.global<[S(0), B], #g, input>>) -> tensor<4x8xf32, #sbp.global<[S(0), P(sum)], #g>>
  %g = nn.embedding_grad %dy, %ids {vocab_size = 16 : i64} : (tensor<4x8xf32, #sbp.global<[S(0), B], #g>>, tensor<4xi64, #sbp.global<[S(0), B], #g, input>>) -> tensor<16x8xf32, #sbp.global<[P(sum), S(0)], #g>>
  return
}
