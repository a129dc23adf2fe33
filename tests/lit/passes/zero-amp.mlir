// RUN: zero-opt %s -zero-autodiff -zero-optimizer=optimizer=adamw -zero-amp=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: zero-opt %s -zero-autodiff -zero-optimizer=optimizer=sgd '-zero-amp=precision=fp16 loss-scale=1024' | FileCheck %s --check-prefix=FP16
// RUN: not zero-opt %s -zero-autodiff -zero-optimizer -zero-amp=precision=fp8 2>&1 | FileCheck %s --check-prefix=BADTYPE
// RUN: not zero-opt %s -zero-autodiff -zero-optimizer '-zero-amp=precision=fp16 loss-scale=-1' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: zero-opt %s -zero-autodiff -zero-optimizer '-zero-amp=precision=fp16 loss-scale=0 initial-scale-power=12' | FileCheck %s --check-prefix=DYNAMIC

func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32>
  %y = nn.input "y" : tensor<8xi64>
  %w = nn.variable "w" param init = normal(0.02) : tensor<3x6xf32>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x6xf32>, tensor<3x6xf32>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %h, %y : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// The parameter computes in bf16; its fp32 master, initialized like it,
// and the fp32 moments live with the update, which reads the bf16 gradient.
// The loss is computed in fp32 straight from the bf16 logits (no f32 copy
// of them) and returned in fp32; its gradient comes out in bf16.
// BF16-LABEL: func.func @linear() -> tensor<f32>
// BF16: %[[X:.*]] = nn.input "x" : tensor<8x6xf32>
// BF16-NEXT: %[[XL:.*]] = nn.cast %[[X]] : tensor<8x6xf32> to tensor<8x6xbf16>
// BF16: %[[W:.*]] = nn.variable "w" param init = normal(0.02) : tensor<3x6xbf16>
// BF16-NEXT: %[[M:.*]] = nn.variable "w.master" master init = normal(0.02) {zero.copy_of = "w"} : tensor<3x6xf32>
// BF16-NEXT: nn.variable "w.exp_avg" opt_state : tensor<3x6xf32>
// BF16: %[[H:.*]] = nn.matmul %[[XL]], %[[W]] {transpose_rhs} : (tensor<8x6xbf16>, tensor<3x6xbf16>) -> tensor<8x3xbf16>
// BF16-NEXT: %[[L:.*]] = nn.cross_entropy %[[H]], {{.*}} : (tensor<8x3xbf16>, tensor<8xi64>) -> tensor<f32>
// BF16: nn.fill 1.000000e+00 {zero.loss_seed} : tensor<f32>
// BF16-NEXT: nn.cross_entropy_grad {{.*}} : (tensor<f32>, tensor<8x3xbf16>, tensor<8xi64>) -> tensor<8x3xbf16>
// BF16-NOT: nn.cast {{.*}} to tensor<8x3x
// BF16: %[[G:.*]] = nn.matmul {{.*}} {transpose_lhs} : {{.*}} -> tensor<3x6xbf16>
// BF16: %[[P:.*]], %{{.*}}, %{{.*}} = nn.adamw %[[M]], %[[G]], {{.*}} : (tensor<3x6xf32>, tensor<3x6xbf16>, tensor<3x6xf32>, tensor<3x6xf32>, tensor<i64>)
// BF16-NEXT: nn.assign "w.master", %[[P]] : tensor<3x6xf32>
// BF16-NEXT: %[[PL:.*]] = nn.cast %[[P]] : tensor<3x6xf32> to tensor<3x6xbf16>
// BF16-NEXT: nn.assign "w", %[[PL]] : tensor<3x6xbf16>
// BF16: return %[[L]] : tensor<f32>

// fp16 with a static loss scale: the backward seed is the scale and the
// update divides the gradient by it.
// FP16-LABEL: func.func @linear
// FP16: nn.variable "w" param {{.*}} : tensor<3x6xf16>
// FP16: nn.fill 1.024000e+03 {zero.loss_seed} : tensor<f32>
// FP16: nn.sgd {{.*}} {grad_scale = 1.024000e+03 : f64, lr = 1.000000e-03 : f64} : (tensor<3x6xf32>, tensor<3x6xf16>) -> tensor<3x6xf32>

// BADTYPE: for the --precision option: Cannot find option named 'fp8'!
// NEGATIVE: error: zero-amp: loss-scale must be finite and non-negative (0 scales dynamically)

// Dynamic scaling: the scaler's state, and the scale seeds the backward.
// DYNAMIC-LABEL: func.func @linear
// DYNAMIC-NEXT: %[[S:.*]] = nn.variable "amp.loss_scale" opt_state init = constant(4096.0) : tensor<f32>
// DYNAMIC-NEXT: nn.variable "amp.good_steps" opt_state init = constant : tensor<f32>
// DYNAMIC-NEXT: nn.variable "amp.hysteresis" opt_state init = constant(2.0) : tensor<f32>
// DYNAMIC-NOT: zero.loss_seed
// DYNAMIC: nn.cross_entropy_grad %[[S]],
