// RUN: zero-opt %s --split-input-file --zero-bucketing=reduce-bucket-size=24 | FileCheck %s --check-prefix=FIT
// RUN: zero-opt %s --split-input-file --zero-bucketing=reduce-bucket-size=16 | FileCheck %s --check-prefix=SMALL
// RUN: zero-opt %s --split-input-file --zero-bucketing=reduce-bucket-size=1000 | FileCheck %s --check-prefix=CHECK
// RUN: not zero-opt %s --split-input-file --zero-bucketing=reduce-bucket-size=0 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: zero-bucketing: reduce-bucket-size must be at least 1, got 0

// Bucket boundaries. With 24 elements the first two gradients (16 + 8)
// share a bucket, placed after the second is produced, and the third
// (32, larger than any bucket) gets its own. With 16, each gets its own.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
module {
  shard.grid @cpus4(shape = 4) {zero.placement = #p}
  // FIT-LABEL: func.func @reduce_buckets
  // FIT: %[[A:.+]] = nn.fill 1.000000e+00
  // FIT: %[[B:.+]] = nn.fill 2.000000e+00
  // FIT-NEXT: %[[F0:.+]] = sbp.collective_start reduce_scatter %[[A]], %[[B]] on #cpus4 axis 0 {bucket = 0 : i64, scatter_axis = 0 : i64} : tensor<16xf32>, tensor<8xf32> -> !sbp.future<tensor<4xf32>, tensor<2xf32>>
  // FIT-NEXT: %[[W0:.+]]:2 = sbp.collective_wait %[[F0]]
  // FIT-NEXT: %[[C:.+]] = nn.fill 3.000000e+00
  // FIT-NEXT: %[[F1:.+]] = sbp.collective_start reduce_scatter %[[C]] on #cpus4 axis 0 {bucket = 1 : i64, scatter_axis = 0 : i64} : tensor<32xf32>
  // FIT-NEXT: %[[W1:.+]] = sbp.collective_wait %[[F1]]
  // FIT-NEXT: return %[[W0]]#0, %[[W0]]#1, %[[W1]]

  // SMALL-LABEL: func.func @reduce_buckets
  // SMALL: sbp.collective_start reduce_scatter %{{.*}} on #cpus4 axis 0 {bucket = 0 : i64, scatter_axis = 0 : i64} : tensor<16xf32> ->
  // SMALL: sbp.collective_start reduce_scatter %{{.*}} on #cpus4 axis 0 {bucket = 1 : i64, scatter_axis = 0 : i64} : tensor<8xf32> ->
  // SMALL: sbp.collective_start reduce_scatter %{{.*}} on #cpus4 axis 0 {bucket = 2 : i64, scatter_axis = 0 : i64} : tensor<32xf32> ->
  func.func @reduce_buckets() -> (tensor<4xf32>, tensor<2xf32>, tensor<8xf32>) {
    %a = nn.fill 1.0 : tensor<16xf32>
    %ra = shard.reduce_scatter %a on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<4xf32>
    %b = nn.fill 2.0 : tensor<8xf32>
    %rb = shard.reduce_scatter %b on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<2xf32>
    %c = nn.fill 3.0 : tensor<32xf32>
    %rc = shard.reduce_scatter %c on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<32xf32> -> tensor<8xf32>
    return %ra, %rb, %rc : tensor<4xf32>, tensor<2xf32>, tensor<8xf32>
  }
}

// -----

// A collective whose result is used before the next one's input exists
// cannot share its bucket; kinds and element types never mix.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
module {
  shard.grid @cpus4(shape = 4) {zero.placement = #p}
  // CHECK-LABEL: func.func @windows
  // CHECK: sbp.collective_start all_gather %{{.*}} {bucket = 0 : i64, gather_axis = 0 : i64} : tensor<2xf32> ->
  // CHECK: nn.relu
  // CHECK: sbp.collective_start all_gather %{{.*}} {bucket = 1 : i64, gather_axis = 0 : i64} : tensor<2xf32> ->
  // CHECK: sbp.collective_start all_reduce %{{.*}} {bucket = 2 : i64} : tensor<4xf32>, tensor<4xf32> ->
  // CHECK: sbp.collective_start all_reduce %{{.*}} {bucket = 3 : i64} : tensor<4xbf16> ->
  func.func @windows() -> (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>) {
    %a = nn.fill 1.0 : tensor<2xf32>
    %ga = shard.all_gather %a on @cpus4 grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<8xf32>
    %r = nn.relu %ga : (tensor<8xf32>) -> tensor<8xf32>
    %b = nn.slice %r {offsets = array<i64: 0>, sizes = array<i64: 2>} : (tensor<8xf32>) -> tensor<2xf32>
    %gb = shard.all_gather %b on @cpus4 grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<8xf32>
    %c = nn.fill 2.0 : tensor<4xf32>
    %rc = shard.all_reduce %c on @cpus4 grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    %d = nn.fill 3.0 : tensor<4xf32>
    %rd = shard.all_reduce %d on @cpus4 grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    %e = nn.fill 4.0 : tensor<4xbf16>
    %re = shard.all_reduce %e on @cpus4 grid_axes = [0] : tensor<4xbf16> -> tensor<4xbf16>
    return %r, %gb, %rc, %rd, %re : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>
  }
}

// -----

// Variables move to the top and assignments (with the views feeding them)
// to the end, so the gathers of two updated shards share one bucket.
#p = #sbp.placement<cpu, [0, 1]>
module {
  shard.grid @cpus2(shape = 2) {zero.placement = #p}
  // CHECK-LABEL: func.func @state
  // CHECK-NEXT: nn.variable "w"
  // CHECK-NEXT: nn.variable "b"
  // CHECK: %[[W:.+]] = nn.scale
  // CHECK: %[[B:.+]] = nn.scale
  // CHECK-NEXT: %[[F:.+]] = sbp.collective_start all_gather %[[W]], %[[B]] on #cpus2 axis 0 {bucket = 0 : i64, gather_axis = 0 : i64}
  // CHECK-NEXT: %[[G:.+]]:2 = sbp.collective_wait %[[F]]
  // CHECK-NEXT: nn.reshape %[[G]]#0
  // CHECK-NEXT: nn.assign "w"
  // CHECK-NEXT: nn.assign "b", %[[G]]#1
  // CHECK-NEXT: return
  func.func @state() {
    %w = nn.variable "w" param : tensor<2x4xf32>
    %wf = nn.reshape %w : tensor<2x4xf32> to tensor<8xf32>
    %ws = nn.slice %wf {offsets = array<i64: 0>, sizes = array<i64: 4>} : (tensor<8xf32>) -> tensor<4xf32>
    %w2 = nn.scale %ws {factor = 2.0} : (tensor<4xf32>) -> tensor<4xf32>
    %wg = shard.all_gather %w2 on @cpus2 grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
    %wr = nn.reshape %wg : tensor<8xf32> to tensor<2x4xf32>
    nn.assign "w", %wr : tensor<2x4xf32>
    %b = nn.variable "b" param : tensor<4xf32>
    %bs = nn.slice %b {offsets = array<i64: 0>, sizes = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
    %b2 = nn.scale %bs {factor = 2.0} : (tensor<2xf32>) -> tensor<2xf32>
    %bg = shard.all_gather %b2 on @cpus2 grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
    nn.assign "b", %bg : tensor<4xf32>
    return
  }
}
