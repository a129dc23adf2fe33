// RUN: zero-opt %s --split-input-file --zero-schedule | FileCheck %s --check-prefix=SYNC
// RUN: zero-opt %s --split-input-file --zero-schedule=overlap-comm=true | FileCheck %s --check-prefix=OVERLAP
// RUN: zero-opt %s --split-input-file --zero-schedule="overlap-comm=true prefetch-bucket-size=10" | FileCheck %s --check-prefix=NOPREFETCH
// RUN: zero-opt %s --split-input-file --zero-schedule="overlap-comm=true max-live-parameters=40" | FileCheck %s --check-prefix=LIVE
// RUN: zero-opt %s --split-input-file --zero-schedule="max-reuse-distance=100" | FileCheck %s --check-prefix=REUSE
// RUN: not zero-opt %s --split-input-file --zero-schedule=max-reuse-distance=-1 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: zero-schedule: max-reuse-distance must not be negative, got -1

// A gradient bucket: without overlap_comm the reduce-scatter is
// synchronous; with it the start stays right after the gradient and the
// wait moves down to the update, so the second matmul runs meanwhile.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
module {
  // SYNC-LABEL: func.func @overlap
  // SYNC: %[[F:.+]] = sbp.collective_start reduce_scatter
  // SYNC-NEXT: sbp.collective_wait %[[F]]
  // SYNC-NEXT: nn.matmul

  // OVERLAP-LABEL: func.func @overlap
  // OVERLAP: %[[G:.+]] = nn.reshape
  // OVERLAP-NEXT: %[[F:.+]] = sbp.collective_start reduce_scatter %[[G]]
  // OVERLAP-NEXT: %[[H:.+]] = nn.matmul
  // OVERLAP-NEXT: %[[R:.+]] = sbp.collective_wait %[[F]]
  // OVERLAP-NEXT: nn.sgd %{{.*}}, %[[R]]
  func.func @overlap(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<8x8xf32> {
    %w = nn.variable "w" param : tensor<16xf32>
    %g = nn.matmul %dy, %x {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %gf = nn.reshape %g : tensor<8x8xf32> to tensor<64xf32>
    %f = sbp.collective_start reduce_scatter %gf on #p axis 0 {scatter_axis = 0, bucket = 0} : tensor<64xf32> -> !sbp.future<tensor<16xf32>>
    %r = sbp.collective_wait %f : !sbp.future<tensor<16xf32>>
    %h = nn.matmul %dy, %dy {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %new = nn.sgd %w, %r {lr = 0.1} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    nn.assign "w", %new : tensor<16xf32>
    return %h : tensor<8x8xf32>
  }
}

// -----

// Stage 1: the gradients exist early, but each is flattened right before its
// update. With overlap_comm each reduce-scatter (with its flattening
// reshape) starts right after its gradient, in issue order, with at most
// two in flight: the third starts after the first one's wait.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
module {
  // SYNC-LABEL: func.func @early_reductions
  // SYNC: nn.matmul
  // SYNC: %[[H:.+]] = nn.matmul %arg0, %arg0
  // SYNC-NEXT: nn.reshape
  // SYNC-NEXT: sbp.collective_start reduce_scatter

  // OVERLAP-LABEL: func.func @early_reductions
  // OVERLAP: %[[G0:.+]] = nn.matmul %arg1, %arg0
  // OVERLAP-NEXT: %[[F0IN:.+]] = nn.reshape %[[G0]]
  // OVERLAP-NEXT: %[[F0:.+]] = sbp.collective_start reduce_scatter %[[F0IN]] {{.*}}bucket = 0
  // OVERLAP-NEXT: %[[G1:.+]] = nn.matmul %arg0, %arg1
  // OVERLAP-NEXT: %[[F1IN:.+]] = nn.reshape %[[G1]]
  // OVERLAP-NEXT: %[[F1:.+]] = sbp.collective_start reduce_scatter %[[F1IN]] {{.*}}bucket = 1
  // OVERLAP-NEXT: %[[G2:.+]] = nn.matmul %arg1, %arg1
  // OVERLAP-NEXT: nn.matmul %arg0, %arg0
  // OVERLAP-NEXT: %[[R0:.+]] = sbp.collective_wait %[[F0]]
  // OVERLAP-NEXT: %[[F2IN:.+]] = nn.reshape %[[G2]]
  // OVERLAP-NEXT: %[[F2:.+]] = sbp.collective_start reduce_scatter %[[F2IN]] {{.*}}bucket = 2
  // OVERLAP-NEXT: nn.sgd %{{.*}}, %[[R0]]
  // OVERLAP: sbp.collective_wait %[[F1]]
  // OVERLAP: sbp.collective_wait %[[F2]]
  func.func @early_reductions(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<8x8xf32> {
    %w0 = nn.variable "w0" param : tensor<16xf32>
    %w1 = nn.variable "w1" param : tensor<16xf32>
    %w2 = nn.variable "w2" param : tensor<16xf32>
    %g0 = nn.matmul %dy, %x {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %g1 = nn.matmul %x, %dy {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %g2 = nn.matmul %dy, %dy {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %h = nn.matmul %x, %x {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %f0in = nn.reshape %g0 : tensor<8x8xf32> to tensor<64xf32>
    %f0 = sbp.collective_start reduce_scatter %f0in on #p axis 0 {scatter_axis = 0, bucket = 0} : tensor<64xf32> -> !sbp.future<tensor<16xf32>>
    %r0 = sbp.collective_wait %f0 : !sbp.future<tensor<16xf32>>
    %n0 = nn.sgd %w0, %r0 {lr = 0.1} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    nn.assign "w0", %n0 : tensor<16xf32>
    %f1in = nn.reshape %g1 : tensor<8x8xf32> to tensor<64xf32>
    %f1 = sbp.collective_start reduce_scatter %f1in on #p axis 0 {scatter_axis = 0, bucket = 1} : tensor<64xf32> -> !sbp.future<tensor<16xf32>>
    %r1 = sbp.collective_wait %f1 : !sbp.future<tensor<16xf32>>
    %n1 = nn.sgd %w1, %r1 {lr = 0.1} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    nn.assign "w1", %n1 : tensor<16xf32>
    %f2in = nn.reshape %g2 : tensor<8x8xf32> to tensor<64xf32>
    %f2 = sbp.collective_start reduce_scatter %f2in on #p axis 0 {scatter_axis = 0, bucket = 2} : tensor<64xf32> -> !sbp.future<tensor<16xf32>>
    %r2 = sbp.collective_wait %f2 : !sbp.future<tensor<16xf32>>
    %n2 = nn.sgd %w2, %r2 {lr = 0.1} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    nn.assign "w2", %n2 : tensor<16xf32>
    return %h : tensor<8x8xf32>
  }
}

// -----

// Stage 3: three parameter buckets used one after the other. With
// overlap_comm the gather of each bucket starts right after the previous
// bucket's wait (prefetch while that layer computes), as far back as the
// prefetch size allows; a prefetch size below a bucket's size, or a live
// limit below two buckets, leaves the gather right before its use.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
module {
  // OVERLAP-LABEL: func.func @prefetch
  // OVERLAP: %[[FA:.+]] = sbp.collective_start all_gather %{{.*}} {bucket = 0 : i64
  // OVERLAP-NEXT: %[[A:.+]] = sbp.collective_wait %[[FA]]
  // OVERLAP-NEXT: %[[FB:.+]] = sbp.collective_start all_gather %{{.*}} {bucket = 1 : i64
  // OVERLAP-NEXT: %[[FC:.+]] = sbp.collective_start all_gather %{{.*}} {bucket = 2 : i64
  // OVERLAP-NEXT: nn.relu %[[A]]
  // OVERLAP-NEXT: %[[B:.+]] = sbp.collective_wait %[[FB]]
  // OVERLAP-NEXT: nn.relu %[[B]]
  // OVERLAP-NEXT: %[[C:.+]] = sbp.collective_wait %[[FC]]
  // OVERLAP-NEXT: nn.relu %[[C]]

  // NOPREFETCH-LABEL: func.func @prefetch
  // NOPREFETCH: sbp.collective_start all_gather
  // NOPREFETCH-NEXT: sbp.collective_wait
  // NOPREFETCH-NEXT: nn.relu
  // NOPREFETCH-NEXT: sbp.collective_start all_gather
  // NOPREFETCH-NEXT: sbp.collective_wait
  // NOPREFETCH-NEXT: nn.relu

  // LIVE-LABEL: func.func @prefetch
  // LIVE: sbp.collective_wait
  // LIVE-NEXT: %[[FB:.+]] = sbp.collective_start all_gather %{{.*}} {bucket = 1 : i64
  // LIVE-NEXT: nn.relu
  // LIVE-NEXT: sbp.collective_wait %[[FB]]
  // LIVE-NEXT: sbp.collective_start all_gather %{{.*}} {bucket = 2 : i64
  // LIVE-NEXT: nn.relu
  func.func @prefetch() -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
    %a = nn.variable "a" param : tensor<4xf32>
    %b = nn.variable "b" param : tensor<4xf32>
    %c = nn.variable "c" param : tensor<4xf32>
    %fa = sbp.collective_start all_gather %a on #p axis 0 {gather_axis = 0, bucket = 0} : tensor<4xf32> -> !sbp.future<tensor<16xf32>>
    %ga = sbp.collective_wait %fa : !sbp.future<tensor<16xf32>>
    %ra = nn.relu %ga : (tensor<16xf32>) -> tensor<16xf32>
    %fb = sbp.collective_start all_gather %b on #p axis 0 {gather_axis = 0, bucket = 1} : tensor<4xf32> -> !sbp.future<tensor<16xf32>>
    %gb = sbp.collective_wait %fb : !sbp.future<tensor<16xf32>>
    %rb = nn.relu %gb : (tensor<16xf32>) -> tensor<16xf32>
    %fc = sbp.collective_start all_gather %c on #p axis 0 {gather_axis = 0, bucket = 2} : tensor<4xf32> -> !sbp.future<tensor<16xf32>>
    %gc = sbp.collective_wait %fc : !sbp.future<tensor<16xf32>>
    %rc = nn.relu %gc : (tensor<16xf32>) -> tensor<16xf32>
    return %ra, %rb, %rc : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  }
}

// -----

// stage3_max_reuse_distance: the backward gather of "w" follows its forward
// copy's last use with 16 gathered elements ("v") in between. Within the
// distance the forward copy serves the backward and the gather goes; by
// default (0) it is gathered again.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
module {
  // SYNC-LABEL: func.func @reuse
  // SYNC-COUNT-3: sbp.collective_start all_gather

  // REUSE-LABEL: func.func @reuse
  // REUSE: %[[FW:.+]] = sbp.collective_start all_gather %{{.*}} {bucket = 0 : i64
  // REUSE-NEXT: %[[GW:.+]] = sbp.collective_wait %[[FW]]
  // REUSE: sbp.collective_start all_gather %{{.*}} {bucket = 1 : i64
  // REUSE-NOT: sbp.collective_start
  // REUSE: nn.scale %[[GW]]
  func.func @reuse() -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
    %w = nn.variable "w" param : tensor<4xf32>
    %v = nn.variable "v" param : tensor<4xf32>
    %fw = sbp.collective_start all_gather %w on #p axis 0 {gather_axis = 0, bucket = 0} : tensor<4xf32> -> !sbp.future<tensor<16xf32>>
    %gw = sbp.collective_wait %fw : !sbp.future<tensor<16xf32>>
    %y = nn.relu %gw : (tensor<16xf32>) -> tensor<16xf32>
    %fv = sbp.collective_start all_gather %v on #p axis 0 {gather_axis = 0, bucket = 1} : tensor<4xf32> -> !sbp.future<tensor<16xf32>>
    %gv = sbp.collective_wait %fv : !sbp.future<tensor<16xf32>>
    %z = nn.relu %gv : (tensor<16xf32>) -> tensor<16xf32>
    %seed = nn.fill 1.0 {zero.loss_seed} : tensor<f32>
    %fw2 = sbp.collective_start all_gather %w on #p axis 0 {gather_axis = 0, bucket = 2} : tensor<4xf32> -> !sbp.future<tensor<16xf32>>
    %gw2 = sbp.collective_wait %fw2 : !sbp.future<tensor<16xf32>>
    %d = nn.scale %gw2 {factor = 2.0} : (tensor<16xf32>) -> tensor<16xf32>
    return %y, %z, %d : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  }
}
