// Megatron's interleaved 1F1B: four 16x16 layers marked as virtual stages
// 0-3 of two stages with two model chunks each, so that stage 0 holds
// layers 0 and 2 and stage 1 layers 1 and 3. On these balanced chunks the
// planned bubble is (P - 1)/(V M + P - 1): 1/5 with M = 2, 1/9 with M = 4,
// against 1/3 and 1/5 without interleaving (zero-pipeline-stages.mlir).
// RUN: zero-opt %s --zero-accumulate=steps=2 --zero-autodiff --zero-optimizer \
// RUN:   --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=2 virtual-stages=2' \
// RUN:   | FileCheck %s --check-prefixes=CHECK,M2
// RUN: zero-opt %s --zero-accumulate=steps=4 --zero-autodiff --zero-optimizer \
// RUN:   --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=4 virtual-stages=2' \
// RUN:   | FileCheck %s --check-prefixes=M4
// RUN: zero-opt %s --zero-accumulate=steps=2 --zero-autodiff --zero-optimizer \
// RUN:   --zero-sbp-propagation --zero-stage=stage=1 \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=2 virtual-stages=2' \
// RUN:   | FileCheck %s --check-prefix=ORDER
// RUN: zero-opt %s --zero-accumulate=steps=2 --zero-autodiff --zero-optimizer \
// RUN:   --zero-sbp-propagation \
// RUN:   --zero-pipeline-stages='stages=2 micro-batches=2 virtual-stages=2' \
// RUN:   --zero-partition \
// RUN:   | FileCheck %s --check-prefix=LOCAL

// CHECK-DAG: #[[S0:.*]] = #sbp.placement<cpu, [0, 1]>
// CHECK-DAG: #[[S1:.*]] = #sbp.placement<cpu, [2, 3]>
// M2: zero.pipeline = {bubble = {{0\.19999999999[0-9]*|2\.0*e-01}} : f64, micro_batches = 2 : i64, model_chunks = 2 : i64, schedule = "1f1b"
// M4: zero.pipeline = {bubble = {{0\.11111111111[0-9]*}} : f64, micro_batches = 4 : i64, model_chunks = 2 : i64, schedule = "1f1b"
// Virtual stage v lives on stage v mod 2; the mark names the stage.
// CHECK-DAG: nn.variable "w1" {{.*}}zero.pipeline_stage = 1 : i64{{.*}}#[[S1]], param>>
// CHECK-DAG: nn.variable "w2" {{.*}}zero.pipeline_stage = 0 : i64{{.*}}#[[S0]], param>>
// CHECK-DAG: nn.variable "w3" {{.*}}zero.pipeline_stage = 1 : i64{{.*}}#[[S1]], param>>
// Layer 1's output goes back from stage 1 to stage 0 for layer 2.
// CHECK-DAG: sbp.cast %{{.*}} {zero.micro_batch = 0 : i64, zero.pipeline_stage = 1 : i64} : tensor<8x16xf32, #sbp.global<[S(0)], #[[S1]]>> to tensor<8x16xf32, #sbp.global<[S(0)], #[[S0]]>>

// With as many micro-batches as stages, stage 0 runs every forward first:
// both micro-batches through layer 0, then both through layer 2; then the
// backwards, layer 2's before layer 0's.
// ORDER: %[[W0:.*]] = nn.variable "w0"
// ORDER: %[[W2:.*]] = nn.variable "w2"
// ORDER: nn.matmul %{{.*}}, %[[W0]] {transpose_rhs, zero.micro_batch = 0 : i64
// ORDER: nn.matmul %{{.*}}, %[[W0]] {transpose_rhs, zero.micro_batch = 1 : i64
// ORDER: nn.matmul %{{.*}}, %[[W2]] {transpose_rhs, zero.micro_batch = 0 : i64
// ORDER: nn.matmul %{{.*}}, %[[W2]] {transpose_rhs, zero.micro_batch = 1 : i64
// ORDER: nn.matmul %{{.*}}, %[[W2]] {zero.micro_batch = 0 : i64
// ORDER: nn.matmul %{{.*}}, %[[W2]] {zero.micro_batch = 1 : i64
// ORDER: nn.matmul %{{.*}}, %[[W0]] {zero.micro_batch = 0 : i64
// ORDER: nn.matmul %{{.*}}, %[[W0]] {zero.micro_batch = 1 : i64

// Both micro-batches' outputs of layer 0 go to stage 1, layer 1's back to
// stage 0, layer 2's to stage 1 again.
// LOCAL-COUNT-2: sbp.send %{{.*}} from stage 0 to stage 1
// LOCAL-COUNT-2: sbp.send %{{.*}} from stage 1 to stage 0
// LOCAL-COUNT-2: sbp.send %{{.*}} from stage 0 to stage 1

#p = #sbp.placement<cpu, [0, 1]>
func.func @interleaved() -> tensor<f32> {
  %x = nn.input "x" : tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>
  %labels = nn.input "labels" : tensor<16xi64, #sbp.global<[S(0)], #p, input>>
  %b0 = nn.variable "b0" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16xf32, #sbp.global<[B], #p, param>>
  %h0 = nn.bias_add %x, %b0 {zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %w0 = nn.variable "w0" param init = uniform(0.25) {zero.pipeline_stage = 0 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m0 = nn.matmul %h0, %w0 {transpose_rhs, zero.pipeline_stage = 0 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %w1 = nn.variable "w1" param init = uniform(0.25) {zero.pipeline_stage = 1 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m1 = nn.matmul %m0, %w1 {transpose_rhs, zero.pipeline_stage = 1 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %w2 = nn.variable "w2" param init = uniform(0.25) {zero.pipeline_stage = 2 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m2 = nn.matmul %m1, %w2 {transpose_rhs, zero.pipeline_stage = 2 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %w3 = nn.variable "w3" param init = uniform(0.25) {zero.pipeline_stage = 3 : i64} : tensor<16x16xf32, #sbp.global<[B], #p, param>>
  %m3 = nn.matmul %m2, %w3 {transpose_rhs, zero.pipeline_stage = 3 : i64} : (tensor<16x16xf32>, tensor<16x16xf32, #sbp.global<[B], #p, param>>) -> tensor<16x16xf32>
  %loss = nn.cross_entropy %m3, %labels {zero.pipeline_stage = 3 : i64} : (tensor<16x16xf32>, tensor<16xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %loss : tensor<f32>
}
