// RUN: zero-opt %s -split-input-file -verify-diagnostics

// An op whose result types are inferred reports what is wrong, then the
// generic "failed to infer returned types" from InferTypeOpInterface.

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

func.func @variable_activation_role() {
  // expected-error@+1 {{'nn.variable' op role 'activation' is not a variable role (param, grad, master, opt_state)}}
  %w = nn.variable "w" activation : tensor<16xf32>
  return
}

// -----

func.func @variable_input_role() {
  // expected-error@+1 {{'nn.variable' op role 'input' is not a variable role (param, grad, master, opt_state)}}
  %w = nn.variable "w" input : tensor<16xf32>
  return
}

// -----

func.func @duplicate_variable_name() {
  %w = nn.variable "fc.weight" param : tensor<16xf32>
  // expected-error@+1 {{'nn.variable' op name 'fc.weight' is already used in this graph}}
  %v = nn.variable "fc.weight" opt_state : tensor<16xf32>
  return
}

// -----

func.func @duplicate_input_name() {
  %x = nn.input "x" : tensor<8x16xf32>
  // expected-error@+1 {{'nn.input' op name 'x' is already used in this graph}}
  %y = nn.input "x" : tensor<8x16xf32>
  return
}

// -----

func.func @empty_variable_name() {
  // expected-error@+1 {{'nn.variable' op needs a non-empty name}}
  %w = nn.variable "" param : tensor<16xf32>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @variable_role_mismatch() {
  // expected-error@+1 {{'nn.variable' op role 'param' differs from the result's 'opt_state'}}
  %w = nn.variable "w" param : tensor<16xf32, #sbp.global<[S(0)], #p, opt_state>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @variable_default_role_mismatch() {
  // The encoding's role defaults to activation.
  // expected-error@+1 {{'nn.variable' op role 'grad' differs from the result's 'activation'}}
  %w = nn.variable "w" grad : tensor<16xf32, #sbp.global<[S(0)], #p>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @input_role_mismatch() {
  // expected-error@+1 {{'nn.input' op result role must be 'input', got 'param'}}
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, param>>
  return
}

// -----

func.func @variable_dynamic_shape() {
  // expected-error@+1 {{'nn.variable' op result #0 must be statically shaped tensor of any type values, but got 'tensor<?x16xf32>'}}
  %w = nn.variable "w" param : tensor<?x16xf32>
  return
}

// -----

func.func @variable_negative_scale() {
  // expected-error@+1 {{'nn.variable' op init_scale must be finite and non-negative, got -0.5}}
  %w = nn.variable "w" param init = normal(-0.5) : tensor<16xf32>
  return
}

// -----

func.func @unknown_initializer() {
  // expected-error@+1 {{unknown initializer 'xavier' (expected zeros, ones, normal, uniform or constant)}}
  %w = nn.variable "w" param init = xavier : tensor<16xf32>
  return
}

// -----

func.func @unknown_variable_role() {
  // expected-error@+1 {{unknown role 'weight' (expected param, grad, master, opt_state, activation or input)}}
  %w = nn.variable "w" weight : tensor<16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

func.func @matmul_contracting_dims(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) {
  // expected-error@+2 {{'nn.matmul' op contracting dims differ: lhs has 16, rhs has 32}}
  // expected-error@+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @matmul_not_2d(%x: tensor<2x8x16xf32>, %w: tensor<16x32xf32>) {
  // expected-error@+2 {{'nn.matmul' op operands must be 2-D, got ranks 3 and 2}}
  // expected-error@+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

func.func @matmul_element_types(%x: tensor<8x16xf32>, %w: tensor<16x32xbf16>) {
  // expected-error@+2 {{'nn.matmul' op lhs and rhs have different element types ('f32' vs 'bf16')}}
  // expected-error@+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xbf16>) -> tensor<8x32xf32>
  return
}

// -----

func.func @batch_matmul_batch_dims(%a: tensor<2x8x16xf32>, %b: tensor<3x16x8xf32>) {
  // expected-error@+2 {{'nn.batch_matmul' op batch dims differ: [2] vs [3]}}
  // expected-error@+1 {{'nn.batch_matmul' op failed to infer returned types}}
  %0 = nn.batch_matmul %a, %b : (tensor<2x8x16xf32>, tensor<3x16x8xf32>) -> tensor<2x8x8xf32>
  return
}

// -----

func.func @matmul_integer(%x: tensor<8x16xi32>) {
  // expected-error@+1 {{'nn.matmul' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<8x16xi32>'}}
  %0 = nn.matmul %x, %x {transpose_rhs} : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x8xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

func.func @add_broadcast(%x: tensor<8x16xf32>, %y: tensor<8x4xf32>) {
  // expected-error@+2 {{'nn.add' op shapes [8, 16] and [8, 4] do not broadcast}}
  // expected-error@+1 {{'nn.add' op failed to infer returned types}}
  %0 = nn.add %x, %y : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @mul_element_types(%x: tensor<8x16xf32>, %y: tensor<8x16xf16>) {
  // expected-error@+2 {{'nn.mul' op lhs and rhs have different element types ('f32' vs 'f16')}}
  // expected-error@+1 {{'nn.mul' op failed to infer returned types}}
  %0 = nn.mul %x, %y : (tensor<8x16xf32>, tensor<8x16xf16>) -> tensor<8x16xf32>
  return
}

// -----

func.func @result_shape_mismatch(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.relu' op inferred type(s) 'tensor<8x16xf32>' are incompatible with return type(s) of operation 'tensor<16x8xf32>'}}
  // expected-error@+1 {{'nn.relu' op failed to infer returned types}}
  %0 = nn.relu %x : (tensor<8x16xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @result_element_type_mismatch(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) {
  // expected-error@+2 {{'nn.matmul' op inferred type(s) 'tensor<8x32xf32>' are incompatible with return type(s) of operation 'tensor<8x32xf16>'}}
  // expected-error@+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf16>
  return
}

// -----

func.func @bias_shape(%x: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{'nn.bias_add' op bias shape [8] must be [last dim of input [8, 16]]}}
  // expected-error@+1 {{'nn.bias_add' op failed to infer returned types}}
  %0 = nn.bias_add %x, %b : (tensor<8x16xf32>, tensor<8xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<8x16xf32>) {
  // expected-error@+1 {{'nn.cast' op changes the shape from 'tensor<8x16xf32>' to 'tensor<16x8xf16>'}}
  %0 = nn.cast %x : tensor<8x16xf32> to tensor<16x8xf16>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>
#q = #sbp.placement<cpu, [2, 3]>

func.func @cast_placement(%x: tensor<8x16xf32, #sbp.global<[B], #p>>) {
  // expected-error@+1 {{'nn.cast' op result #0 is placed on #sbp.placement<cpu, [2, 3]> but operand #0 is on #sbp.placement<cpu, [0, 1]>; insert a placement change first}}
  %0 = nn.cast %x : tensor<8x16xf32, #sbp.global<[B], #p>> to tensor<8x16xf16, #sbp.global<[B], #q>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalization, softmax, embedding, loss
//===----------------------------------------------------------------------===//

func.func @layer_norm_gamma(%x: tensor<8x16xf32>, %g: tensor<8xf32>, %b: tensor<16xf32>) {
  // expected-error@+2 {{'nn.layer_norm' op gamma shape [8] must be [last dim of input [8, 16]]}}
  // expected-error@+1 {{'nn.layer_norm' op failed to infer returned types}}
  %0 = nn.layer_norm %x, %g, %b : (tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @layer_norm_beta(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<1x16xf32>) {
  // expected-error@+2 {{'nn.layer_norm' op beta shape [1, 16] must be [last dim of input [8, 16]]}}
  // expected-error@+1 {{'nn.layer_norm' op failed to infer returned types}}
  %0 = nn.layer_norm %x, %g, %b : (tensor<8x16xf32>, tensor<16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  // expected-error@+2 {{'nn.layer_norm' op epsilon must be positive}}
  // expected-error@+1 {{'nn.layer_norm' op failed to infer returned types}}
  %0 = nn.layer_norm %x, %g, %g {epsilon = 0.0} : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @causal_softmax_not_square(%x: tensor<2x8x16xf32>) {
  // expected-error@+2 {{'nn.softmax' op a causal softmax runs over the last axis of a tensor whose last two dims are equal, got [2, 8, 16]}}
  // expected-error@+1 {{'nn.softmax' op failed to infer returned types}}
  %0 = nn.softmax %x {causal} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @causal_softmax_grad_axis(%dy: tensor<8x8xf32>, %y: tensor<8x8xf32>) {
  // expected-error@+2 {{'nn.softmax_grad' op a causal softmax runs over the last axis of a tensor whose last two dims are equal, got [8, 8]}}
  // expected-error@+1 {{'nn.softmax_grad' op failed to infer returned types}}
  %0 = nn.softmax_grad %dy, %y {axis = 0, causal} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.softmax' op axis 2 is out of range for rank 2}}
  // expected-error@+1 {{'nn.softmax' op failed to infer returned types}}
  %0 = nn.softmax %x {axis = 2} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @softmax_negative_axis(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.softmax' op axis -3 is out of range for rank 2}}
  // expected-error@+1 {{'nn.softmax' op failed to infer returned types}}
  %0 = nn.softmax %x {axis = -3} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @cross_entropy_labels(%logits: tensor<8x100xf32>, %labels: tensor<100xi64>) {
  // expected-error@+2 {{'nn.cross_entropy' op labels shape [100] must be the logits shape without its class axis [8]}}
  // expected-error@+1 {{'nn.cross_entropy' op failed to infer returned types}}
  %0 = nn.cross_entropy %logits, %labels : (tensor<8x100xf32>, tensor<100xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_float_labels(%logits: tensor<8x100xf32>, %labels: tensor<8xf32>) {
  // expected-error@+1 {{'nn.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = nn.cross_entropy %logits, %labels : (tensor<8x100xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_loss_rank(%dloss: tensor<1xf32>, %logits: tensor<8x100xf32>, %labels: tensor<8xi64>) {
  // expected-error@+2 {{'nn.cross_entropy_grad' op grad_loss must be a 0-D f32 tensor (the loss's type), got tensor<1xf32>}}
  // expected-error@+1 {{'nn.cross_entropy_grad' op failed to infer returned types}}
  %0 = nn.cross_entropy_grad %dloss, %logits, %labels : (tensor<1xf32>, tensor<8x100xf32>, tensor<8xi64>) -> tensor<8x100xf32>
  return
}

// -----

// `count`, the number of elements a mean divides by, is positive.
func.func @cross_entropy_count(%logits: tensor<8x100xf32>, %labels: tensor<8xi64>) {
  // expected-error@+2 {{'nn.cross_entropy' op count must be positive, got 0}}
  // expected-error@+1 {{'nn.cross_entropy' op failed to infer returned types}}
  %0 = nn.cross_entropy %logits, %labels {count = 0 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_count(%dloss: tensor<f32>, %logits: tensor<8x100xf32>, %labels: tensor<8xi64>) {
  // expected-error@+2 {{'nn.cross_entropy_grad' op count must be positive, got -8}}
  // expected-error@+1 {{'nn.cross_entropy_grad' op failed to infer returned types}}
  %0 = nn.cross_entropy_grad %dloss, %logits, %labels {count = -8 : i64} : (tensor<f32>, tensor<8x100xf32>, tensor<8xi64>) -> tensor<8x100xf32>
  return
}

// -----

func.func @reduce_mean_count(%x: tensor<8x4xf32>) {
  // expected-error@+2 {{'nn.reduce_mean' op count must be positive, got 0}}
  // expected-error@+1 {{'nn.reduce_mean' op failed to infer returned types}}
  %0 = nn.reduce_mean %x {axes = array<i64: 0>, count = 0 : i64} : (tensor<8x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @embedding_table(%table: tensor<100xf32>, %ids: tensor<8xi64>) {
  // expected-error@+2 {{'nn.embedding' op table must be 2-D (vocab, dim), got [100]}}
  // expected-error@+1 {{'nn.embedding' op failed to infer returned types}}
  %0 = nn.embedding %table, %ids : (tensor<100xf32>, tensor<8xi64>) -> tensor<8xf32>
  return
}

// -----

func.func @embedding_grad_shape(%dy: tensor<8x16xf32>, %ids: tensor<4xi64>) {
  // expected-error@+2 {{'nn.embedding_grad' op grad_output shape [8, 16] must be the ids shape [4] plus a dim}}
  // expected-error@+1 {{'nn.embedding_grad' op failed to infer returned types}}
  %0 = nn.embedding_grad %dy, %ids {vocab_size = 100} : (tensor<8x16xf32>, tensor<4xi64>) -> tensor<100x16xf32>
  return
}

// -----

func.func @embedding_grad_vocab(%dy: tensor<8x16xf32>, %ids: tensor<8xi64>) {
  // expected-error@+2 {{'nn.embedding_grad' op vocab_size must be positive}}
  // expected-error@+1 {{'nn.embedding_grad' op failed to infer returned types}}
  %0 = nn.embedding_grad %dy, %ids {vocab_size = 0} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<0x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

func.func @reshape_count(%x: tensor<8x16xf32>) {
  // expected-error@+1 {{'nn.reshape' op changes the element count from 128 to 120}}
  %0 = nn.reshape %x : tensor<8x16xf32> to tensor<8x15xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<8x16xf32>) {
  // expected-error@+1 {{'nn.reshape' op changes the element type from 'f32' to 'f16'}}
  %0 = nn.reshape %x : tensor<8x16xf32> to tensor<128xf16>
  return
}

// -----

func.func @transpose_permutation(%x: tensor<2x8x16xf32>) {
  // expected-error@+2 {{'nn.transpose' op permutation [0, 2, 0] is not a permutation of the axes}}
  // expected-error@+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x {permutation = array<i64: 0, 2, 0>} : (tensor<2x8x16xf32>) -> tensor<2x16x2xf32>
  return
}

// -----

func.func @transpose_permutation_length(%x: tensor<2x8x16xf32>) {
  // expected-error@+2 {{'nn.transpose' op permutation has 2 entries for a tensor of rank 3}}
  // expected-error@+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x8x16xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @slice_out_of_bounds(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.slice' op axis 1: the window ends past dim 16}}
  // expected-error@+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 8, 8>, strides = array<i64: 1, 2>}
      : (tensor<8x16xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @slice_zero_stride(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.slice' op axis 0: offset and size must be non-negative and the stride positive}}
  // expected-error@+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 16>, strides = array<i64: 0, 1>}
      : (tensor<8x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @split_sizes(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.split' op split sizes add up to 12 but the axis has 16}}
  // expected-error@+1 {{'nn.split' op failed to infer returned types}}
  %0:2 = nn.split %x {axis = 1, sizes = array<i64: 4, 8>} : (tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>)
  return
}

// -----

func.func @concat_mismatch(%x: tensor<8x16xf32>, %y: tensor<4x8xf32>) {
  // expected-error@+2 {{'nn.concat' op inputs differ on axis 1, which is not the concat axis}}
  // expected-error@+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %x, %y {axis = 0} : (tensor<8x16xf32>, tensor<4x8xf32>) -> tensor<12x16xf32>
  return
}

// -----

func.func @concat_rank(%x: tensor<8x16xf32>, %y: tensor<16xf32>) {
  // expected-error@+2 {{'nn.concat' op inputs have different ranks}}
  // expected-error@+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %x, %y {axis = 0} : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<9x16xf32>
  return
}

// -----

func.func @reduce_axis_repeated(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.reduce_sum' op axis 1 is listed twice}}
  // expected-error@+1 {{'nn.reduce_sum' op failed to infer returned types}}
  %0 = nn.reduce_sum %x {axes = array<i64: 1, 1>} : (tensor<8x16xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<8x16xf32>) {
  // expected-error@+2 {{'nn.reduce_mean' op axis 2 is out of range for rank 2}}
  // expected-error@+1 {{'nn.reduce_mean' op failed to infer returned types}}
  %0 = nn.reduce_mean %x {axes = array<i64: 2>} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

func.func @activation_grad_shape(%dy: tensor<8x16xf32>, %x: tensor<8x8xf32>) {
  // expected-error@+2 {{'nn.relu_grad' op grad_output shape [8, 16] does not match saved shape [8, 8]}}
  // expected-error@+1 {{'nn.relu_grad' op failed to infer returned types}}
  %0 = nn.relu_grad %dy, %x : (tensor<8x16xf32>, tensor<8x8xf32>) -> tensor<8x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

func.func @adam_betas(%p: tensor<16xf32>, %step: tensor<i64>) {
  // expected-error@+2 {{'nn.adam' op betas must lie in [0, 1), got (0.9, 1)}}
  // expected-error@+1 {{'nn.adam' op failed to infer returned types}}
  %0:3 = nn.adam %p, %p, %p, %p, %step {lr = 1.0e-3, beta2 = 1.0}
      : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i64>)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @adamw_negative_beta(%p: tensor<16xf32>, %step: tensor<i64>) {
  // expected-error@+2 {{'nn.adamw' op betas must lie in [0, 1), got (-0.1, 0.999)}}
  // expected-error@+1 {{'nn.adamw' op failed to infer returned types}}
  %0:3 = nn.adamw %p, %p, %p, %p, %step {lr = 1.0e-3, beta1 = -0.1}
      : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i64>)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @adam_state_shape(%p: tensor<16xf32>, %m: tensor<8xf32>, %step: tensor<i64>) {
  // expected-error@+2 {{'nn.adam' op param shape [16] does not match exp_avg shape [8]}}
  // expected-error@+1 {{'nn.adam' op failed to infer returned types}}
  %0:3 = nn.adam %p, %p, %m, %p, %step {lr = 1.0e-3}
      : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<i64>)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @adam_step_type(%p: tensor<16xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{'nn.adam' op operand #4 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0:3 = nn.adam %p, %p, %p, %p, %step {lr = 1.0e-3}
      : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @sgd_negative_lr(%p: tensor<16xf32>) {
  // expected-error@+2 {{'nn.sgd' op lr must be finite and non-negative, got -0.01}}
  // expected-error@+1 {{'nn.sgd' op failed to infer returned types}}
  %0 = nn.sgd %p, %p {lr = -0.01} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @sgd_grad_shape(%p: tensor<16xf32>, %g: tensor<16x1xf32>) {
  // expected-error@+2 {{'nn.sgd' op param shape [16] does not match grad shape [16, 1]}}
  // expected-error@+1 {{'nn.sgd' op failed to infer returned types}}
  %0 = nn.sgd %p, %g {lr = 0.1} : (tensor<16xf32>, tensor<16x1xf32>) -> tensor<16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// SBP signatures and placements
//===----------------------------------------------------------------------===//

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @matmul_illegal_sbp(%x: tensor<8x16xf32, #sbp.global<[S(1)], #p>>,
                              %w: tensor<16x32xf32, #sbp.global<[B], #p, param>>) {
  // expected-error@+1 {{'nn.matmul' op SBP signature (S(1), B) -> (S(0)) is not legal on hierarchy axis 0; legal signatures: (S(0), B) -> (S(0)), (B, S(1)) -> (S(1)), (S(1), S(0)) -> (P(sum)), (B, B) -> (B), (P(sum), B) -> (P(sum)), (B, P(sum)) -> (P(sum))}}
  %0 = nn.matmul %x, %w
      : (tensor<8x16xf32, #sbp.global<[S(1)], #p>>, tensor<16x32xf32, #sbp.global<[B], #p, param>>)
      -> tensor<8x32xf32, #sbp.global<[S(0)], #p>>
  return
}

// -----

#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>

// Axis 0 is legal; axis 1 is not.
func.func @relu_illegal_sbp_2d(%x: tensor<8x16xf32, #sbp.global<[S(0), P(sum)], #g>>) {
  // expected-error@+1 {{'nn.relu' op SBP signature (P(sum)) -> (P(sum)) is not legal on hierarchy axis 1; legal signatures: (S(0)) -> (S(0)), (S(1)) -> (S(1)), (B) -> (B)}}
  %0 = nn.relu %x : (tensor<8x16xf32, #sbp.global<[S(0), P(sum)], #g>>)
      -> tensor<8x16xf32, #sbp.global<[S(0), P(sum)], #g>>
  return
}

// -----

#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>

// A reshape keeps a split where both dims divide by the ranks of the axes
// that split: the model axis's 2 here. 6 rows into 3: rank 0 would hold
// rows 0-2 of the input but row 0 of the result (elements 0-7, not 0-11).
func.func @reshape_uneven_parts(%x: tensor<6x4xf32, #sbp.global<[B, S(0)], #g>>) {
  // expected-error@+1 {{'nn.reshape' op SBP signature (S(0)) -> (S(0)) is not legal on hierarchy axis 1; legal signatures: (B) -> (B), (P(sum)) -> (P(sum)), (P(max)) -> (P(max))}}
  %0 = nn.reshape %x : tensor<6x4xf32, #sbp.global<[B, S(0)], #g>>
      to tensor<3x8xf32, #sbp.global<[B, S(0)], #g>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
#q = #sbp.placement<cpu, [4, 5, 6, 7]>

func.func @different_placements(%x: tensor<8x16xf32, #sbp.global<[S(0)], #p>>,
                                %y: tensor<8x16xf32, #sbp.global<[S(0)], #q>>) {
  // expected-error@+1 {{'nn.add' op operand #1 is placed on #sbp.placement<cpu, [4, 5, 6, 7]> but operand #0 is on #sbp.placement<cpu, [0, 1, 2, 3]>; insert a placement change first}}
  %0 = nn.add %x, %y
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>, tensor<8x16xf32, #sbp.global<[S(0)], #q>>)
      -> tensor<8x16xf32, #sbp.global<[S(0)], #p>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
#q = #sbp.placement<cpu, [4, 5, 6, 7]>

func.func @result_on_other_placement(%x: tensor<8x16xf32, #sbp.global<[S(0)], #p>>) {
  // expected-error@+1 {{'nn.gelu' op result #0 is placed on #sbp.placement<cpu, [4, 5, 6, 7]> but operand #0 is on #sbp.placement<cpu, [0, 1, 2, 3]>; insert a placement change first}}
  %0 = nn.gelu %x
      : (tensor<8x16xf32, #sbp.global<[S(0)], #p>>) -> tensor<8x16xf32, #sbp.global<[S(0)], #q>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// A gradient must be reduced before the update reads it.
func.func @sgd_partial_grad(%w: tensor<16xf32, #sbp.global<[B], #p, param>>,
                            %g: tensor<16xf32, #sbp.global<[P(sum)], #p, grad>>) {
  // expected-error@+1 {{'nn.sgd' op SBP signature (B, P(sum)) -> (B) is not legal on hierarchy axis 0; legal signatures: (S(0), S(0)) -> (S(0)), (B, B) -> (B)}}
  %0 = nn.sgd %w, %g {lr = 0.1}
      : (tensor<16xf32, #sbp.global<[B], #p, param>>, tensor<16xf32, #sbp.global<[P(sum)], #p, grad>>)
      -> tensor<16xf32, #sbp.global<[B], #p, param>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @adam_partial_grad(%w: tensor<16xf32, #sbp.global<[S(0)], #p, param>>,
                             %g: tensor<16xf32, #sbp.global<[P(sum)], #p, grad>>,
                             %m: tensor<16xf32, #sbp.global<[S(0)], #p, opt_state>>,
                             %step: tensor<i64, #sbp.global<[B], #p>>) {
  // expected-error@+1 {{'nn.adam' op SBP signature (S(0), P(sum), S(0), S(0), B) -> (S(0), S(0), S(0)) is not legal on hierarchy axis 0; legal signatures: (S(0), S(0), S(0), S(0), B) -> (S(0), S(0), S(0)), (B, B, B, B, B) -> (B, B, B)}}
  %0:3 = nn.adam %w, %g, %m, %m, %step {lr = 1.0e-3}
      : (tensor<16xf32, #sbp.global<[S(0)], #p, param>>, tensor<16xf32, #sbp.global<[P(sum)], #p, grad>>,
         tensor<16xf32, #sbp.global<[S(0)], #p, opt_state>>, tensor<16xf32, #sbp.global<[S(0)], #p, opt_state>>,
         tensor<i64, #sbp.global<[B], #p>>)
      -> (tensor<16xf32, #sbp.global<[S(0)], #p, param>>, tensor<16xf32, #sbp.global<[S(0)], #p, opt_state>>,
          tensor<16xf32, #sbp.global<[S(0)], #p, opt_state>>)
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// A causal softmax cannot split its (query, key) axes.
func.func @causal_softmax_split_key(%x: tensor<8x8xf32, #sbp.global<[S(0)], #p>>) {
  // expected-error@+1 {{'nn.softmax' op SBP signature (S(0)) -> (S(0)) is not legal on hierarchy axis 0; legal signatures: (B) -> (B)}}
  %0 = nn.softmax %x {causal}
      : (tensor<8x8xf32, #sbp.global<[S(0)], #p>>) -> tensor<8x8xf32, #sbp.global<[S(0)], #p>>
  return
}

// -----

// The loss is f32 whatever the logits' precision, so the seed of its
// gradient is too.
func.func @cross_entropy_grad_loss_type(%dloss: tensor<bf16>, %logits: tensor<8x100xbf16>, %labels: tensor<8xi64>) {
  // expected-error@+2 {{'nn.cross_entropy_grad' op grad_loss must be a 0-D f32 tensor (the loss's type), got tensor<bf16>}}
  // expected-error@+1 {{'nn.cross_entropy_grad' op failed to infer returned types}}
  %0 = nn.cross_entropy_grad %dloss, %logits, %labels : (tensor<bf16>, tensor<8x100xbf16>, tensor<8xi64>) -> tensor<8x100xbf16>
  return
}

// -----

func.func @cross_entropy_sums_max(%logits: tensor<8x100xf32>, %max: tensor<100xf32>, %labels: tensor<8xi64>) {
  // expected-error@+2 {{'nn.cross_entropy_sums' op max shape [100] must be the logits shape without its class axis [8]}}
  // expected-error@+1 {{'nn.cross_entropy_sums' op failed to infer returned types}}
  %0:2 = nn.cross_entropy_sums %logits, %max, %labels : (tensor<8x100xf32>, tensor<100xf32>, tensor<8xi64>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @cross_entropy_loss_rows(%max: tensor<8xf32>, %sumexp: tensor<4xf32>) {
  // expected-error@+2 {{'nn.cross_entropy_loss' op sumexp shape [4] must be max's [8]}}
  // expected-error@+1 {{'nn.cross_entropy_loss' op failed to infer returned types}}
  %0 = nn.cross_entropy_loss %max, %sumexp, %max : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_split_grad_split_of(%dloss: tensor<f32>, %logits: tensor<8x100xf32>, %rows: tensor<8xf32>, %labels: tensor<8xi64>) {
  // expected-error@+2 {{'nn.cross_entropy_split_grad' op split_of must be "result", got "operand"}}
  // expected-error@+1 {{'nn.cross_entropy_split_grad' op failed to infer returned types}}
  %0 = nn.cross_entropy_split_grad %dloss, %logits, %rows, %rows, %labels {split_of = "operand"} : (tensor<f32>, tensor<8x100xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi64>) -> tensor<8x100xf32>
  return
}

// -----

func.func @cross_entropy_max_rank(%logits: tensor<100xf32>) {
  // expected-error@+2 {{'nn.cross_entropy_max' op logits must have a batch and a class axis, got [100]}}
  // expected-error@+1 {{'nn.cross_entropy_max' op failed to infer returned types}}
  %0 = nn.cross_entropy_max %logits : (tensor<100xf32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_split_grad_loss_rank(%dloss: tensor<1xf32>, %logits: tensor<8x100xf32>, %rows: tensor<8xf32>, %labels: tensor<8xi64>) {
  // expected-error@+2 {{'nn.cross_entropy_split_grad' op grad_loss must be a 0-D f32 tensor (the loss's type), got tensor<1xf32>}}
  // expected-error@+1 {{'nn.cross_entropy_split_grad' op failed to infer returned types}}
  %0 = nn.cross_entropy_split_grad %dloss, %logits, %rows, %rows, %labels : (tensor<1xf32>, tensor<8x100xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi64>) -> tensor<8x100xf32>
  return
}
