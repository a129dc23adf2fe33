// RUN: zero-opt %s -split-input-file -zero-fuse-epilogues | FileCheck %s

// GPT-2's MLP: c_fc's matmul, bias and GELU become one matmul_bias_gelu,
// c_proj's matmul and bias one matmul_bias; the checkpoint segment mark of
// the last fused op carries over, and nothing else changes.
// CHECK-LABEL: func.func @mlp
// CHECK-NEXT: %[[H:.*]], %[[PRE:.*]] = nn.matmul_bias_gelu %arg0, %arg1, %arg2 {transpose_rhs, zero.checkpoint = 1 : i64} : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)
// CHECK-NEXT: %[[Y:.*]] = nn.matmul_bias %[[H]], %arg3, %arg4 {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: %[[R:.*]] = nn.add %arg0, %[[Y]]
// CHECK-NEXT: return %[[R]]
func.func @mlp(%x: tensor<8x4xf32>, %w1: tensor<16x4xf32>, %b1: tensor<16xf32>, %w2: tensor<4x16xf32>, %b2: tensor<4xf32>) -> tensor<8x4xf32> {
  %m = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %z = nn.bias_add %m, %b1 : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %h = nn.gelu %z {zero.checkpoint = 1 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %n = nn.matmul %h, %w2 {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %y = nn.bias_add %n, %b2 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %r = nn.add %x, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// A biased value read twice keeps its GELU apart (matmul_bias only); a
// product read elsewhere and a batched
// product stay as they are.
// CHECK-LABEL: func.func @partial
// CHECK-NEXT: %[[Z:.*]] = nn.matmul_bias %arg0, %arg1, %arg2 {transpose_lhs}
// CHECK-NEXT: nn.gelu %[[Z]]
// CHECK-NEXT: %[[M:.*]] = nn.matmul %arg0, %arg1 {transpose_lhs}
// CHECK-NEXT: nn.bias_add %[[M]], %arg2
// CHECK-NEXT: nn.batch_matmul
// CHECK-NEXT: nn.bias_add
func.func @partial(%a: tensor<4x8xbf16>, %b: tensor<4x16xbf16>, %c: tensor<16xbf16>, %q: tensor<2x8x4xbf16>, %d: tensor<8xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<2x8x8xbf16>) {
  %m = nn.matmul %a, %b {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x16xbf16>) -> tensor<8x16xbf16>
  %z = nn.bias_add %m, %c : (tensor<8x16xbf16>, tensor<16xbf16>) -> tensor<8x16xbf16>
  %g = nn.gelu %z : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %m2 = nn.matmul %a, %b {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x16xbf16>) -> tensor<8x16xbf16>
  %z2 = nn.bias_add %m2, %c : (tensor<8x16xbf16>, tensor<16xbf16>) -> tensor<8x16xbf16>
  %s = nn.batch_matmul %q, %q {transpose_rhs} : (tensor<2x8x4xbf16>, tensor<2x8x4xbf16>) -> tensor<2x8x8xbf16>
  %t = nn.bias_add %s, %d : (tensor<2x8x8xbf16>, tensor<8xbf16>) -> tensor<2x8x8xbf16>
  return %z, %g, %m2, %z2, %t : tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<2x8x8xbf16>
}
