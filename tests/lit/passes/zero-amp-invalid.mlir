// RUN: not zero-opt %s -zero-amp='precision=bf16 loss-scale=-2' 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not zero-opt %s -zero-amp='precision=fp16 loss-scale=inf' 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not zero-opt %s -zero-amp='precision=fp16 loss-scale=0 initial-scale-power=127' 2>&1 | FileCheck %s --check-prefix=POWER
// RUN: not zero-opt %s -zero-amp='precision=fp16 loss-scale=0 hysteresis=0' 2>&1 | FileCheck %s --check-prefix=POWER
// RUN: zero-opt %s -split-input-file -zero-amp='precision=bf16' -verify-diagnostics

// zero-amp checks its options, and runs right after zero-optimizer on fp32
// parameters.

// SCALE: error: zero-amp: loss-scale must be finite and non-negative (0 scales dynamically)
// POWER: error: zero-amp: initial-scale-power must lie in [0, 126] and hysteresis be positive

func.func @update_of_an_input(%x: tensor<3xf32>, %g: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'nn.sgd' op updates a value that is not a parameter variable; run zero-amp right after zero-optimizer}}
  %p = nn.sgd %x, %g {lr = 1.0e-01 : f64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %p : tensor<3xf32>
}

// -----

func.func @half_parameter(%g: tensor<3xf16>) -> tensor<3xf16> {
  // expected-error@+1 {{'nn.variable' op zero-amp expects fp32 parameters}}
  %w = nn.variable "w" param : tensor<3xf16>
  %p = nn.sgd %w, %g {lr = 1.0e-01 : f64} : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  return %p : tensor<3xf16>
}
