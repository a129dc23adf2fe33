// RUN: zero-opt %s --pass-pipeline='builtin.module(func.func(zero-inference,zero-sbp-propagation{world=2},zero-stage{stage=3 shard-min-size=1}),zero-partition,func.func(zero-bucketing{allgather-bucket-size=256 prefetch-bucket-size=256},zero-schedule{overlap-comm=true prefetch-bucket-size=256}))' | FileCheck %s --check-prefix=LAYER
// RUN: zero-opt %s --pass-pipeline='builtin.module(func.func(zero-inference,zero-sbp-propagation{world=2},zero-stage{stage=3 shard-min-size=1}),zero-partition,func.func(zero-bucketing{allgather-bucket-size=768 prefetch-bucket-size=768},zero-schedule{overlap-comm=true prefetch-bucket-size=768}))' | FileCheck %s --check-prefix=ONE

// An inference graph at stage 3 goes through training's bucketing and
// schedule: its split parameters are gathered bucket by bucket, each bucket
// started while the layer before it computes (prefetch), never all at once
// unless one bucket holds them all.

#cpus2 = #sbp.placement<cpu, [0, 1]>

// With one 256-element weight per bucket, bucket k+1's gather starts before
// layer k's matmul and is waited for right before layer k+1 reads it.
// LAYER-LABEL: func.func @predict
// LAYER-SAME: zero.inference
// LAYER-NOT: nn.gradient
// LAYER: %[[W1:.+]] = nn.variable "w1" {{.*}} : tensor<128xf32>
// LAYER: %[[W2:.+]] = nn.variable "w2" {{.*}} : tensor<128xf32>
// LAYER: %[[W3:.+]] = nn.variable "w3" {{.*}} : tensor<128xf32>
// LAYER: %[[F1:.+]] = sbp.collective_start all_gather %[[W1]] {{.*}}bucket = 0
// LAYER-NEXT: %[[G1:.+]] = sbp.collective_wait %[[F1]]
// LAYER-NEXT: %[[F2:.+]] = sbp.collective_start all_gather %[[W2]] {{.*}}bucket = 1
// LAYER-NEXT: nn.reshape %[[G1]]
// LAYER-NEXT: nn.matmul
// LAYER-NEXT: nn.relu
// LAYER-NEXT: %[[G2:.+]] = sbp.collective_wait %[[F2]]
// LAYER-NEXT: %[[F3:.+]] = sbp.collective_start all_gather %[[W3]] {{.*}}bucket = 2
// LAYER-NEXT: nn.reshape %[[G2]]
// LAYER-NEXT: nn.matmul
// LAYER-NEXT: nn.relu
// LAYER-NEXT: %[[G3:.+]] = sbp.collective_wait %[[F3]]
// LAYER-NEXT: nn.reshape %[[G3]]
// LAYER-NEXT: %[[Y:.+]] = nn.matmul
// The result is handed back whole: the one gather left is the output's.
// LAYER-NEXT: sbp.collective_start all_gather %[[Y]] {{.*}} : tensor<4x16xf32> -> !sbp.future<tensor<8x16xf32>>
// LAYER-NEXT: sbp.collective_wait
// LAYER-NEXT: return

// A bucket that holds all three weights gathers them in one collective.
// ONE-LABEL: func.func @predict
// ONE: sbp.collective_start all_gather %{{.+}}, %{{.+}}, %{{.+}} on #cpus2 axis 0 {bucket = 0
// ONE-NEXT: sbp.collective_wait
// ONE-NOT: all_gather %{{.+}}, %{{.+}}
func.func @predict() -> tensor<8x16xf32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #cpus2, input>>
  %w1 = nn.variable "w1" param init = uniform(0.25) : tensor<16x16xf32, #sbp.global<[B], #cpus2, param>>
  %w2 = nn.variable "w2" param init = uniform(0.25) : tensor<16x16xf32, #sbp.global<[B], #cpus2, param>>
  %w3 = nn.variable "w3" param init = uniform(0.25) : tensor<16x16xf32, #sbp.global<[B], #cpus2, param>>
  %h1 = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus2, input>>, tensor<16x16xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x16xf32>
  %r1 = nn.relu %h1 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %h2 = nn.matmul %r1, %w2 {transpose_rhs} : (tensor<8x16xf32>, tensor<16x16xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x16xf32>
  %r2 = nn.relu %h2 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %h3 = nn.matmul %r2, %w3 {transpose_rhs} : (tensor<8x16xf32>, tensor<16x16xf32, #sbp.global<[B], #cpus2, param>>) -> tensor<8x16xf32>
  return %h3 : tensor<8x16xf32>
}
