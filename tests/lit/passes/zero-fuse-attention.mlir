// RUN: zero-opt %s -split-input-file -zero-fuse-attention | FileCheck %s

// GPT-2's chain: scores, the 1/sqrt(d) scale (here two scales, multiplied),
// a causal softmax and the values become one nn.attention; the
// checkpoint segment mark carries over.
// CHECK-LABEL: func.func @gpt2
// CHECK-NOT: nn.batch_matmul
// CHECK-NOT: nn.softmax
// CHECK: %[[Y:.*]], %[[LSE:.*]] = nn.attention %arg0, %arg1, %arg2 {causal, scale = 2.500000e-01 : f64, zero.checkpoint = 0 : i64} : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> (tensor<2x3x8x4xf32>, tensor<2x3x8xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @gpt2(%q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>, %v: tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32> {
  %s = nn.batch_matmul %q, %k {transpose_rhs} : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x8xf32>
  %a = nn.scale %s {factor = 0.5 : f64} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %b = nn.scale %a {factor = 0.5 : f64} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %p = nn.softmax %b {causal} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %y = nn.batch_matmul %p, %v {zero.checkpoint = 0 : i64} : (tensor<2x3x8x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
  return %y : tensor<2x3x8x4xf32>
}

// -----

// Without a scale or a mask, with fewer queries than keys and a value width
// of its own, in bf16.
// CHECK-LABEL: func.func @cross
// CHECK: nn.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64} : (tensor<4x2x8xbf16>, tensor<4x6x8xbf16>, tensor<4x6x3xbf16>) -> (tensor<4x2x3xbf16>, tensor<4x2xf32>)
func.func @cross(%q: tensor<4x2x8xbf16>, %k: tensor<4x6x8xbf16>, %v: tensor<4x6x3xbf16>) -> tensor<4x2x3xbf16> {
  %s = nn.batch_matmul %q, %k {transpose_rhs} : (tensor<4x2x8xbf16>, tensor<4x6x8xbf16>) -> tensor<4x2x6xbf16>
  %p = nn.softmax %s : (tensor<4x2x6xbf16>) -> tensor<4x2x6xbf16>
  %y = nn.batch_matmul %p, %v : (tensor<4x2x6xbf16>, tensor<4x6x3xbf16>) -> tensor<4x2x3xbf16>
  return %y : tensor<4x2x3xbf16>
}

// -----

// The probabilities are returned (attention weights a user asked for): they
// must exist, so nothing fuses.
// CHECK-LABEL: func.func @weights_returned
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
func.func @weights_returned(%q: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x8xf32>) {
  %s = nn.batch_matmul %q, %q {transpose_rhs} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %p = nn.softmax %s {causal} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y = nn.batch_matmul %p, %q : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %y, %p : tensor<2x8x4xf32>, tensor<2x8x8xf32>
}

// -----

// Scores read twice, a softmax over the query axis, k not transposed, v
// transposed: none of these is attention as nn.attention computes it.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: nn.attention
func.func @not_attention(%q: tensor<2x8x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) {
  %s0 = nn.batch_matmul %q, %q {transpose_rhs} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p0 = nn.softmax %s0 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y0 = nn.batch_matmul %p0, %q : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s1 = nn.batch_matmul %q, %q {transpose_rhs} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p1 = nn.softmax %s1 {axis = 1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y1 = nn.batch_matmul %p1, %q : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s2 = nn.batch_matmul %q, %q : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p2 = nn.softmax %s2 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y2 = nn.batch_matmul %p2, %q : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s3 = nn.batch_matmul %q, %q {transpose_rhs} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p3 = nn.softmax %s3 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y3 = nn.batch_matmul %p3, %q {transpose_rhs} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %y0, %s0, %y1, %y2, %y3 : tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>
}
