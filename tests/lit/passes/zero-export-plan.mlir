// RUN: zero-opt %s --zero-memory-plan --zero-export-plan -o /dev/null | FileCheck %s
// RUN: not zero-opt %s --zero-export-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// RUN: not zero-opt %s --zero-memory-plan --zero-export-plan=config=notjson -o /dev/null 2>&1 | FileCheck %s --check-prefix=CONFIG

// UNPLANNED: has no memory plan (zero.buffers); run zero-memory-plan first
// CONFIG: zero-export-plan: config is not JSON

// The plan of one stage-2 step (docs/plan-format.md).
// CHECK: "format": "zerosbp-plan",
// CHECK-NEXT: "version": 2,
// CHECK-NEXT: "function": "plan",
// CHECK-NEXT: "world": 4,
// CHECK-NEXT: "placement": {
// CHECK-NEXT: "device": "cpu",
// CHECK: "memory": {
// CHECK: "model_states": 488,
// CHECK: "arena_bytes":
// CHECK: "buffers": [
// CHECK: "values": [
// CHECK: "variables": [
// CHECK: "name": "w",
// CHECK-NEXT: "value": 1,
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "local_shape": [
// CHECK: "role": "param",
// CHECK-NEXT: "init": "zeros",
// CHECK: "inputs": [
// CHECK: "name": "x",
// CHECK: "steps": [
// CHECK-NEXT: 0
// CHECK: "outputs": [
// CHECK-NEXT: 7
// Kernels read and write value ids; views and in-place assignments have no
// instruction; a collective names its kind, stream, bucket and segments.
// CHECK: "instructions": [
// CHECK: "op": "nn.matmul",
// CHECK: "transpose_rhs": true
// CHECK: "op": "collective_start",
// CHECK-NEXT: "kind": "reduce_scatter",
// CHECK-NEXT: "stream": "comm",
// CHECK-NEXT: "bucket": 0,
// CHECK-NEXT: "group_axis": 0,
// CHECK-NEXT: "group_size": 4,
// CHECK: "segments": [
// CHECK-NEXT: {
// CHECK-NEXT: "offset": 0,
// CHECK-NEXT: "numel": 64
// CHECK: "offset": 64,
// CHECK-NEXT: "numel": 8
// CHECK: "op": "collective_wait",
// CHECK-NEXT: "bucket": 0,
// CHECK-NEXT: "free": [
// CHECK: "op": "shard.all_slice",
// CHECK: "op": "nn.adam",
// CHECK: "op": "nn.sgd",
// CHECK: "op": "collective_start",
// CHECK-NEXT: "kind": "all_gather",
// CHECK-NOT: "staging":
// CHECK: "op": "collective_wait",
// CHECK-NEXT: "bucket": 1,
// CHECK: "op": "copy",
// CHECK-NEXT: "variable": "b",
// CHECK-NOT: "op":
// The checksum is the last member (docs/plan-format.md#checksum).
// CHECK: "checksum": "{{([0-9a-f]{8})}}"{{$}}
// CHECK-NEXT: {{^}}}{{$}}
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
module {
  shard.grid @cpus4(shape = 4) {zero.placement = #p}
  func.func @plan(%x: tensor<4x8xf32>) -> tensor<f32> {
    %step = nn.step : tensor<i64>
    %w = nn.variable "w" param : tensor<8x8xf32>
    %m = nn.variable "w.exp_avg" opt_state : tensor<16xf32>
    %v = nn.variable "w.exp_avg_sq" opt_state : tensor<16xf32>
    %b = nn.variable "b" param : tensor<8xf32>
    %x2 = nn.input "x" : tensor<4x8xf32>
    %y = nn.matmul %x2, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %l = nn.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
    %gw = nn.matmul %y, %x2 {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %gwf = nn.reshape %gw : tensor<8x8xf32> to tensor<64xf32>
    %gb = nn.reduce_sum %y {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
    %f = sbp.collective_start reduce_scatter %gwf, %gb on #p axis 0 {scatter_axis = 0, bucket = 0} : tensor<64xf32>, tensor<8xf32> -> !sbp.future<tensor<16xf32>, tensor<2xf32>>
    %r:2 = sbp.collective_wait %f : !sbp.future<tensor<16xf32>, tensor<2xf32>>
    %wf = nn.reshape %w : tensor<8x8xf32> to tensor<64xf32>
    %ws = shard.all_slice %wf on @cpus4 grid_axes = [0] slice_axis = 0 : tensor<64xf32> -> tensor<16xf32>
    %np, %nm, %nv = nn.adam %ws, %r#0, %m, %v, %step {lr = 1.0e-3} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i64>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    %bs = nn.slice %b {offsets = array<i64: 0>, sizes = array<i64: 2>} : (tensor<8xf32>) -> tensor<2xf32>
    %nb = nn.sgd %bs, %r#1 {lr = 0.1} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %g = sbp.collective_start all_gather %np, %nb on #p axis 0 {gather_axis = 0, bucket = 1} : tensor<16xf32>, tensor<2xf32> -> !sbp.future<tensor<64xf32>, tensor<8xf32>>
    %gg:2 = sbp.collective_wait %g : !sbp.future<tensor<64xf32>, tensor<8xf32>>
    %nw = nn.reshape %gg#0 : tensor<64xf32> to tensor<8x8xf32>
    nn.assign "w", %nw : tensor<8x8xf32>
    nn.assign "w.exp_avg", %nm : tensor<16xf32>
    nn.assign "w.exp_avg_sq", %nv : tensor<16xf32>
    nn.assign "b", %gg#1 : tensor<8xf32>
    return %l : tensor<f32>
  }
}
