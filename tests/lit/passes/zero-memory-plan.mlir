// RUN: zero-opt %s --zero-memory-plan --zero-verify-memory-plan | FileCheck %s
// RUN: zero-opt %s --zero-memory-plan=contiguous-gradients=false --zero-verify-memory-plan | FileCheck %s --check-prefix=NOCONTIG
// RUN: not zero-opt %s --zero-memory-plan=alignment=3 2>&1 | FileCheck %s --check-prefix=ALIGN

// ALIGN: zero-memory-plan: alignment must be a power of two, got 3

// One step of a stage-2 program (4 ranks): a two-gradient reduce-scatter
// bucket, an Adam and an SGD update, and an all-gather bucket of the
// updated shards.
//
// CHECK-LABEL: func.func @plan
// Persistent variables first; their buffers live for the whole run.
// CHECK-SAME: zero.buffers = [#sbp.buffer<offset = {{[0-9]+}}, bytes = 8, live = [0, 15], role = activation>, #sbp.buffer<offset = {{[0-9]+}}, bytes = 256, live = [0, 25], role = param>, #sbp.buffer<offset = {{[0-9]+}}, bytes = 64, live = [0, 25], role = opt_state>
// The full-size gradient bucket (256 + 32 bytes) lives from the first
// gradient to the collective.
// CHECK-SAME: #sbp.buffer<offset = {{[0-9]+}}, bytes = 288, live = [8, 12], role = comm_buffer>]
// Model states at their peak: w (256) + b (32) + Adam moments (128) +
// gradient shards (64 + 8) = 488 bytes.
// CHECK-SAME: zero.memory = {arena = {{[0-9]+}} : i64, lower_bound = {{[0-9]+}} : i64, model_states = 488 : i64, peak = {activation = {{[0-9]+}} : i64, comm_buffer = 288 : i64, grad = 72 : i64, input = 128 : i64, master = 0 : i64, opt_state = 128 : i64, param = 288 : i64}}
// CHECK: nn.variable "w" param {zero.slots = array<i64: [[W:[0-9]+]], 0>}
// CHECK: nn.variable "w.exp_avg" opt_state {zero.slots = array<i64: [[M:[0-9]+]], 0>}
// CHECK: nn.variable "w.exp_avg_sq" opt_state {zero.slots = array<i64: [[V:[0-9]+]], 0>}
// CHECK: nn.variable "b" param {zero.slots = array<i64: [[B:[0-9]+]], 0>}
// contiguous_gradients: both gradients are written straight into their
// slots of one bucket buffer, the reshape is a view.
// CHECK: nn.matmul {{.*}}transpose_lhs, zero.slots = array<i64: [[BUCKET:[0-9]+]], 0>
// CHECK-NEXT: nn.reshape {{.*}}zero.slots = array<i64: [[BUCKET]], 0>
// CHECK-NEXT: nn.reduce_sum {{.*}}zero.slots = array<i64: [[BUCKET]], 256>
// CHECK-NEXT: sbp.collective_start reduce_scatter
// CHECK-NOT: zero.staging
// CHECK-SAME: -> !sbp.future
// CHECK: nn.reshape %{{.*}} {zero.slots = array<i64: [[W]], 0>}
// CHECK-NEXT: shard.all_slice {{.*}}zero.slots = array<i64: [[SLICE:[0-9]+]], 0>
// Adam updates in place: the parameter shard and both moments.
// CHECK-NEXT: nn.adam {{.*}}zero.slots = array<i64: [[SLICE]], 0, [[M]], 0, [[V]], 0>
// CHECK-NEXT: nn.slice {{.*}}zero.slots = array<i64: [[B]], 0>
// CHECK-NEXT: nn.sgd {{.*}}zero.slots = array<i64: [[B]], 0>
// CHECK-NEXT: sbp.collective_start all_gather
// CHECK-NOT: zero.staging
// CHECK-SAME: -> !sbp.future
// The gathered w lands straight in its variable; b is copied, since its
// variable still holds the updated shard the gather reads.
// CHECK-NEXT: sbp.collective_wait {{.*}}zero.slots = array<i64: [[W]], 0, [[GB:[0-9]+]], 0>
// CHECK-NEXT: nn.reshape {{.*}}zero.slots = array<i64: [[W]], 0>
// CHECK-NEXT: nn.assign "w", %{{[0-9]+}} : tensor<8x8xf32>
// CHECK-NEXT: nn.assign "w.exp_avg", %{{.*}} : tensor<16xf32>
// CHECK-NEXT: nn.assign "w.exp_avg_sq", %{{.*}} : tensor<16xf32>
// CHECK-NEXT: nn.assign "b", %{{.*}} {zero.copy} : tensor<8xf32>

// Without contiguous_gradients each gradient keeps its own buffer and the
// bucket goes through a staging buffer.
// NOCONTIG-LABEL: func.func @plan
// NOCONTIG: nn.matmul {{.*}}transpose_lhs, zero.slots = array<i64: [[G1:[0-9]+]], 0>
// NOCONTIG-NEXT: nn.reshape {{.*}}zero.slots = array<i64: [[G1]], 0>
// NOCONTIG-NEXT: nn.reduce_sum {{.*}}zero.slots = array<i64: [[G2:[0-9]+]], 0>
// NOCONTIG-NEXT: sbp.collective_start reduce_scatter {{.*}}zero.staging = {{[0-9]+}}
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
