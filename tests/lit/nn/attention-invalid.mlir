// RUN: zero-opt %s -split-input-file -verify-diagnostics

// nn.attention and nn.attention_grad check q, k and v against each other
// (docs/ir.md), then report the generic "failed to infer returned types".

func.func @rank_two(%q: tensor<4x8xf32>) {
  // expected-error@+2 {{'nn.attention' op q, k and v must have the same rank of at least 3, got 2, 2 and 2}}
  // expected-error@+1 {{'nn.attention' op failed to infer returned types}}
  %y, %lse = nn.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @mixed_types(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xbf16>) {
  // expected-error@+2 {{'nn.attention' op q and k have different element types ('f32' vs 'bf16')}}
  // expected-error@+1 {{'nn.attention' op failed to infer returned types}}
  %y, %lse = nn.attention %q, %k, %q {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @batch_dims(%q: tensor<2x4x8xf32>, %k: tensor<3x4x8xf32>) {
  // expected-error@+2 {{'nn.attention' op batch dims differ: q [2], k [3], v [2]}}
  // expected-error@+1 {{'nn.attention' op failed to infer returned types}}
  %y, %lse = nn.attention %q, %k, %q {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<3x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @head_dims(%q: tensor<2x4x8xf32>, %k: tensor<2x4x16xf32>) {
  // expected-error@+2 {{'nn.attention' op q and k head dims differ: 8 vs 16}}
  // expected-error@+1 {{'nn.attention' op failed to infer returned types}}
  %y, %lse = nn.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @key_counts(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x5x8xf32>) {
  // expected-error@+2 {{'nn.attention' op k and v key counts differ: 6 vs 5}}
  // expected-error@+1 {{'nn.attention' op failed to infer returned types}}
  %y, %lse = nn.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x5x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @causal_rectangle(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>) {
  // expected-error@+2 {{'nn.attention' op a causal attention needs as many queries as keys, got 4 and 6}}
  // expected-error@+1 {{'nn.attention' op failed to infer returned types}}
  %y, %lse = nn.attention %q, %k, %k {scale = 1.0 : f64, causal} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @scale_inf(%q: tensor<2x4x8xf32>) {
  // expected-error@+2 {{'nn.attention' op scale must be finite}}
  // expected-error@+1 {{'nn.attention' op failed to infer returned types}}
  %y, %lse = nn.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @lse_type(%q: tensor<2x4x8xbf16>) {
  // expected-error@+1 {{'nn.attention' op result #1 must be statically shaped tensor of 32-bit float values}}
  %y, %lse = nn.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xbf16>)
  return
}

// -----

func.func @grad_lse_shape(%q: tensor<2x4x8xf32>, %lse: tensor<2x5xf32>) {
  // expected-error@+2 {{'nn.attention_grad' op lse shape [2, 5] does not match lse of attention shape [2, 4]}}
  // expected-error@+1 {{'nn.attention_grad' op failed to infer returned types}}
  %dq, %dk, %dv = nn.attention_grad %q, %q, %q, %q, %q, %lse {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x5xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

func.func @grad_output_shape(%q: tensor<2x4x8xf32>, %dy: tensor<2x4x4xf32>, %lse: tensor<2x4xf32>) {
  // expected-error@+2 {{'nn.attention_grad' op grad_output shape [2, 4, 4] does not match result of attention shape [2, 4, 8]}}
  // expected-error@+1 {{'nn.attention_grad' op failed to infer returned types}}
  %dq, %dk, %dv = nn.attention_grad %dy, %q, %q, %q, %q, %lse {scale = 1.0 : f64} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}
