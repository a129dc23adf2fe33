// RUN: zero-opt %s -split-input-file -zero-sbp-propagation | FileCheck %s

// Tensor parallelism (docs/design.md#tensor-parallelism): on a [dp, tp]
// placement a parameter captured split on the model axis stays split, and
// the activations move to it. Gathering the small weight would send fewer
// bytes here, and a greedy choice made it; the batch is gathered over the
// model axis instead, once for both column-parallel layers that read it.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @weights_stay() -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0), S(0)], #p, input>>
  %w1 = nn.variable "w1" param : tensor<4x6xf32, #sbp.global<[B, S(0)], #p, param>>
  %w2 = nn.variable "w2" param : tensor<4x6xf32, #sbp.global<[B, S(0)], #p, param>>
  %h1 = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0), S(0)], #p, input>>, tensor<4x6xf32, #sbp.global<[B, S(0)], #p, param>>) -> tensor<8x4xf32>
  %h2 = nn.matmul %x, %w2 {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0), S(0)], #p, input>>, tensor<4x6xf32, #sbp.global<[B, S(0)], #p, param>>) -> tensor<8x4xf32>
  return %h1, %h2 : tensor<8x4xf32>, tensor<8x4xf32>
}
// CHECK-LABEL: func.func @weights_stay()
// CHECK: %[[X:.*]] = nn.input "x"
// CHECK: %[[W1:.*]] = nn.variable "w1"
// CHECK: %[[W2:.*]] = nn.variable "w2"
// CHECK-NOT: sbp.cast %[[W1]]
// CHECK-NOT: sbp.cast %[[W2]]
// CHECK: %[[XB:.*]] = sbp.cast %[[X]] : {{.*}} to tensor<8x6xf32, #sbp.global<[S(0), B], #{{.*}}, input>>
// CHECK-NEXT: nn.matmul %[[XB]], %[[W1]] {transpose_rhs} : {{.*}} -> tensor<8x4xf32, #sbp.global<[S(0), S(1)], #{{.*}}>>
// CHECK-NOT: sbp.cast %[[X]]
// CHECK: nn.matmul %[[XB]], %[[W2]] {transpose_rhs} : {{.*}} -> tensor<8x4xf32, #sbp.global<[S(0), S(1)], #{{.*}}>>

// -----

