// RUN: zero-opt %s --zero-quantize-weights=bits=3 -verify-diagnostics
// RUN: not zero-opt %s --zero-quantize-weights=block-size=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not zero-opt %s '--zero-quantize-weights=block-size=5 bits=4' 2>&1 | FileCheck %s --check-prefix=ODD

// The block layout is the kernels' rule (runtime/kernels/BlockQuantize.h),
// checked before anything is rewritten.
// ZERO: error: zero-quantize-weights: block_size must be at least 1, got 0
// ODD: error: zero-quantize-weights: 4-bit codes need an even block_size, got 5

#cpus4 = #sbp.placement<cpu, [0, 1, 2, 3]>
// expected-error @+1 {{zero-quantize-weights: bits must be 8 or 4, got 3}}
func.func @bits() -> tensor<16xf32, #sbp.global<[B], #cpus4, param>> {
  %w = nn.variable "w" param init = uniform(0.1) {logical_shape = array<i64: 16>} : tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>
  %g = sbp.cast %w : tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>> to tensor<16xf32, #sbp.global<[B], #cpus4, param>>
  return %g : tensor<16xf32, #sbp.global<[B], #cpus4, param>>
}
