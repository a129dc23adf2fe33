// RUN: zero-opt %s -split-input-file -verify-diagnostics

// nn.quantize and nn.dequantize refuse what the kernels could not run.

func.func @zero_block(%x: tensor<8xf32>) {
  // expected-error@+2 {{'nn.quantize' op block_size must be at least 1, got 0}}
  // expected-error@+1 {{'nn.quantize' op failed to infer returned types}}
  %c, %s = nn.quantize %x {block_size = 0 : i64} : (tensor<8xf32>) -> (tensor<8xi8>, tensor<8xf32>)
  return
}

// -----

func.func @three_bits(%x: tensor<8xf32>) {
  // expected-error@+2 {{'nn.quantize' op bits must be 8 or 4, got 3}}
  // expected-error@+1 {{'nn.quantize' op failed to infer returned types}}
  %c, %s = nn.quantize %x {block_size = 2 : i64, bits = 3 : i64} : (tensor<8xf32>) -> (tensor<3xi8>, tensor<4xf32>)
  return
}

// -----

func.func @odd_block_at_four_bits(%x: tensor<8xf32>) {
  // expected-error@+2 {{'nn.quantize' op 4-bit codes need an even block_size, got 3}}
  // expected-error@+1 {{'nn.quantize' op failed to infer returned types}}
  %c, %s = nn.quantize %x {block_size = 3 : i64, bits = 4 : i64} : (tensor<8xf32>) -> (tensor<4xi8>, tensor<3xf32>)
  return
}

// -----

func.func @codes_of_another_count(%c: tensor<10xi8>, %s: tensor<2xf32>) {
  // expected-error@+2 {{'nn.dequantize' op codes and scales of 10 and 2 elements are not those of 12 elements (12 and 2)}}
  // expected-error@+1 {{'nn.dequantize' op failed to infer returned types}}
  %r = nn.dequantize %c, %s {block_size = 8 : i64, shape = array<i64: 3, 4>, dtype = f32} : (tensor<10xi8>, tensor<2xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @integer_result(%c: tensor<12xi8>, %s: tensor<2xf32>) {
  // expected-error@+1 {{'nn.dequantize' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<12xi32>'}}
  %r = nn.dequantize %c, %s {block_size = 8 : i64, shape = array<i64: 12>, dtype = i32} : (tensor<12xi8>, tensor<2xf32>) -> tensor<12xi32>
  return
}

// -----

func.func @float_codes(%x: tensor<8xf32>) {
  // expected-error@+1 {{'nn.dequantize' op operand #0 must be statically shaped tensor of 8-bit signless integer values}}
  %r = nn.dequantize %x, %x {block_size = 8 : i64, shape = array<i64: 8>, dtype = f32} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}
