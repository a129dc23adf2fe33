// RUN: zero-opt %s -zero-autodiff -split-input-file | FileCheck %s

// The backward ops follow the forward ops, every trainable parameter that
// reaches the loss gets one nn.gradient (in declaration order) right before
// the return, and the function still returns the loss. Gradients are plain
// tensors: SBP propagation assigns their encodings later. Ops whose results
// nothing uses (the gradient of a graph input) are not kept.

// The OneFlow documentation's MLP, annotated as GraphBuilder captures it.
// CHECK-LABEL: func.func @mlp()
// CHECK: %[[X:.*]] = nn.input "x"
// CHECK: %[[LABELS:.*]] = nn.input "labels"
// CHECK: %[[W1:.*]] = nn.variable "fc1.weight"
// CHECK: %[[H:.*]] = nn.bias_add
// CHECK: %[[R:.*]] = nn.relu %[[H]]
// CHECK: %[[W2:.*]] = nn.variable "fc2.weight"
// CHECK: %[[LOGITS:.*]] = nn.bias_add
// CHECK: %[[LOSS:.*]] = nn.cross_entropy %[[LOGITS]], %[[LABELS]]
// CHECK-NEXT: %[[SEED:.*]] = nn.fill 1.000000e+00 {zero.loss_seed} : tensor<f32>
// dlogits = dloss (softmax(logits) - onehot) / n
// CHECK-NEXT: %[[DLOGITS:.*]] = nn.cross_entropy_grad %[[SEED]], %[[LOGITS]], %[[LABELS]] : {{.*}} -> tensor<8x4xf32>
// dbias = sum of dy over the batch
// CHECK-NEXT: %[[DB2:.*]] = nn.reduce_sum %[[DLOGITS]] {axes = array<i64: 0>} : (tensor<8x4xf32>) -> tensor<4xf32>
// y = r W2^T: dr = dy W2, dW2 = dy^T r
// CHECK-NEXT: %[[DR:.*]] = nn.matmul %[[DLOGITS]], %[[W2]] : {{.*}} -> tensor<8x32xf32>
// CHECK-NEXT: %[[DW2:.*]] = nn.matmul %[[DLOGITS]], %[[R]] {transpose_lhs} : (tensor<8x4xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: %[[DH:.*]] = nn.relu_grad %[[DR]], %[[H]] : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[DB1:.*]] = nn.reduce_sum %[[DH]] {axes = array<i64: 0>} : (tensor<8x32xf32>) -> tensor<32xf32>
// dx = dy W1 feeds nothing and is dropped.
// CHECK-NEXT: %[[DW1:.*]] = nn.matmul %[[DH]], %[[X]] {transpose_lhs} : {{.*}} -> tensor<32x16xf32>
// CHECK-NEXT: nn.gradient "fc1.weight", %[[DW1]] : tensor<32x16xf32>
// CHECK-NEXT: nn.gradient "fc1.bias", %[[DB1]] : tensor<32xf32>
// CHECK-NEXT: nn.gradient "fc2.weight", %[[DW2]] : tensor<4x32xf32>
// CHECK-NEXT: nn.gradient "fc2.bias", %[[DB2]] : tensor<4xf32>
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>
#cpus2 = #sbp.placement<cpu, [0, 1]>
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #cpus2, input>>
  %labels = nn.input "labels" : tensor<8xi64, #sbp.global<[S(0)], #cpus2, input>>
  %w1 = nn.variable "fc1.weight" param : tensor<32x16xf32, #sbp.global<[B], #cpus2, param>>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus2, input>>, tensor<32x16xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x32xf32>
  %b1 = nn.variable "fc1.bias" param : tensor<32xf32, #sbp.global<[B], #cpus2, param>>
  %hb = nn.bias_add %h, %b1 : (tensor<8x32xf32>, tensor<32xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x32xf32>
  %r = nn.relu %hb : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %w2 = nn.variable "fc2.weight" param : tensor<4x32xf32, #sbp.global<[B], #cpus2, param>>
  %o = nn.matmul %r, %w2 {transpose_rhs} : (tensor<8x32xf32>, tensor<4x32xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x4xf32>
  %b2 = nn.variable "fc2.bias" param : tensor<4xf32, #sbp.global<[B], #cpus2, param>>
  %logits = nn.bias_add %o, %b2 : (tensor<8x4xf32>, tensor<4xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x4xf32>
  %loss = nn.cross_entropy %logits, %labels : (tensor<8x4xf32>, tensor<8xi64, #sbp.global<[S(0)], #cpus2, input>>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A token embedding tied to the LM head: both uses' gradients are summed
// into one nn.gradient.
// CHECK-LABEL: func.func @tied
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x8xi64>, %[[LABELS:.*]]: tensor<16xi64>)
// CHECK: %[[WTE:.*]] = nn.variable "wte.weight"
// CHECK: %[[H:.*]] = nn.reshape
// CHECK: %[[SEED:.*]] = nn.fill 1.000000e+00 {zero.loss_seed} : tensor<f32>
// CHECK-NEXT: %[[DLOGITS:.*]] = nn.cross_entropy_grad %[[SEED]]
// logits = h wte^T: dh = dlogits wte, dwte = dlogits^T h
// CHECK-NEXT: %[[DH:.*]] = nn.matmul %[[DLOGITS]], %[[WTE]] : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
// CHECK-NEXT: %[[DHEAD:.*]] = nn.matmul %[[DLOGITS]], %[[H]] {transpose_lhs} : (tensor<16x64xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
// CHECK-NEXT: %[[DE:.*]] = nn.reshape %[[DH]] : tensor<16x16xf32> to tensor<2x8x16xf32>
// CHECK-NEXT: %[[DEMB:.*]] = nn.embedding_grad %[[DE]], %[[IDS]] {vocab_size = 64 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<64x16xf32>
// The sum of a tied weight's gradients is marked, so that the memory plan
// may accumulate it in place (zero.grad_sum).
// CHECK-NEXT: %[[SUM:.*]] = nn.add %[[DHEAD]], %[[DEMB]] {zero.grad_sum} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
// CHECK-NEXT: nn.gradient "wte.weight", %[[SUM]] : tensor<64x16xf32>
// CHECK-NEXT: return
func.func @tied(%ids: tensor<2x8xi64>, %labels: tensor<16xi64>) -> tensor<f32> {
  %wte = nn.variable "wte.weight" param : tensor<64x16xf32>
  %e = nn.embedding %wte, %ids : (tensor<64x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %h = nn.reshape %e : tensor<2x8x16xf32> to tensor<16x16xf32>
  %logits = nn.matmul %h, %wte {transpose_rhs} : (tensor<16x16xf32>, tensor<64x16xf32>) -> tensor<16x64xf32>
  %loss = nn.cross_entropy %logits, %labels : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A frozen parameter gets no gradient; the backward ops only it needed are
// not kept.
// CHECK-LABEL: func.func @frozen
// CHECK: %[[H:.*]] = nn.matmul
// CHECK: %[[DLOGITS:.*]] = nn.cross_entropy_grad
// CHECK-NEXT: %[[DW:.*]] = nn.matmul %[[DLOGITS]], %[[H]] {transpose_lhs}
// CHECK-NEXT: nn.gradient "head.weight", %[[DW]] : tensor<4x16xf32>
// CHECK-NEXT: return
// CHECK-NOT: nn.gradient "frozen.weight"
func.func @frozen(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
  %w1 = nn.variable "frozen.weight" param {frozen} : tensor<16x16xf32>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %w2 = nn.variable "head.weight" param : tensor<4x16xf32>
  %logits = nn.matmul %h, %w2 {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %loss = nn.cross_entropy %logits, %labels : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// NumPy broadcasting: each operand's gradient is summed over the axes it was
// stretched along, then reshaped to the operand's shape.
// CHECK-LABEL: func.func @broadcast
// CHECK: %[[A:.*]] = nn.variable "a"
// CHECK: %[[B:.*]] = nn.variable "b"
// CHECK: %[[D:.*]] = nn.variable "d"
// CHECK: %[[SUM:.*]] = nn.add %{{.*}}, %[[A]]
// CHECK: %[[Y:.*]] = nn.div
// sum over all axes: dy = 1 broadcast back onto zeros of the input shape
// CHECK: %[[SEED:.*]] = nn.fill 1.000000e+00 {zero.loss_seed} : tensor<f32>
// CHECK-NEXT: %[[SEED3:.*]] = nn.reshape %[[SEED]] : tensor<f32> to tensor<1x1x1xf32>
// CHECK-NEXT: %[[ZEROS:.*]] = nn.fill 0.000000e+00 : tensor<2x3x4xf32>
// CHECK-NEXT: %[[DY:.*]] = nn.add %[[SEED3]], %[[ZEROS]] : (tensor<1x1x1xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// y = n / d: dn = dy / d, dd = -sum_to(dy y / d), d stretched along axis 0
// CHECK-NEXT: %[[DN:.*]] = nn.div %[[DY]], %[[D]]
// CHECK-NEXT: %[[DYY:.*]] = nn.mul %[[DY]], %[[Y]]
// CHECK-NEXT: %[[Q:.*]] = nn.div %[[DYY]], %[[D]]
// CHECK-NEXT: %[[QS:.*]] = nn.reduce_sum %[[Q]] {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[QR:.*]] = nn.reshape %[[QS]] : tensor<3x4xf32> to tensor<1x3x4xf32>
// CHECK-NEXT: %[[DD:.*]] = nn.scale %[[QR]] {factor = -1.000000e+00 : f64}
// m - c with a 0-D c: dc = -(sum of dy over every axis)
// CHECK-NEXT: %[[CS:.*]] = nn.reduce_sum %[[DN]] {axes = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %[[DC:.*]] = nn.scale %[[CS]] {factor = -1.000000e+00 : f64}
// s * b with b of shape (4): ds = dy b, db = sum over axes 0 and 1 of dy s
// CHECK-NEXT: %[[DS:.*]] = nn.mul %[[DN]], %[[B]]
// CHECK-NEXT: %[[DYS:.*]] = nn.mul %[[DN]], %[[SUM]]
// CHECK-NEXT: %[[DB:.*]] = nn.reduce_sum %[[DYS]] {axes = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4xf32>
// x + a with a of shape (3, 1): summed over axes 0 (missing) and 2 (size 1)
// CHECK-NEXT: %[[AS:.*]] = nn.reduce_sum %[[DS]] {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[DA:.*]] = nn.reshape %[[AS]] : tensor<3xf32> to tensor<3x1xf32>
// CHECK-NEXT: nn.gradient "a", %[[DA]] : tensor<3x1xf32>
// CHECK-NEXT: nn.gradient "b", %[[DB]] : tensor<4xf32>
// CHECK-NEXT: nn.gradient "c", %[[DC]] : tensor<f32>
// CHECK-NEXT: nn.gradient "d", %[[DD]] : tensor<1x3x4xf32>
// CHECK-NEXT: return
func.func @broadcast(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %a = nn.variable "a" param : tensor<3x1xf32>
  %b = nn.variable "b" param : tensor<4xf32>
  %c = nn.variable "c" param : tensor<f32>
  %d = nn.variable "d" param : tensor<1x3x4xf32>
  %0 = nn.add %x, %a : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %1 = nn.mul %0, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %2 = nn.sub %1, %c : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %3 = nn.div %2, %d : (tensor<2x3x4xf32>, tensor<1x3x4xf32>) -> tensor<2x3x4xf32>
  %loss = nn.reduce_sum %3 {axes = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// One GPT-2 block (batch 2, sequence 4, width 8, 2 heads): layer norm, the
// fused QKV projection split into heads, causal attention, the GELU MLP and
// both residual adds.
// CHECK-LABEL: func.func @attention
// CHECK: %[[Q:.*]] = nn.transpose
// CHECK: %[[K:.*]] = nn.transpose
// CHECK: %[[V:.*]] = nn.transpose
// CHECK: %[[PROBS:.*]] = nn.softmax %{{.*}} {causal}
// CHECK: %[[FC:.*]] = nn.matmul
// CHECK: %[[SEED:.*]] = nn.fill 1.000000e+00 {zero.loss_seed} : tensor<f32>
// CHECK: nn.gelu_grad %{{.*}}, %[[FC]]
// CHECK: %[[DLN2:.*]], %{{.*}}, %{{.*}} = nn.layer_norm_grad
// The residual stream sums the gradient through the MLP and around it.
// CHECK-NEXT: %[[DR:.*]] = nn.add %{{.*}}, %[[DLN2]]
// CHECK-NEXT: %[[DY0:.*]] = nn.reshape %[[DR]] : tensor<8x8xf32> to tensor<2x4x2x4xf32>
// CHECK-NEXT: %[[DY:.*]] = nn.transpose %[[DY0]] {permutation = array<i64: 0, 2, 1, 3>}
// y = probs v: dprobs = dy v^T, dv = probs^T dy
// CHECK-NEXT: %[[DPROBS:.*]] = nn.batch_matmul %[[DY]], %[[V]] {transpose_rhs}
// CHECK-NEXT: %[[DV:.*]] = nn.batch_matmul %[[PROBS]], %[[DY]] {transpose_lhs}
// CHECK-NEXT: %[[DSCALED:.*]] = nn.softmax_grad %[[DPROBS]], %[[PROBS]] {causal}
// CHECK-NEXT: %[[DSCORES:.*]] = nn.scale %[[DSCALED]] {factor = 5.000000e-01 : f64}
// scores = q k^T: dq = dscores k, dk = dscores^T q
// CHECK-NEXT: %[[DQ:.*]] = nn.batch_matmul %[[DSCORES]], %[[K]] :
// CHECK-NEXT: %[[DK:.*]] = nn.batch_matmul %[[DSCORES]], %[[Q]] {transpose_lhs}
// CHECK-NEXT: %[[DV1:.*]] = nn.transpose %[[DV]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[DV2:.*]] = nn.reshape %[[DV1]] : tensor<2x4x2x4xf32> to tensor<8x8xf32>
// CHECK-NEXT: %[[DK1:.*]] = nn.transpose %[[DK]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[DK2:.*]] = nn.reshape %[[DK1]] : tensor<2x4x2x4xf32> to tensor<8x8xf32>
// CHECK-NEXT: %[[DQ1:.*]] = nn.transpose %[[DQ]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[DQ2:.*]] = nn.reshape %[[DQ1]] : tensor<2x4x2x4xf32> to tensor<8x8xf32>
// CHECK-NEXT: %[[DQKV:.*]] = nn.concat %[[DQ2]], %[[DK2]], %[[DV2]] {axis = 1 : i64} : {{.*}} -> tensor<8x24xf32>
// CHECK: nn.layer_norm_grad
// CHECK-NEXT: nn.gradient "ln_1.weight", %{{.*}} : tensor<8xf32>
// CHECK-NEXT: nn.gradient "ln_1.bias", %{{.*}} : tensor<8xf32>
// CHECK-NEXT: nn.gradient "c_attn.weight", %{{.*}} : tensor<24x8xf32>
// CHECK-NEXT: nn.gradient "c_attn.bias", %{{.*}} : tensor<24xf32>
// CHECK-NEXT: nn.gradient "ln_2.weight", %{{.*}} : tensor<8xf32>
// CHECK-NEXT: nn.gradient "ln_2.bias", %{{.*}} : tensor<8xf32>
// CHECK-NEXT: nn.gradient "c_fc.weight", %{{.*}} : tensor<32x8xf32>
// CHECK-NEXT: nn.gradient "c_proj.weight", %{{.*}} : tensor<8x32xf32>
// CHECK-NEXT: return
func.func @attention(%x: tensor<8x8xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
  %g1 = nn.variable "ln_1.weight" param init = ones : tensor<8xf32>
  %b1 = nn.variable "ln_1.bias" param : tensor<8xf32>
  %h = nn.layer_norm %x, %g1, %b1 : (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %wqkv = nn.variable "c_attn.weight" param : tensor<24x8xf32>
  %qkv0 = nn.matmul %h, %wqkv {transpose_rhs} : (tensor<8x8xf32>, tensor<24x8xf32>) -> tensor<8x24xf32>
  %bqkv = nn.variable "c_attn.bias" param : tensor<24xf32>
  %qkv = nn.bias_add %qkv0, %bqkv : (tensor<8x24xf32>, tensor<24xf32>) -> tensor<8x24xf32>
  %parts:3 = nn.split %qkv {axis = 1 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<8x24xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>)
  %q0 = nn.reshape %parts#0 : tensor<8x8xf32> to tensor<2x4x2x4xf32>
  %q = nn.transpose %q0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %k0 = nn.reshape %parts#1 : tensor<8x8xf32> to tensor<2x4x2x4xf32>
  %k = nn.transpose %k0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v0 = nn.reshape %parts#2 : tensor<8x8xf32> to tensor<2x4x2x4xf32>
  %v = nn.transpose %v0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %scores = nn.batch_matmul %q, %k {transpose_rhs} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %scaled = nn.scale %scores {factor = 5.000000e-01 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %probs = nn.softmax %scaled {causal} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y0 = nn.batch_matmul %probs, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y1 = nn.transpose %y0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %y = nn.reshape %y1 : tensor<2x4x2x4xf32> to tensor<8x8xf32>
  %r = nn.add %x, %y : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %g2 = nn.variable "ln_2.weight" param init = ones : tensor<8xf32>
  %b2 = nn.variable "ln_2.bias" param : tensor<8xf32>
  %h2 = nn.layer_norm %r, %g2, %b2 : (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %wfc = nn.variable "c_fc.weight" param : tensor<32x8xf32>
  %f0 = nn.matmul %h2, %wfc {transpose_rhs} : (tensor<8x8xf32>, tensor<32x8xf32>) -> tensor<8x32xf32>
  %f = nn.gelu %f0 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %wp = nn.variable "c_proj.weight" param : tensor<8x32xf32>
  %p = nn.matmul %f, %wp {transpose_rhs} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x8xf32>
  %out = nn.add %r, %p : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %loss = nn.cross_entropy %out, %labels : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Data movement and reductions: transpose takes the inverse permutation,
// concat slices, split concatenates (zeros for the piece that does not reach
// the loss), pad slices, slice pads, and the same parameter reached twice
// sums.
// CHECK-LABEL: func.func @data_movement
// CHECK: %[[SEED:.*]] = nn.fill 1.000000e+00 {zero.loss_seed} : tensor<f32>
// CHECK-NEXT: %[[S0:.*]] = nn.reshape %[[SEED]] : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: %[[Z0:.*]] = nn.fill 0.000000e+00 : tensor<3x1xf32>
// CHECK-NEXT: %[[DM:.*]] = nn.add %[[S0]], %[[Z0]] : (tensor<1x1xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
// mean over 6 elements
// CHECK-NEXT: %[[DM6:.*]] = nn.scale %[[DM]] {factor = 0.16666666666666666 : f64}
// CHECK-NEXT: %[[Z1:.*]] = nn.fill 0.000000e+00 : tensor<3x6xf32>
// CHECK-NEXT: %[[DT:.*]] = nn.add %[[DM6]], %[[Z1]] : (tensor<3x1xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
// CHECK-NEXT: %[[DC:.*]] = nn.transpose %[[DT]] {permutation = array<i64: 1, 0>} : (tensor<3x6xf32>) -> tensor<6x3xf32>
// CHECK-NEXT: %[[DS1:.*]] = nn.slice %[[DC]] {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 3>}
// CHECK-NEXT: %[[DA1:.*]] = nn.slice %[[DC]] {offsets = array<i64: 4, 0>, sizes = array<i64: 2, 3>}
// CHECK-NEXT: %[[Z2:.*]] = nn.fill 0.000000e+00 : tensor<4x1xf32>
// CHECK-NEXT: %[[DP:.*]] = nn.concat %[[Z2]], %[[DS1]] {axis = 1 : i64} : (tensor<4x1xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[DA2:.*]] = nn.slice %[[DP]] {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 3>}
// CHECK-NEXT: %[[DA:.*]] = nn.add %[[DA1]], %[[DA2]]
// dim 4 = 1 + 2 + 1 and dim 6 = 2 + 3 + 1
// CHECK-NEXT: %[[DW:.*]] = nn.pad %[[DA]] {high = array<i64: 1, 1>, low = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: nn.gradient "w", %[[DW]] : tensor<4x6xf32>
// CHECK-NEXT: return
func.func @data_movement() -> tensor<f32> {
  %w = nn.variable "w" param : tensor<4x6xf32>
  %a = nn.slice %w {offsets = array<i64: 1, 2>, sizes = array<i64: 2, 3>, strides = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
  %p = nn.pad %a {low = array<i64: 0, 1>, high = array<i64: 2, 0>} : (tensor<2x3xf32>) -> tensor<4x4xf32>
  %s:2 = nn.split %p {axis = 1 : i64, sizes = array<i64: 1, 3>} : (tensor<4x4xf32>) -> (tensor<4x1xf32>, tensor<4x3xf32>)
  %c = nn.concat %s#1, %a {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %t = nn.transpose %c {permutation = array<i64: 1, 0>} : (tensor<6x3xf32>) -> tensor<3x6xf32>
  %m = nn.reduce_mean %t {axes = array<i64: 1>, keepdim} : (tensor<3x6xf32>) -> tensor<3x1xf32>
  %l = nn.reduce_sum %m {axes = array<i64: 0, 1>} : (tensor<3x1xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Mixed precision: casts take the gradient back to the operand's element
// type; tanh_grad reads the forward result.
// CHECK-LABEL: func.func @casts
// CHECK: %[[WH:.*]] = nn.cast %{{.*}} : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[XH:.*]] = nn.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[T:.*]] = nn.tanh
// CHECK: %[[SEED:.*]] = nn.fill 1.000000e+00 {zero.loss_seed} : tensor<f32>
// mean over 24 elements
// CHECK-NEXT: %[[D24:.*]] = nn.scale %[[SEED]] {factor = 0.041666666666666664 : f64}
// CHECK-NEXT: nn.reshape %[[D24]] : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT: nn.fill 0.000000e+00 : tensor<8x3xf32>
// CHECK-NEXT: %[[DF:.*]] = nn.add
// CHECK-NEXT: %[[DS:.*]] = nn.cast %[[DF]] : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK-NEXT: %[[DT:.*]] = nn.scale %[[DS]] {factor = 2.000000e+00 : f64}
// CHECK-NEXT: %[[DY:.*]] = nn.tanh_grad %[[DT]], %[[T]] : (tensor<8x3xbf16>, tensor<8x3xbf16>) -> tensor<8x3xbf16>
// y = x^T w: dw = x dy
// CHECK-NEXT: %[[DWH:.*]] = nn.matmul %[[XH]], %[[DY]] : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
// CHECK-NEXT: %[[DW:.*]] = nn.cast %[[DWH]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK-NEXT: nn.gradient "w", %[[DW]] : tensor<4x3xf32>
// CHECK-NEXT: return
func.func @casts(%x: tensor<4x8xf32>) -> tensor<f32> {
  %w = nn.variable "w" param : tensor<4x3xf32>
  %wh = nn.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
  %xh = nn.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %y = nn.matmul %xh, %wh {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x3xbf16>) -> tensor<8x3xbf16>
  %t = nn.tanh %y : (tensor<8x3xbf16>) -> tensor<8x3xbf16>
  %s = nn.scale %t {factor = 2.000000e+00 : f64} : (tensor<8x3xbf16>) -> tensor<8x3xbf16>
  %f = nn.cast %s : tensor<8x3xbf16> to tensor<8x3xf32>
  %l = nn.reduce_mean %f {axes = array<i64: 0, 1>} : (tensor<8x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Both matmul transpose flags, with both operands trainable:
// y = a^T b^T gives da = b^T dy^T and db = dy^T a^T.
// CHECK-LABEL: func.func @transposed_operands
// CHECK: %[[A:.*]] = nn.variable "a"
// CHECK: %[[B:.*]] = nn.variable "b"
// CHECK: %[[DY:.*]] = nn.cross_entropy_grad
// CHECK-NEXT: %[[DA:.*]] = nn.matmul %[[B]], %[[DY]] {transpose_lhs, transpose_rhs} : (tensor<5x3xf32>, tensor<2x5xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[DB:.*]] = nn.matmul %[[DY]], %[[A]] {transpose_lhs, transpose_rhs} : (tensor<2x5xf32>, tensor<3x2xf32>) -> tensor<5x3xf32>
// CHECK-NEXT: nn.gradient "a", %[[DA]] : tensor<3x2xf32>
// CHECK-NEXT: nn.gradient "b", %[[DB]] : tensor<5x3xf32>
func.func @transposed_operands(%labels: tensor<2xi64>) -> tensor<f32> {
  %a = nn.variable "a" param : tensor<3x2xf32>
  %b = nn.variable "b" param : tensor<5x3xf32>
  %y = nn.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<3x2xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  %loss = nn.cross_entropy %y, %labels : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
