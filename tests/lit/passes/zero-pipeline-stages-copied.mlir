// A step that a dropout made on stage 0 (zs.pipeline_stage marks what a
// module's call builds) does not pull stage 1's Adam update there: each
// stage computes the step for itself, and the update runs where its
// parameter is.
// RUN: zero-opt %s --zero-autodiff --zero-optimizer=optimizer=adam \
// RUN:   --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages=stages=2 | FileCheck %s

// CHECK-DAG: %[[STEP0:.*]] = nn.step {zero.pipeline_stage = 0 : i64}
// CHECK-DAG: %[[STEP1:.*]] = nn.step {zero.pipeline_stage = 1 : i64}
// CHECK-DAG: nn.adam %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[STEP1]] {lr = {{.*}}, zero.pipeline_stage = 1 : i64} : (tensor<256xf32, #sbp.global<[S(0)], #[[S1:cpus2_1]], param>>
// CHECK-DAG: nn.adam %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[STEP0]] {lr = {{.*}}, zero.pipeline_stage = 0 : i64}

#p = #sbp.placement<cpu, [0, 1]>
func.func @stages() -> tensor<f32> {
  %x = nn.input "x" : tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>
  %labels = nn.input "labels" : tensor<16xi64, #sbp.global<[S(0)], #p, input>>
  %s = nn.step {zero.pipeline_stage = 0 : i64} : tensor<i64>
  %w0 = nn.variable "w0" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m0 = nn.matmul %x, %w0 {transpose_rhs, zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %d0 = nn.dropout %m0, %s {p = 0.25 : f64, seed = 0 : i64, stream = 0 : i64, zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32>, tensor<i64>) -> tensor<16x16xf32>
  %w2 = nn.variable "w2" param init = uniform(0.25) {zero.pipeline_stage = 1 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m2 = nn.matmul %d0, %w2 {transpose_rhs, zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %loss = nn.cross_entropy %m2, %labels {zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %loss : tensor<f32>
}
