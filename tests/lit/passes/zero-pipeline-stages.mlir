// Two balanced stages of two 16x16 layers each (the bias in front of the
// first layer makes stage 0's backward compute its input gradient too), M
// micro-batches: the bubble planned from the matmul FLOPs is
// (P - 1) / (M + P - 1) of the step, for 1F1B and GPipe alike.
// RUN: zero-opt %s --zero-accumulate=steps=2 --zero-autodiff --zero-optimizer \
// RUN:   --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=2' \
// RUN:   | FileCheck %s --check-prefixes=CHECK,M2
// RUN: zero-opt %s --zero-accumulate=steps=4 --zero-autodiff --zero-optimizer \
// RUN:   --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=4 schedule=gpipe' \
// RUN:   | FileCheck %s --check-prefixes=GPIPE,M4
// RUN: zero-opt %s --zero-accumulate=steps=4 --zero-autodiff --zero-optimizer \
// RUN:   --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=4' \
// RUN:   | FileCheck %s --check-prefixes=ONEF,M4
// RUN: zero-opt %s --zero-autodiff --zero-optimizer --zero-sbp-propagation \
// RUN:   --zero-pipeline-stages='stages=2' --zero-partition \
// RUN:   | FileCheck %s --check-prefix=LOCAL
// RUN: zero-opt %s --zero-autodiff --zero-optimizer --zero-sbp-propagation \
// RUN:   --zero-pipeline-stages='stages=2' --zero-partition --zero-schedule \
// RUN:   | FileCheck %s --check-prefix=SUNK

// Stage 1 runs on ranks 2 and 3, the same 1-D grid.
// CHECK-DAG: #[[S0:.*]] = #sbp.placement<cpu, [0, 1]>
// CHECK-DAG: #[[S1:.*]] = #sbp.placement<cpu, [2, 3]>
// M2: zero.pipeline = {bubble = {{0\.3333333333333[0-9]*}} : f64, micro_batches = 2 : i64, schedule = "1f1b"
// M4: zero.pipeline = {bubble = {{0\.1999999999999[0-9]*|2\.0*e-01}} : f64, micro_batches = 4 : i64
// The variables live on their stage; the labels where the loss reads them.
// CHECK-DAG: nn.input "labels" {zero.pipeline_stage = 1 : i64} : tensor<16xi64, #sbp.global<[S(0)], #[[S1]], input>>
// CHECK-DAG: nn.variable "w0" {{.*}}zero.pipeline_stage = 0 : i64{{.*}}#[[S0]], param>>
// CHECK-DAG: nn.variable "w3" {{.*}}zero.pipeline_stage = 1 : i64{{.*}}#[[S1]], param>>
// Each micro-batch's activation crosses forward, its gradient backward,
// and the loss comes back to the first stage.
// CHECK-DAG: sbp.cast %{{.*}} {zero.micro_batch = 0 : i64, zero.pipeline_stage = 0 : i64} : tensor<8x16xf32, #sbp.global<[S(0)], #[[S0]]>> to tensor<8x16xf32, #sbp.global<[S(0)], #[[S1]]>>
// CHECK-DAG: sbp.cast %{{.*}} {zero.micro_batch = 1 : i64, zero.pipeline_stage = 1 : i64} : tensor<8x16xf32, #sbp.global<[S(0)], #[[S1]]>> to tensor<8x16xf32, #sbp.global<[S(0)], #[[S0]]>>
// CHECK-DAG: %[[LOSS:.*]] = sbp.cast %{{.*}} {zero.pipeline_stage = 1 : i64} : tensor<f32, #sbp.global<[B], #[[S1]]>> to tensor<f32, #sbp.global<[B], #[[S0]]>>
// CHECK: return %[[LOSS]]

// 1F1B on stage 0 with 4 micro-batches: one forward ahead, then one
// backward per forward. The backward of micro-batch 0 (its first weight
// gradient) comes before the forward of micro-batch 2.
// (A forward product has transpose_rhs, a weight gradient transpose_lhs.)
// ONEF: nn.matmul {{.*}}{transpose_rhs, zero.micro_batch = 1 : i64, zero.pipeline_stage = 0
// ONEF: nn.matmul {{.*}}{transpose_lhs, zero.micro_batch = 0 : i64, zero.pipeline_stage = 0
// ONEF: nn.matmul {{.*}}{transpose_rhs, zero.micro_batch = 2 : i64, zero.pipeline_stage = 0
// A weight gradient's running total takes micro-batch 1's contribution
// right after it is made, not after the whole backward.
// ONEF: %[[DW:.*]] = nn.matmul {{.*}}{transpose_lhs, zero.micro_batch = 1 : i64, zero.pipeline_stage = 0
// ONEF-NEXT: nn.add %{{.*}}, %[[DW]] {zero.grad_sum, zero.micro_batch = 1 : i64, zero.pipeline_stage = 0
// GPipe runs every forward first.
// GPIPE: nn.matmul {{.*}}{transpose_rhs, zero.micro_batch = 3 : i64, zero.pipeline_stage = 0
// GPIPE: nn.matmul {{.*}}{transpose_lhs, zero.micro_batch = 0 : i64, zero.pipeline_stage = 0

// LOCAL: %[[ACT:.*]] = sbp.send %{{.*}} from stage 0 to stage 1 {zero.pipeline_stage = 0 : i64} : tensor<8x16xf32> -> !sbp.future<tensor<8x16xf32>>
// LOCAL: sbp.recv %[[ACT]] {zero.pipeline_stage = 1 : i64}
// LOCAL: %[[GRAD:.*]] = sbp.send %{{.*}} from stage 1 to stage 0 {zero.pipeline_stage = 1 : i64} : tensor<8x16xf32>
// LOCAL: %[[LOSS:.*]] = sbp.send %{{.*}} from stage 1 to stage 0 {zero.pipeline_stage = 1 : i64} : tensor<f32>
// LOCAL: sbp.recv %[[LOSS]] {zero.pipeline_stage = 0 : i64}

// zero-schedule receives the activation right before its first reader on
// stage 1, after the send that stage 0 made when it computed it.
// SUNK: %[[ACT:.*]] = sbp.send %{{.*}} from stage 0 to stage 1
// SUNK: nn.variable "w2"
// SUNK: %[[X:.*]] = sbp.recv %[[ACT]]
// SUNK-NEXT: nn.matmul %[[X]]

#p = #sbp.placement<cpu, [0, 1]>
func.func @stages() -> tensor<f32> {
  %x = nn.input "x" : tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>
  %labels = nn.input "labels" : tensor<16xi64, #sbp.global<[S(0)], #p, input>>
  %b0 = nn.variable "b0" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16xf32, #sbp.global<[B], #p, param>>
  %h0 = nn.bias_add %x, %b0 {zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %w0 = nn.variable "w0" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m0 = nn.matmul %h0, %w0 {transpose_rhs, zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %r0 = nn.relu %m0 {zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %w1 = nn.variable "w1" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m1 = nn.matmul %r0, %w1 {transpose_rhs, zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %w2 = nn.variable "w2" param init = uniform(0.25) {zero.pipeline_stage = 1 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m2 = nn.matmul %m1, %w2 {transpose_rhs, zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %r2 = nn.relu %m2 {zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %w3 = nn.variable "w3" param init = uniform(0.25) {zero.pipeline_stage = 1 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m3 = nn.matmul %r2, %w3 {transpose_rhs, zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %loss = nn.cross_entropy %m3, %labels {zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %loss : tensor<f32>
}
