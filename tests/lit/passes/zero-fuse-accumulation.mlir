// RUN: zero-opt %s -split-input-file --zero-fuse-accumulation | FileCheck %s

// Three micro-batches' weight gradients summed in order: the second product
// adds the first, the third adds that total, each at its product's place.
// CHECK-LABEL: func.func @running_total
// CHECK: %[[G0:.*]] = nn.matmul %arg0, %arg1 {transpose_lhs}
// CHECK-NEXT: %[[T1:.*]] = nn.matmul_add %arg2, %arg3, %[[G0]] {transpose_lhs, zero.grad_sum, zero.micro_batch = 1 : i64}
// CHECK-NEXT: %[[R:.*]] = nn.relu
// CHECK-NEXT: %[[T2:.*]] = nn.matmul_add %arg4, %[[R]], %[[T1]] {transpose_lhs, zero.grad_sum, zero.micro_batch = 2 : i64}
// CHECK-NOT: nn.add
// CHECK: return %[[T2]]
func.func @running_total(%a0: tensor<8x4xf32>, %b0: tensor<8x16xf32>, %a1: tensor<8x4xf32>, %b1: tensor<8x16xf32>, %a2: tensor<8x4xf32>, %b2: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %g0 = nn.matmul %a0, %b0 {transpose_lhs} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g1 = nn.matmul %a1, %b1 {transpose_lhs} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = nn.relu %b2 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %s1 = nn.add %g0, %g1 {zero.grad_sum, zero.micro_batch = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g2 = nn.matmul %a2, %r {transpose_lhs} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s2 = nn.add %s1, %g2 {zero.grad_sum, zero.micro_batch = 2 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %s2 : tensor<4x16xf32>
}

// -----

// Left as they are: a sum that is not a gradient's, a product read again,
// a total made after the product, and a sum across pipeline stages.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: nn.matmul_add
// CHECK-COUNT-4: nn.add
// CHECK-NOT: nn.matmul_add
func.func @unfused(%a: tensor<8x4xf32>, %b: tensor<8x16xf32>, %t: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %p0 = nn.matmul %a, %b {transpose_lhs} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s0 = nn.add %t, %p0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %p1 = nn.matmul %a, %b {transpose_lhs} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s1 = nn.add %t, %p1 {zero.grad_sum} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %p2 = nn.matmul %a, %b {transpose_lhs} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %late = nn.relu %t : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %s2 = nn.add %late, %p2 {zero.grad_sum} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %p3 = nn.matmul %a, %b {transpose_lhs, zero.pipeline_stage = 1 : i64} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s3 = nn.add %t, %p3 {zero.grad_sum, zero.pipeline_stage = 0 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %s0, %s1, %p1, %s2, %s3 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}
