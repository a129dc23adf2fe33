// RUN: zero-opt %s -zero-autodiff -zero-optimizer=optimizer=sgd '-zero-amp=precision=fp16 loss-scale=0' -zero-sbp-propagation=world=4 -zero-stage=stage=0 '-zero-loss-scale=window=100 min-scale=4 hysteresis=3' | FileCheck %s
// RUN: not zero-opt %s -zero-autodiff -zero-optimizer -zero-sbp-propagation=world=4 -zero-loss-scale 2>&1 | FileCheck %s --check-prefix=NOSTATE

func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32>
  %y = nn.input "y" : tensor<8xi64>
  %w = nn.variable "w" param : tensor<3x6xf32>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x6xf32>, tensor<3x6xf32>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %h, %y : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// Stage 0: the update reads the all-reduced fp16 gradient, so every rank
// counts overflows in all of it and no further collective is needed (the
// count stays broadcast; a partial sum would need each rank's index). It is
// widened, divided by the scale, the
// update is kept only without overflow, and the scaler steps.
// CHECK-LABEL: func.func @linear
// CHECK: %[[SCALE:.*]] = nn.variable "amp.loss_scale"
// CHECK: %[[GOOD:.*]] = nn.variable "amp.good_steps"
// CHECK: %[[HYST:.*]] = nn.variable "amp.hysteresis"
// CHECK: %[[MASTER:.*]] = nn.variable "w.master" master
// CHECK: %[[G:.*]] = sbp.cast %{{.*}} : tensor<3x6xf16, #sbp.global<[P(sum)], #cpus4, grad>> to tensor<3x6xf16, #sbp.global<[B], #cpus4, grad>>
// CHECK: %[[OVERFLOW:.*]] = nn.nonfinite_count %[[G]] : {{.*}} -> tensor<f32, #sbp.global<[B], #cpus4>>
// CHECK-NOT: P(sum)
// CHECK: %[[WIDE:.*]] = nn.cast %[[G]] : tensor<3x6xf16, {{.*}} to tensor<3x6xf32
// CHECK-NEXT: %[[UNSCALED:.*]] = nn.div %[[WIDE]], %{{.*}} -> tensor<3x6xf32
// CHECK-NEXT: %[[NEW:.*]] = nn.sgd %[[MASTER]], %[[UNSCALED]]
// CHECK: nn.loss_scale_update %[[SCALE]], %[[GOOD]], %[[HYST]], %[[OVERFLOW]] {hysteresis = 3 : i64, min_scale = 4.000000e+00 : f64, window = 100 : i64}
// CHECK: nn.assign "amp.loss_scale"
// CHECK: %[[KEPT:.*]] = nn.select %[[OVERFLOW]], %[[MASTER]], %[[NEW]]
// CHECK: nn.assign "w.master", %[[KEPT]]

// NOSTATE: error: zero-loss-scale: no amp.loss_scale state; run zero-amp with loss-scale=0 first
