// RUN: zero-opt %s -split-input-file -verify-diagnostics

// nn.matmul_bias and nn.matmul_bias_gelu check the product as nn.matmul does
// and the bias against the result's last dim (docs/ir.md).

func.func @rank(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>) {
  // expected-error@+2 {{'nn.matmul_bias' op operands must be 2-D, got ranks 3 and 2}}
  // expected-error@+1 {{'nn.matmul_bias' op failed to infer returned types}}
  %0 = nn.matmul_bias %a, %b, %c : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @contracting(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<16xf32>) {
  // expected-error@+2 {{'nn.matmul_bias_gelu' op contracting dims differ: lhs has 8, rhs has 16}}
  // expected-error@+1 {{'nn.matmul_bias_gelu' op failed to infer returned types}}
  %0, %1 = nn.matmul_bias_gelu %a, %b, %c : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @bias_length(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<8xf32>) {
  // expected-error@+2 {{'nn.matmul_bias' op bias must be 1-D of the result's last dim 16, got [8]}}
  // expected-error@+1 {{'nn.matmul_bias' op failed to infer returned types}}
  %0 = nn.matmul_bias %a, %b, %c {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @bias_type(%a: tensor<4x8xbf16>, %b: tensor<16x8xbf16>, %c: tensor<16xf32>) {
  // expected-error@+2 {{'nn.matmul_bias_gelu' op lhs and bias have different element types ('bf16' vs 'f32')}}
  // expected-error@+1 {{'nn.matmul_bias_gelu' op failed to infer returned types}}
  %0, %1 = nn.matmul_bias_gelu %a, %b, %c {transpose_rhs} : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
  return
}

// -----

// nn.matmul_add's addend has the product's shape and element type.
func.func @addend_shape(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16x4xf32>) {
  // expected-error@+2 {{'nn.matmul_add' op addend must have the product's shape [4, 16], got [16, 4]}}
  // expected-error@+1 {{'nn.matmul_add' op failed to infer returned types}}
  %0 = nn.matmul_add %a, %b, %c : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @addend_type(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<4x16xf32>) {
  // expected-error@+2 {{'nn.matmul_add' op lhs and addend have different element types ('bf16' vs 'f32')}}
  // expected-error@+1 {{'nn.matmul_add' op failed to infer returned types}}
  %0 = nn.matmul_add %a, %b, %c : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xf32>) -> tensor<4x16xbf16>
  return
}
