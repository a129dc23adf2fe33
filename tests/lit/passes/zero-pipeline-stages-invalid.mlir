// RUN: zero-opt %s -split-input-file -verify-diagnostics \
// RUN:   --zero-pipeline-stages='stages=2'
// RUN: not zero-opt %s -split-input-file \
// RUN:   --zero-pipeline-stages='stages=2 schedule=zb' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SCHEDULE
// RUN: not zero-opt %s -split-input-file \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=0' \
// RUN:   2>&1 | FileCheck %s --check-prefix=MICRO

// RUN: not zero-opt %s -split-input-file \
// RUN:   --zero-pipeline-stages='stages=2 virtual-stages=2 schedule=gpipe' \
// RUN:   2>&1 | FileCheck %s --check-prefix=VGPIPE
// RUN: not zero-opt %s -split-input-file \
// RUN:   --zero-pipeline-stages='stages=2 virtual-stages=2 micro-batches=3' \
// RUN:   2>&1 | FileCheck %s --check-prefix=VGROUP
// RUN: not zero-opt %s -split-input-file \
// RUN:   --zero-pipeline-stages='stages=2 virtual-stages=0' \
// RUN:   2>&1 | FileCheck %s --check-prefix=VZERO

// SCHEDULE: zero-pipeline-stages: schedule must be 1f1b or gpipe, got 'zb'
// MICRO: zero-pipeline-stages: micro-batches must be at least 1, got 0
// VGPIPE: zero-pipeline-stages: virtual stages interleave the 1f1b schedule; gpipe runs one model chunk per stage
// VGROUP: zero-pipeline-stages: 2 virtual stages need the micro-batches in groups of the 2 stages; 3 is not a multiple
// VZERO: zero-pipeline-stages: virtual stages must be at least 1, got 0

#p = #sbp.placement<cpu, [0, 1]>
func.func @beyond_the_stages() -> tensor<f32> {
  %x = nn.input "x" : tensor<4x4xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<4xi64, #sbp.global<[S(0)], #p, input>>
  // expected-error@+1 {{'nn.scale' op zero-pipeline-stages: marked for stage 2 of 2}}
  %s = nn.scale %x {factor = 0.5, zero.pipeline_stage = 2 : i64} : (tensor<4x4xf32, #sbp.global<[S(0)], #p, input>>) -> tensor<4x4xf32>
  %l = nn.cross_entropy %s, %y : (tensor<4x4xf32>, tensor<4xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

#p = #sbp.placement<cpu, [0, 1]>
#q = #sbp.placement<cpu, [0, 1, 2, 3]>
// A pipelined graph is captured on the first stage's ranks alone.
func.func @two_placements() -> tensor<f32> {
  %x = nn.input "x" : tensor<4x4xf32, #sbp.global<[S(0)], #p, input>>
  // expected-error@+1 {{'nn.input' op zero-pipeline-stages: the graph is placed on #sbp.placement<cpu, [0, 1]> and #sbp.placement<cpu, [0, 1, 2, 3]>; a pipelined graph is captured on one stage's placement}}
  %y = nn.input "y" : tensor<4xi64, #sbp.global<[S(0)], #q, input>>
  %l = nn.cross_entropy %x, %y : (tensor<4x4xf32, #sbp.global<[S(0)], #p, input>>, tensor<4xi64, #sbp.global<[S(0)], #q, input>>) -> tensor<f32>
  return %l : tensor<f32>
}
