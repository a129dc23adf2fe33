// RUN: not zero-opt %s -zero-optimizer='optimizer=adam lr=-1' 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not zero-opt %s -zero-optimizer='optimizer=adam lr=inf' 2>&1 | FileCheck %s --check-prefix=LR-INF
// RUN: not zero-opt %s -zero-optimizer='optimizer=adamw beta2=1.5' 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not zero-opt %s -zero-optimizer='optimizer=adam eps=-1e-8' 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not zero-opt %s -zero-optimizer='optimizer=sgd weight-decay=-0.1' 2>&1 | FileCheck %s --check-prefix=EPS

// zero-optimizer's options are checked before anything is built. (An
// nn.gradient that names no variable is refused by its verifier.)

// LR: error: zero-optimizer: lr must be finite and non-negative, got -1
// LR-INF: error: zero-optimizer: lr must be finite and non-negative, got INF
// BETA: error: zero-optimizer: betas must lie in [0, 1)
// EPS: error: zero-optimizer: eps and weight-decay must be non-negative

func.func @step(%x: tensor<3xf32>) -> tensor<f32> {
  %w = nn.variable "w" param : tensor<3xf32>
  %h = nn.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = nn.reduce_sum %h {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  nn.gradient "w", %x : tensor<3xf32>
  return %l : tensor<f32>
}
