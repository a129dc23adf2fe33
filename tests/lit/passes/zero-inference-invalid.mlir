// RUN: zero-opt %s -zero-inference -split-input-file -verify-diagnostics

// An inference graph has outputs and nothing of training.

// expected-error@+1 {{zero-inference: function 'nothing' returns nothing; an inference graph returns its outputs}}
func.func @nothing() {
  return
}

// -----

func.func @gradient(%x: tensor<3xf32>) -> tensor<3xf32> {
  %w = nn.variable "w" param init = zeros : tensor<3xf32>
  // expected-error@+1 {{'nn.gradient' op belongs to training; an inference graph has no gradients, updates or assignments}}
  nn.gradient "w", %x : tensor<3xf32>
  return %x : tensor<3xf32>
}

// -----

func.func @assign(%x: tensor<3xf32>) -> tensor<3xf32> {
  %w = nn.variable "w" param init = zeros : tensor<3xf32>
  // expected-error@+1 {{'nn.assign' op belongs to training; an inference graph has no gradients, updates or assignments}}
  nn.assign "w", %x : tensor<3xf32>
  return %w : tensor<3xf32>
}
