// RUN: zero-opt %s -zero-fold-transposes | FileCheck %s

// A transpose of a matmul operand's two axes becomes the matmul's flag, and
// the transpose goes once nothing reads it.
// CHECK-LABEL: func.func @head
// CHECK-NOT: nn.transpose
// CHECK: %[[Y:.*]] = nn.matmul %arg0, %arg1 {transpose_rhs}
// A flag already set flips off.
// CHECK-NEXT: %[[Z:.*]] = nn.matmul %[[Y]], %arg1 :
// Both operands at once.
// CHECK-NEXT: nn.matmul %arg1, %arg0 {transpose_rhs} :
func.func @head(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<4x8xf32>, tensor<16x4xf32>) {
  %wt = nn.transpose %w {permutation = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = nn.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = nn.matmul %y, %wt {transpose_rhs} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %xt = nn.transpose %x {permutation = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %u = nn.matmul %wt, %xt {transpose_lhs} : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  return %y, %z, %u : tensor<4x16xf32>, tensor<4x8xf32>, tensor<16x4xf32>
}

// batch_matmul folds a transpose of the last two axes only; a transpose
// that moves a batch axis stays, and so does one that something else reads.
// CHECK-LABEL: func.func @batched
// CHECK: %[[KEEP:.*]] = nn.transpose %arg1 {permutation = array<i64: 0, 2, 1>}
// CHECK-NEXT: %[[MOVE:.*]] = nn.transpose %arg1 {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: nn.batch_matmul %arg0, %arg1 {transpose_rhs}
// CHECK-NEXT: nn.batch_matmul %[[MOVE]], %[[MOVE]] {transpose_rhs}
// CHECK-NEXT: nn.relu %[[KEEP]]
// Other ops without users stay: the pass removes only what it unlinked.
// CHECK-NEXT: nn.tanh %arg0
func.func @batched(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>) -> (tensor<2x4x4xf32>, tensor<4x2x2xf32>, tensor<2x8x4xf32>) {
  %kt = nn.transpose %k {permutation = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %km = nn.transpose %k {permutation = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  %s = nn.batch_matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %r = nn.batch_matmul %km, %km {transpose_rhs} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x2xf32>
  %a = nn.relu %kt : (tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dead = nn.tanh %q : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %s, %r, %a : tensor<2x4x4xf32>, tensor<4x2x2xf32>, tensor<2x8x4xf32>
}
