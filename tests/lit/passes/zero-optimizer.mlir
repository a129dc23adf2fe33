// RUN: zero-opt %s -split-input-file -zero-optimizer='optimizer=adamw lr=0.01 weight-decay=0.1' | FileCheck %s --check-prefix=ADAMW
// RUN: zero-opt %s -split-input-file -zero-optimizer='optimizer=adam beta1=0.8 beta2=0.95 eps=1e-6' | FileCheck %s --check-prefix=ADAM
// RUN: zero-opt %s -split-input-file -zero-optimizer='optimizer=sgd lr=0.5 weight-decay=0.25' | FileCheck %s --check-prefix=SGD
// RUN: not zero-opt %s -split-input-file -zero-optimizer='optimizer=lamb' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not zero-opt %s -split-input-file -zero-optimizer='optimizer=adam beta1=1.0' 2>&1 | FileCheck %s --check-prefix=BETA

func.func @step(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = nn.variable "w" param : tensor<3xf32>
  %frozen = nn.variable "frozen" param {frozen} : tensor<3xf32>
  %h = nn.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  %g = nn.reduce_sum %x {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<3xf32>
  nn.gradient "w", %g : tensor<3xf32>
  return %l : tensor<f32>
}

// One step counter; the state variables follow their parameter, zero
// initialized; the update replaces nn.gradient and every new value is
// assigned back.
// ADAMW-LABEL: func.func @step
// ADAMW-NEXT: %[[T:.*]] = nn.step : tensor<i64>
// ADAMW-NEXT: %[[W:.*]] = nn.variable "w" param : tensor<3xf32>
// ADAMW-NEXT: %[[M:.*]] = nn.variable "w.exp_avg" opt_state : tensor<3xf32>
// ADAMW-NEXT: %[[V:.*]] = nn.variable "w.exp_avg_sq" opt_state : tensor<3xf32>
// ADAMW-NEXT: nn.variable "frozen" param {frozen}
// ADAMW: %[[G:.*]] = nn.reduce_sum
// ADAMW-NEXT: %[[P:.*]], %[[M2:.*]], %[[V2:.*]] = nn.adamw %[[W]], %[[G]], %[[M]], %[[V]], %[[T]] {lr = 1.000000e-02 : f64, weight_decay = 1.000000e-01 : f64}
// ADAMW-NEXT: nn.assign "w", %[[P]]
// ADAMW-NEXT: nn.assign "w.exp_avg", %[[M2]]
// ADAMW-NEXT: nn.assign "w.exp_avg_sq", %[[V2]]
// ADAMW-NOT: nn.gradient
// ADAMW-NOT: "frozen.exp_avg"
// ADAMW: return

// ADAM-LABEL: func.func @step
// ADAM: nn.adam %{{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 9.9999999999999995E-7 : f64, lr = 1.000000e-03 : f64}

// torch.optim.SGD's weight decay: the gradient plus wd * p.
// SGD-LABEL: func.func @step
// SGD-NOT: nn.step
// SGD: %[[W:.*]] = nn.variable "w" param
// SGD: %[[G:.*]] = nn.reduce_sum
// SGD-NEXT: %[[D:.*]] = nn.scale %[[W]] {factor = 2.500000e-01 : f64}
// SGD-NEXT: %[[G2:.*]] = nn.add %[[G]], %[[D]]
// SGD-NEXT: %[[P:.*]] = nn.sgd %[[W]], %[[G2]] {lr = 5.000000e-01 : f64}
// SGD-NEXT: nn.assign "w", %[[P]]

// An enum option: an unknown value fails when the pipeline is parsed.
// BAD: for the --optimizer option: Cannot find option named 'lamb'!
// BETA: error: zero-optimizer: betas must lie in [0, 1)
