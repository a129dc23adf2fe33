// Mixed precision at stages 1-3: zero-stage replaces every update with its
// sharded form and erases the casts it looked through, so no op is left
// reading an erased update. zero-loss-scale then keeps every master, not
// only the first, on an overflow step; the fp16 parameter is narrowed from
// the kept master.
// RUN: zero-opt %s --zero-pipeline='stage=2 world=4 optimizer=adam precision=fp16' | FileCheck %s
// RUN: zero-opt %s --zero-pipeline='stage=3 world=4 optimizer=adam precision=fp16 stage3-param-persistence-threshold=0' | FileCheck %s

#cpus4 = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #cpus4, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0)], #cpus4, input>>
  %w1 = nn.variable "w1" param init = uniform(0.25) : tensor<8x16xf32, #sbp.global<[B], #cpus4, param>>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #cpus4, input>>, tensor<8x16xf32, #sbp.global<[B], #cpus4, param>>) -> tensor<8x8xf32>
  %b1 = nn.variable "b1" param init = uniform(0.25) : tensor<8xf32, #sbp.global<[B], #cpus4, param>>
  %hb = nn.bias_add %h, %b1 : (tensor<8x8xf32>, tensor<8xf32, #sbp.global<[B], #cpus4, param>>) -> tensor<8x8xf32>
  %w2 = nn.variable "w2" param init = uniform(0.25) : tensor<4x8xf32, #sbp.global<[B], #cpus4, param>>
  %o = nn.matmul %hb, %w2 {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32, #sbp.global<[B], #cpus4, param>>) -> tensor<8x4xf32>
  %l = nn.cross_entropy %o, %y : (tensor<8x4xf32>, tensor<8xi64, #sbp.global<[S(0)], #cpus4, input>>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK: %[[P1:.*]], %{{.*}}, %{{.*}} = nn.adam
// CHECK: %[[K1:.*]] = nn.select %{{.*}}, %{{.*}}, %[[P1]]
// CHECK: nn.assign "w1.master", %[[K1]]
// CHECK: nn.cast %[[K1]]
// CHECK: %[[P2:.*]], %{{.*}}, %{{.*}} = nn.adam
// CHECK: %[[K2:.*]] = nn.select %{{.*}}, %{{.*}}, %[[P2]]
// CHECK: nn.assign "b1.master", %[[K2]]
// CHECK: nn.cast %[[K2]]
// CHECK: %[[P3:.*]], %{{.*}}, %{{.*}} = nn.adam
// CHECK: %[[K3:.*]] = nn.select %{{.*}}, %{{.*}}, %[[P3]]
// CHECK: nn.assign "w2.master", %[[K3]]
// CHECK: nn.cast %[[K3]]
// CHECK-NOT: nn.assign "{{.*}}.master", %new_param