// On a model axis a signature that leaves a partial sum owes the
// reduce-scatter that ends it. The weight gradient is computed on the
// column-parallel split it is applied to, from the gathered input, rather
// than summed over the model axis in full after a cheaper all-to-all of
// the output gradient.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @partial_sum_debt() -> tensor<8x16xf32> {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0), S(0)], #p, input>>
  %w = nn.variable "w" param : tensor<16x6xf32, #sbp.global<[B, S(0)], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0), S(0)], #p, input>>, tensor<16x6xf32, #sbp.global<[B, S(0)], #p, param>>) -> tensor<8x16xf32>
  %dw = nn.matmul %h, %x {transpose_lhs} : (tensor<8x16xf32>, tensor<8x6xf32, #sbp.global<[S(0), S(0)], #p, input>>) -> tensor<16x6xf32>
  nn.gradient "w", %dw : tensor<16x6xf32>
  return %h : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @partial_sum_debt()
// CHECK: %[[H:.*]] = nn.matmul {{.*}} -> tensor<8x16xf32, #sbp.global<[S(0), S(1)], #{{.*}}>>
// CHECK: %[[DW:.*]] = nn.matmul %[[H]], %{{.*}} {transpose_lhs} : (tensor<8x16xf32, #sbp.global<[S(0), S(1)], #{{.*}}>>, tensor<8x6xf32, #sbp.global<[S(0), B], #{{.*}}, input>>) -> tensor<16x6xf32, #sbp.global<[P(sum), S(0)], #{{.*}}>>
// CHECK: nn.gradient "w", %[[DW]]

// -----

// A row-parallel output is a partial sum over the model axis; the layer
// norm reads it whole rather than split on the batch, whose one row per
// data-parallel rank would leave a model rank nothing.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @fill_every_rank() -> tensor<2x4xf32> {
  %x = nn.input "x" : tensor<2x8xf32, #sbp.global<[S(0), S(1)], #p, input>>
  %w = nn.variable "w" param : tensor<4x8xf32, #sbp.global<[B, S(1)], #p, param>>
  %g = nn.variable "g" param : tensor<4xf32, #sbp.global<[B, B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<2x8xf32, #sbp.global<[S(0), S(1)], #p, input>>, tensor<4x8xf32, #sbp.global<[B, S(1)], #p, param>>) -> tensor<2x4xf32>
  %n = nn.layer_norm %h, %g, %g : (tensor<2x4xf32>, tensor<4xf32, #sbp.global<[B, B], #p, param>>, tensor<4xf32, #sbp.global<[B, B], #p, param>>) -> tensor<2x4xf32>
  return %n : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @fill_every_rank()
// CHECK: %[[H:.*]] = nn.matmul {{.*}} -> tensor<2x4xf32, #sbp.global<[S(0), P(sum)], #{{.*}}>>
// CHECK: %[[HB:.*]] = sbp.cast %[[H]] : {{.*}} to tensor<2x4xf32, #sbp.global<[S(0), B], #{{.*}}>>
// CHECK: nn.layer_norm %[[HB]], {{.*}} -> tensor<2x4xf32, #sbp.global<[S(0), B], #{{.*}}>>

// -----

// A cross entropy on logits split by class (a vocabulary-parallel LM head)
// is computed where they lie: each row's max is a P(max) over the model
// axis, its sum of exponentials and its label's logit P(sum)s, and only
// those rows cross the model axis, never the logits. The gradient reuses
// the forward's rows and comes out split as the logits.
#p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @vocab_parallel_loss() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0), B], #p, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0), B], #p, input>>
  %w = nn.variable "w" param : tensor<10x6xf32, #sbp.global<[B, S(0)], #p, param>>
  %z = nn.matmul %x, %w {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0), B], #p, input>>, tensor<10x6xf32, #sbp.global<[B, S(0)], #p, param>>) -> tensor<8x10xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x10xf32>, tensor<8xi64, #sbp.global<[S(0), B], #p, input>>) -> tensor<f32>
  %one = nn.fill 1.0 {zero.loss_seed} : tensor<f32>
  %dz = nn.cross_entropy_grad %one, %z, %y : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64, #sbp.global<[S(0), B], #p, input>>) -> tensor<8x10xf32>
  %dw = nn.matmul %dz, %x {transpose_lhs} : (tensor<8x10xf32>, tensor<8x6xf32, #sbp.global<[S(0), B], #p, input>>) -> tensor<10x6xf32>
  nn.gradient "w", %dw : tensor<10x6xf32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @vocab_parallel_loss()
// CHECK: %[[Z:.*]] = nn.matmul {{.*}} -> tensor<8x10xf32, #sbp.global<[S(0), S(1)], #{{.*}}>>
// CHECK-NOT: sbp.cast %[[Z]]
// CHECK-NOT: nn.cross_entropy %
// CHECK: %[[MAX:.*]] = nn.cross_entropy_max %[[Z]] : {{.*}} -> tensor<8xf32, #sbp.global<[S(0), P(max)], #{{.*}}>>
// CHECK: %[[MAXB:.*]] = sbp.cast %[[MAX]] : {{.*}} to tensor<8xf32, #sbp.global<[S(0), B], #{{.*}}>>
// CHECK: %[[SUM:.*]], %[[LABEL:.*]] = nn.cross_entropy_sums %[[Z]], %[[MAXB]], %{{.*}} : {{.*}} -> (tensor<8xf32, #sbp.global<[S(0), P(sum)], #{{.*}}>>, tensor<8xf32, #sbp.global<[S(0), P(sum)], #{{.*}}>>)
// CHECK: nn.cross_entropy_loss {{.*}} -> tensor<f32, #sbp.global<[P(sum), {{.*}}]
// CHECK-NOT: nn.cross_entropy_max
// CHECK: %[[SUMB:.*]] = sbp.cast %[[SUM]] : {{.*}} to tensor<8xf32, #sbp.global<[S(0), B], #{{.*}}>>
// CHECK: %[[DZ:.*]] = nn.cross_entropy_split_grad %{{.*}}, %[[Z]], %[[MAXB]], %[[SUMB]], %{{.*}} : {{.*}} -> tensor<8x10xf32, #sbp.global<[S(0), S(1)], #{{.*}}>>
// CHECK-NOT: sbp.cast %[[Z]]
// CHECK: nn.matmul %[[DZ]], {{.*}} {transpose_lhs} : {{.*}} -> tensor<10x6xf32, #sbp.global<[P(sum), S(0)], #{{.*}}>>
