// The micro-batch loop: one micro-batch's graph, run 4 times by the
// schedule. Two stages of one layer each.
// RUN: zero-opt %s --zero-accumulate='steps=4 loop' --zero-autodiff \
// RUN:   --zero-optimizer --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=4' | FileCheck %s
// RUN: zero-opt %s --zero-accumulate='steps=4 loop' --zero-autodiff \
// RUN:   --zero-optimizer --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=4' --zero-partition \
// RUN:   --zero-bucketing --zero-schedule --zero-memory-plan \
// RUN:   | FileCheck %s --check-prefix=MEMORY
// RUN: not zero-opt %s --zero-accumulate='steps=2 loop' --zero-autodiff \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=4' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISMATCH

// The chunks in the order one micro-batch runs them, and each stage's
// 1F1B order of [chunk, micro-batch]: stage 0 runs one forward ahead. The
// bubble is the copies' (P - 1)/(M + P - 1) = 0.2.
// CHECK-LABEL: func.func @stages
// CHECK-SAME: zero.micro_batch_loop = 4 : i64
// CHECK-SAME: bubble = {{0\.1999999999999[0-9]*|2\.0*e-01}} : f64
// CHECK-SAME: loop = {chunks = [{model = 0 : i64, phase = "forward", stage = 0 : i64}, {model = 0 : i64, phase = "forward", stage = 1 : i64}, {model = 0 : i64, phase = "backward", stage = 1 : i64}, {model = 0 : i64, phase = "backward", stage = 0 : i64}]
// CHECK-SAME: order = [array<i64: 0, 0, 0, 1, 3, 0, 0, 2, 3, 1, 0, 3, 3, 2, 3, 3>, array<i64: 1, 0, 2, 0, 1, 1, 2, 1, 1, 2, 2, 2, 1, 3, 2, 3>]

// Before the loop: the zero running totals (the loss's, each weight's) and
// the seed scaled by 1/M.
// CHECK: %[[LOSS0:.*]] = nn.fill 0.0{{.*}} {zero.pipeline_stage = 1 : i64}
// CHECK: %[[LOSSP:.*]] = sbp.cast %[[LOSS0]]
// CHECK: nn.scale %{{.*}} {factor = 2.500000e-01 : f64
// CHECK: %[[W0ZERO:.*]] = nn.fill 0.0{{.*}} {zero.pipeline_stage = 0 : i64} : tensor<16x16xf32
// CHECK: %[[W0TOTAL:.*]] = sbp.cast %[[W0ZERO]]
// One copy of the forward: micro-batch 0's slice of the input, whose index
// the loop moves along dim 1.
// CHECK: nn.slice %{{.*}} {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 2, 1, 2, 16>, zero.loop_chunk = 0 : i64, zero.micro_batch = 0 : i64, zero.micro_batch_dim = 1 : i64
// CHECK: nn.matmul %{{.*}} {transpose_rhs, zero.loop_chunk = 0 : i64
// CHECK-NOT: zero.micro_batch = 1
// The activation crosses in the chunk that makes it; stage 1's forward
// receives it.
// CHECK: sbp.cast %{{.*}} {zero.loop_chunk = 0 : i64, zero.loop_receive_chunk = 1 : i64
// CHECK: nn.add %[[LOSSP]], %{{.*}} {zero.loop_carried, zero.loop_chunk = 1 : i64
// Stage 0's weight gradient goes into its running total in its backward.
// CHECK: %[[W0GRAD:.*]] = nn.matmul %{{.*}} {transpose_lhs, zero.loop_chunk = 3 : i64
// CHECK: %[[W0SUM:.*]] = nn.add %[[W0TOTAL]], %[[W0GRAD]] {zero.grad_sum, zero.loop_carried, zero.loop_chunk = 3 : i64
// After the loop: the mean loss and the updates, which read the totals.
// CHECK: nn.scale %{{.*}} {factor = 2.500000e-01 : f64, zero.pipeline_stage = 1 : i64}
// CHECK-NOT: zero.loop_chunk
// CHECK: nn.reshape %[[W0SUM]] {zero.pipeline_stage = 0 : i64}
// CHECK-NOT: zero.loop_chunk
// CHECK: return

// Stage 0 holds two micro-batches' forward activations at once (1F1B
// with one forward ahead): the two buffers its backward reads have two
// copies each, 128 bytes apart.
// MEMORY: zero.micro_slots = array<i64: {{[0-9]+}}, 2, 128, {{[0-9]+}}, 2, 128>

// MISMATCH: zero-pipeline-stages: the graph is a loop of 2 micro-batches, but micro-batches=4

#p = #sbp.placement<cpu, [0, 1]>
func.func @stages() -> tensor<f32> {
  %x = nn.input "x" : tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>
  %labels = nn.input "labels" : tensor<16xi64, #sbp.global<[S(0)], #p, input>>
  %b0 = nn.variable "b0" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16xf32, #sbp.global<[B], #p, param>>
  %h0 = nn.bias_add %x, %b0 {zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %w0 = nn.variable "w0" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m0 = nn.matmul %h0, %w0 {transpose_rhs, zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %r0 = nn.relu %m0 {zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %w2 = nn.variable "w2" param init = uniform(0.25) {zero.pipeline_stage = 1 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m2 = nn.matmul %r0, %w2 {transpose_rhs, zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %loss = nn.cross_entropy %m2, %labels {zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %loss : tensor<f32>
}
