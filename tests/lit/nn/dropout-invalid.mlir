// RUN: zero-opt %s -split-input-file -verify-diagnostics

// nn.dropout's attributes must fit the Philox counter of docs/compiler.md
// ("Dropout"): p in [0, 1), a 32-bit stream, a 16-bit micro-batch, fewer
// than 2^48 global elements.

func.func @p_one(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op p must lie in [0, 1), got 1}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 1.0 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return
}

// -----

func.func @p_negative(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op p must lie in [0, 1), got -0.25}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = -0.25 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return
}

// -----

func.func @p_nan(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op p must lie in [0, 1), got nan}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 0x7FF8000000000000 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return
}

// -----

func.func @stream_too_large(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op stream must lie in [0, 2^32), got 4294967296}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 0.5 : f64, seed = 0 : i64, stream = 4294967296 : i64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return
}

// -----

func.func @micro_batch_too_large(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op micro_batch must lie in [0, 2^16), got 65536}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 0.5 : f64, seed = 0 : i64, stream = 0 : i64, micro_batch = 65536 : i64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return
}

// -----

func.func @too_many_elements(%x: tensor<16777216x16777216xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op the global shape [16777216, 16777216] must hold fewer than 2^48 elements}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 0.5 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<16777216x16777216xf32>, tensor<i64>) -> tensor<16777216x16777216xf32>
  return
}

// -----

func.func @global_shape_rank(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op global_shape [32] does not have the input's rank}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 0.5 : f64, seed = 0 : i64, stream = 0 : i64, global_shape = array<i64: 32>} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return
}

// -----

func.func @split_dims_range(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op split_dims entry 2 is neither -1 nor a dim of the input}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 0.5 : f64, seed = 0 : i64, stream = 0 : i64, split_dims = array<i64: 2>} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return
}

// -----

func.func @step_not_i64(%x: tensor<8x16xf32>, %s: tensor<i32>) {
  // expected-error@+1 {{'nn.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0 = nn.dropout %x, %s {p = 0.5 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<8x16xf32>, tensor<i32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @result_type(%x: tensor<8x16xf32>, %s: tensor<i64>) {
  // expected-error@+2 {{'nn.dropout' op inferred type(s) 'tensor<8x16xf32>' are incompatible with return type(s) of operation 'tensor<8x16xbf16>'}}
  // expected-error@+1 {{'nn.dropout' op failed to infer returned types}}
  %0 = nn.dropout %x, %s {p = 0.5 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xbf16>
  return
}
