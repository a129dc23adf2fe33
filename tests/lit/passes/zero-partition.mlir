// RUN: split-file %s %t
// RUN: zero-opt %t/mlp.mlir --zero-pipeline='stage=0 world=4 optimizer=sgd' -zero-partition | FileCheck %s --check-prefix=STAGE0
// RUN: zero-opt %t/mlp.mlir --zero-pipeline='stage=1 world=4 optimizer=sgd' -zero-partition | FileCheck %s --check-prefix=STAGE1
// RUN: zero-opt %t/mlp.mlir --zero-pipeline='stage=2 world=4 optimizer=sgd' -zero-partition | FileCheck %s --check-prefix=STAGE2
// RUN: zero-opt %t/mlp.mlir --zero-pipeline='stage=3 world=4 optimizer=sgd stage3-param-persistence-threshold=0' -zero-partition | FileCheck %s --check-prefix=STAGE3
// RUN: zero-opt %t/mlp.mlir --zero-pipeline='stage=3 world=4 optimizer=sgd stage3-param-persistence-threshold=0' -zero-partition | zero-opt | FileCheck %s --check-prefix=STAGE3
// RUN: zero-opt %t/mlp.mlir --zero-pipeline='stage=3 world=1 optimizer=sgd stage3-param-persistence-threshold=0' -zero-partition | zero-opt | FileCheck %s --check-prefix=ONE
// RUN: zero-opt %t/grid.mlir --zero-pipeline='stage=2 world=4 optimizer=sgd' -zero-partition | zero-opt | FileCheck %s --check-prefix=GRID
// RUN: zero-opt %t/uneven.mlir --zero-pipeline='stage=0 world=4 optimizer=sgd' -zero-partition=rank=0 | zero-opt | FileCheck %s --check-prefix=RANK0
// RUN: zero-opt %t/uneven.mlir --zero-pipeline='stage=0 world=4 optimizer=sgd' -zero-partition=rank=3 | zero-opt | FileCheck %s --check-prefix=RANK3
// RUN: zero-opt %t/boxing.mlir -zero-partition | zero-opt | FileCheck %s --check-prefix=SPMD
// RUN: zero-opt %t/boxing.mlir -zero-partition=rank=1 | zero-opt | FileCheck %s --check-prefix=BOX1
// RUN: zero-opt %t/grid-boxing.mlir -zero-partition | zero-opt | FileCheck %s --check-prefix=GRIDBOX
// RUN: zero-opt %t/grid-boxing.mlir -zero-partition=rank=3 | zero-opt | FileCheck %s --check-prefix=GRIDBOX3

// The whole global pipeline, then the partition to one rank's view.

//--- mlp.mlir
// A two-layer MLP on a batch of 8, placed by the pipeline on 4 CPU ranks:
// the batch is split (8 -> 2 rows per rank), the weights are broadcast.
// An activation mean is added to the loss to show reduce_mean's count.
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32>
  %y = nn.input "y" : tensor<8xi64>
  %w1 = nn.variable "w1" param : tensor<5x6xf32>
  %w2 = nn.variable "w2" param : tensor<3x5xf32>
  %b2 = nn.variable "b2" param : tensor<3xf32>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x6xf32>, tensor<5x6xf32>) -> tensor<8x5xf32>
  %r = nn.relu %h : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %z = nn.matmul %r, %w2 {transpose_rhs} : (tensor<8x5xf32>, tensor<3x5xf32>) -> tensor<8x3xf32>
  %logits = nn.bias_add %z, %b2 : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %ce = nn.cross_entropy %logits, %y : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
  %act = nn.reduce_mean %r {axes = array<i64: 0, 1>} : (tensor<8x5xf32>) -> tensor<f32>
  %loss = nn.add %ce, %act : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// Stage 0: local shapes, the global counts of the means, and one
// all-reduce per gradient and for the loss.
// STAGE0: shard.grid @cpus4(shape = 4) {zero.placement = #cpus4}
// STAGE0-LABEL: func.func @mlp() -> tensor<f32> attributes {zero.stage = 0 : i64}
// STAGE0: %[[X:.*]] = nn.input "x" {zero.global_type = tensor<8x6xf32, #sbp.global<[S(0)], #cpus4, input>>} : tensor<2x6xf32>
// STAGE0: %[[Y:.*]] = nn.input "y" {zero.global_type = tensor<8xi64, #sbp.global<[S(0)], #cpus4, input>>} : tensor<2xi64>
// STAGE0: %[[W1:.*]] = nn.variable "w1" param {zero.global_type = tensor<5x6xf32, #sbp.global<[B], #cpus4, param>>} : tensor<5x6xf32>
// STAGE0: nn.matmul %[[X]], %[[W1]] {transpose_rhs} : (tensor<2x6xf32>, tensor<5x6xf32>) -> tensor<2x5xf32>
// STAGE0: %[[CE:.*]] = nn.cross_entropy %[[LOGITS:.*]], %[[Y]] {count = 8 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
// STAGE0: nn.reduce_mean %{{.*}} {axes = array<i64: 0, 1>, count = 40 : i64} : (tensor<2x5xf32>) -> tensor<f32>
// The backward's whole-batch gradient of the mean is sliced, no traffic.
// STAGE0: nn.fill 0.000000e+00 : tensor<8x5xf32>
// STAGE0: nn.cross_entropy_grad %{{.*}}, %[[LOGITS]], %[[Y]] {count = 8 : i64} : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// STAGE0: shard.all_slice %{{.*}} on @cpus4 grid_axes = [0] slice_axis = 0 : tensor<8x5xf32> -> tensor<2x5xf32>
// STAGE0: %[[DW1:.*]] = shard.all_reduce %{{.*}} on @cpus4 grid_axes = [0] : tensor<5x6xf32> -> tensor<5x6xf32>
// STAGE0-NEXT: nn.sgd %[[W1]], %[[DW1]] {{.*}} -> tensor<5x6xf32>
// STAGE0: shard.all_reduce %{{.*}} on @cpus4 grid_axes = [0] : tensor<3x5xf32> -> tensor<3x5xf32>
// STAGE0: shard.all_reduce %{{.*}} on @cpus4 grid_axes = [0] : tensor<3xf32> -> tensor<3xf32>
// STAGE0: %[[LOSS:.*]] = shard.all_reduce %{{.*}} on @cpus4 grid_axes = [0] : tensor<f32> -> tensor<f32>
// STAGE0-NEXT: return %[[LOSS]] : tensor<f32>
// STAGE0-NOT: sbp.cast

// Stage 1: the flat, padded gradient (30 -> 32) is reduce-scattered to 8
// elements per rank, the broadcast weight sliced locally, the update runs
// on the shards and the new weight is all-gathered.
// STAGE1-LABEL: func.func @mlp()
// STAGE1: nn.variable "w1" param {zero.global_type = tensor<5x6xf32, #sbp.global<[B], #cpus4, param>>} : tensor<5x6xf32>
// STAGE1: %[[PAD:.*]] = nn.pad %{{.*}} {high = array<i64: 2>, low = array<i64: 0>} : (tensor<30xf32>) -> tensor<32xf32>
// STAGE1-NEXT: %[[RS:.*]] = shard.reduce_scatter %[[PAD]] on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<32xf32> -> tensor<8xf32>
// STAGE1: %[[SL:.*]] = shard.all_slice %{{.*}} on @cpus4 grid_axes = [0] slice_axis = 0 : tensor<32xf32> -> tensor<8xf32>
// STAGE1-NEXT: %[[NEW:.*]] = nn.sgd %[[SL]], %[[RS]] {{.*}} -> tensor<8xf32>
// STAGE1-NEXT: %[[AG:.*]] = shard.all_gather %[[NEW]] on @cpus4 grid_axes = [0] gather_axis = 0 : tensor<8xf32> -> tensor<32xf32>
// STAGE1-NEXT: nn.slice %[[AG]] {offsets = array<i64: 0>, sizes = array<i64: 30>} : (tensor<32xf32>) -> tensor<30xf32>
// STAGE1: nn.assign "w1", %{{.*}} : tensor<5x6xf32>
// STAGE1: shard.reduce_scatter %{{.*}} on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<4xf32>
// STAGE1: shard.reduce_scatter %{{.*}} on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<1xf32>

// Stage 2: the same collectives, each reduce-scatter right where backward
// produced the gradient.
// STAGE2-LABEL: func.func @mlp()
// STAGE2: %[[DB2:.*]] = nn.reduce_sum %{{.*}} {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
// STAGE2-NEXT: %[[PAD:.*]] = nn.pad %[[DB2]] {{.*}} -> tensor<4xf32>
// STAGE2-NEXT: shard.reduce_scatter %[[PAD]] on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<1xf32>
// STAGE2: shard.reduce_scatter %{{.*}} on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<4xf32>
// STAGE2-NEXT: shard.all_slice
// STAGE2: shard.reduce_scatter %{{.*}} on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<32xf32> -> tensor<8xf32>
// STAGE2: nn.sgd {{.*}} -> tensor<8xf32>

// Stage 3: the variables are the shards (flat 32 -> 8 per rank); every use
// all-gathers them, the update writes the shard.
// STAGE3: shard.grid @cpus4(shape = 4) {zero.placement = #cpus4}
// STAGE3-LABEL: func.func @mlp()
// STAGE3: %[[W1:.*]] = nn.variable "w1" param {logical_shape = array<i64: 5, 6>, zero.global_type = tensor<32xf32, #sbp.global<[S(0)], #cpus4, param>>} : tensor<8xf32>
// STAGE3: %[[W2:.*]] = nn.variable "w2" param {logical_shape = array<i64: 3, 5>, zero.global_type = tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>} : tensor<4xf32>
// STAGE3: %[[B2:.*]] = nn.variable "b2" param {logical_shape = array<i64: 3>, zero.global_type = tensor<4xf32, #sbp.global<[S(0)], #cpus4, param>>} : tensor<1xf32>
// STAGE3: %[[G1:.*]] = shard.all_gather %[[W1]] on @cpus4 grid_axes = [0] gather_axis = 0 : tensor<8xf32> -> tensor<32xf32>
// STAGE3-NEXT: %[[T1:.*]] = nn.slice %[[G1]] {offsets = array<i64: 0>, sizes = array<i64: 30>} : (tensor<32xf32>) -> tensor<30xf32>
// STAGE3-NEXT: %[[M1:.*]] = nn.reshape %[[T1]] : tensor<30xf32> to tensor<5x6xf32>
// STAGE3-NEXT: nn.matmul %{{.*}}, %[[M1]] {transpose_rhs} : (tensor<2x6xf32>, tensor<5x6xf32>) -> tensor<2x5xf32>
// STAGE3: shard.all_gather %[[W2]] on @cpus4 grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<16xf32>
// STAGE3: nn.cross_entropy {{.*}} {count = 8 : i64}
// STAGE3: nn.cross_entropy_grad {{.*}} {count = 8 : i64}
// STAGE3: shard.all_gather %[[W2]] on @cpus4 grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<16xf32>
// STAGE3: %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @cpus4 grid_axes = [0] scatter_axis = 0 : tensor<32xf32> -> tensor<8xf32>
// STAGE3-NEXT: %[[NEW:.*]] = nn.sgd %[[W1]], %[[RS]] {{.*}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// STAGE3-NEXT: nn.assign "w1", %[[NEW]] : tensor<8xf32>
// STAGE3: return %{{.*}} : tensor<f32>

// One rank: the local view is the global one, every collective moves
// nothing and is left out.
// ONE: shard.grid @cpus1(shape = 1) {zero.placement = #cpus1}
// ONE-LABEL: func.func @mlp()
// ONE: nn.input "x" {{.*}} : tensor<8x6xf32>
// ONE: %[[W1:.*]] = nn.variable "w1" param {{.*}} : tensor<30xf32>
// ONE-NEXT: nn.variable "w2" param {{.*}} : tensor<15xf32>
// ONE-NEXT: nn.variable "b2" param {{.*}} : tensor<3xf32>
// ONE-NEXT: nn.reshape %[[W1]] : tensor<30xf32> to tensor<5x6xf32>
// ONE-NOT: shard.{{[a-z_]+}} %

//--- grid.mlir
// A 2 x 2 placement: data parallel over both axes, stage 2 shards padded
// to a multiple of all 4 ranks. Collectives run axis by axis: scattering
// the outer axis first, gathering the inner axis first, so the 4 shards
// stay in rank order.
#grid = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @grid() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x3xf32, #sbp.global<[S(0), S(0)], #grid, input>>
  %w = nn.variable "w" param : tensor<3xf32, #sbp.global<[B, B], #grid, param>>
  %h = nn.mul %x, %w : (tensor<8x3xf32, #sbp.global<[S(0), S(0)], #grid, input>>, tensor<3xf32, #sbp.global<[B, B], #grid, param>>) -> tensor<8x3xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// GRID: shard.grid @cpus4_2x2(shape = 2x2) {zero.placement = #cpus4}
// GRID-LABEL: func.func @grid()
// GRID: nn.input "x" {zero.global_type = tensor<8x3xf32, #sbp.global<[S(0), S(0)], #cpus4, input>>} : tensor<2x3xf32>
// GRID: nn.reduce_mean %{{.*}} {axes = array<i64: 0, 1>, count = 24 : i64} : (tensor<2x3xf32>) -> tensor<f32>
// GRID: %[[RS0:.*]] = shard.reduce_scatter %{{.*}} on @cpus4_2x2 grid_axes = [0] scatter_axis = 0 : tensor<4xf32> -> tensor<2xf32>
// GRID-NEXT: %[[RS1:.*]] = shard.reduce_scatter %[[RS0]] on @cpus4_2x2 grid_axes = [1] scatter_axis = 0 : tensor<2xf32> -> tensor<1xf32>
// GRID: %[[NEW:.*]] = nn.sgd %{{.*}}, %[[RS1]] {{.*}} -> tensor<1xf32>
// GRID-NEXT: %[[AG1:.*]] = shard.all_gather %[[NEW]] on @cpus4_2x2 grid_axes = [1] gather_axis = 0 : tensor<1xf32> -> tensor<2xf32>
// GRID-NEXT: shard.all_gather %[[AG1]] on @cpus4_2x2 grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
// GRID: %[[L0:.*]] = shard.all_reduce %{{.*}} on @cpus4_2x2 grid_axes = [0] : tensor<f32> -> tensor<f32>
// GRID-NEXT: %[[L1:.*]] = shard.all_reduce %[[L0]] on @cpus4_2x2 grid_axes = [1] : tensor<f32> -> tensor<f32>
// GRID-NEXT: return %[[L1]] : tensor<f32>

//--- uneven.mlir
// A batch of 10 on 4 ranks: balanced parts of 3, 3, 2, 2 rows. Only the
// program of one rank (rank=N) can hold it; the means still divide by the
// global counts.
func.func @uneven() -> tensor<f32> {
  %x = nn.input "x" : tensor<10x6xf32>
  %w = nn.variable "w" param : tensor<6xf32>
  %h = nn.mul %x, %w : (tensor<10x6xf32>, tensor<6xf32>) -> tensor<10x6xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<10x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// RANK0-LABEL: func.func @uneven() -> tensor<f32> attributes {zero.rank = 0 : i64, zero.stage = 0 : i64}
// RANK0: nn.input "x" {zero.global_type = tensor<10x6xf32, #sbp.global<[S(0)], #cpus4, input>>} : tensor<3x6xf32>
// RANK0: nn.reduce_mean %{{.*}} {axes = array<i64: 0, 1>, count = 60 : i64} : (tensor<3x6xf32>) -> tensor<f32>
// The whole-batch gradient of the mean: rank 0 keeps rows 0-2.
// RANK0: nn.slice %{{.*}} {offsets = array<i64: 0, 0>, sizes = array<i64: 3, 6>} : (tensor<10x6xf32>) -> tensor<3x6xf32>
// RANK0: shard.all_reduce %{{.*}} on @cpus4 grid_axes = [0] : tensor<6xf32> -> tensor<6xf32>

// RANK3-LABEL: func.func @uneven() -> tensor<f32> attributes {zero.rank = 3 : i64, zero.stage = 0 : i64}
// RANK3: nn.input "x" {{.*}} : tensor<2x6xf32>
// RANK3: nn.reduce_mean %{{.*}} {axes = array<i64: 0, 1>, count = 60 : i64} : (tensor<2x6xf32>) -> tensor<f32>
// RANK3: nn.slice %{{.*}} {offsets = array<i64: 8, 0>, sizes = array<i64: 2, 6>} : (tensor<10x6xf32>) -> tensor<2x6xf32>
// RANK3: shard.all_reduce %{{.*}} on @cpus4 grid_axes = [0] : tensor<6xf32> -> tensor<6xf32>

//--- boxing.mlir
// Every cast of docs/ir.md#boxing on one hierarchy axis.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @boxing(%ps: tensor<8x4xf32, #sbp.global<[P(sum)], #p>>, %pm: tensor<8x4xf32, #sbp.global<[P(max)], #p>>, %s: tensor<8x4xf32, #sbp.global<[S(0)], #p>>, %b: tensor<8x4xf32, #sbp.global<[B], #p>>) -> (tensor<8x4xf32, #sbp.global<[B], #p>>, tensor<8x4xf32, #sbp.global<[B], #p>>, tensor<8x4xf32, #sbp.global<[S(1)], #p>>, tensor<8x4xf32, #sbp.global<[B], #p>>, tensor<8x4xf32, #sbp.global<[S(1)], #p>>, tensor<8x4xf32, #sbp.global<[S(0)], #p>>, tensor<8x4xf32, #sbp.global<[P(sum)], #p>>, tensor<8x4xf32, #sbp.global<[P(max)], #p>>, tensor<8x4xf32, #sbp.global<[P(sum)], #p>>) {
  %0 = sbp.cast %ps : tensor<8x4xf32, #sbp.global<[P(sum)], #p>> to tensor<8x4xf32, #sbp.global<[B], #p>>
  %1 = sbp.cast %pm : tensor<8x4xf32, #sbp.global<[P(max)], #p>> to tensor<8x4xf32, #sbp.global<[B], #p>>
  %2 = sbp.cast %ps : tensor<8x4xf32, #sbp.global<[P(sum)], #p>> to tensor<8x4xf32, #sbp.global<[S(1)], #p>>
  %3 = sbp.cast %s : tensor<8x4xf32, #sbp.global<[S(0)], #p>> to tensor<8x4xf32, #sbp.global<[B], #p>>
  %4 = sbp.cast %s : tensor<8x4xf32, #sbp.global<[S(0)], #p>> to tensor<8x4xf32, #sbp.global<[S(1)], #p>>
  %5 = sbp.cast %b : tensor<8x4xf32, #sbp.global<[B], #p>> to tensor<8x4xf32, #sbp.global<[S(0)], #p>>
  %6 = sbp.cast %b : tensor<8x4xf32, #sbp.global<[B], #p>> to tensor<8x4xf32, #sbp.global<[P(sum)], #p>>
  %7 = sbp.cast %b : tensor<8x4xf32, #sbp.global<[B], #p>> to tensor<8x4xf32, #sbp.global<[P(max)], #p>>
  %8 = sbp.cast %s : tensor<8x4xf32, #sbp.global<[S(0)], #p>> to tensor<8x4xf32, #sbp.global<[P(sum)], #p>>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<8x4xf32, #sbp.global<[B], #p>>, tensor<8x4xf32, #sbp.global<[B], #p>>, tensor<8x4xf32, #sbp.global<[S(1)], #p>>, tensor<8x4xf32, #sbp.global<[B], #p>>, tensor<8x4xf32, #sbp.global<[S(1)], #p>>, tensor<8x4xf32, #sbp.global<[S(0)], #p>>, tensor<8x4xf32, #sbp.global<[P(sum)], #p>>, tensor<8x4xf32, #sbp.global<[P(max)], #p>>, tensor<8x4xf32, #sbp.global<[P(sum)], #p>>
}
// SPMD-LABEL: func.func @boxing(
// SPMD-SAME: %[[PS:.*]]: tensor<8x4xf32>, %[[PM:.*]]: tensor<8x4xf32>, %[[S:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<8x4xf32>)
// SPMD-SAME: -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x1xf32>, tensor<8x4xf32>, tensor<8x1xf32>, tensor<2x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
// SPMD-NEXT: %[[R0:.*]] = shard.all_reduce %[[PS]] on @cpus4 grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
// SPMD-NEXT: %[[R1:.*]] = shard.all_reduce %[[PM]] on @cpus4 grid_axes = [0] reduction = max : tensor<8x4xf32> -> tensor<8x4xf32>
// SPMD-NEXT: %[[R2:.*]] = shard.reduce_scatter %[[PS]] on @cpus4 grid_axes = [0] scatter_axis = 1 : tensor<8x4xf32> -> tensor<8x1xf32>
// SPMD-NEXT: %[[R3:.*]] = shard.all_gather %[[S]] on @cpus4 grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
// SPMD-NEXT: %[[R4:.*]] = shard.all_to_all %[[S]] on @cpus4 grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x4xf32> -> tensor<8x1xf32>
// SPMD-NEXT: %[[R5:.*]] = shard.all_slice %[[B]] on @cpus4 grid_axes = [0] slice_axis = 0 : tensor<8x4xf32> -> tensor<2x4xf32>
// B -> P(sum): rank 0 keeps the value, the others hold zeros.
// SPMD-NEXT: %[[R6:.*]] = sbp.to_partial %[[B]] on axis 0 : tensor<8x4xf32> -> tensor<8x4xf32>
// S -> P(sum): the local rows in place, zeros around them.
// SPMD-NEXT: %[[R8:.*]] = sbp.to_partial %[[S]] on axis 0 split 0 : tensor<2x4xf32> -> tensor<8x4xf32>
// B -> P(max) keeps the value: equal copies reduce to it.
// SPMD-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]], %[[R6]], %[[B]], %[[R8]] :

// The program of rank 1 decides rank-dependent casts statically.
// BOX1-LABEL: func.func @boxing(
// BOX1-SAME: attributes {zero.rank = 1 : i64}
// BOX1: shard.all_slice
// BOX1-NEXT: %[[ZEROS:.*]] = nn.fill 0.000000e+00 : tensor<8x4xf32>
// BOX1-NEXT: %[[PAD:.*]] = nn.pad %{{.*}} {high = array<i64: 4, 0>, low = array<i64: 2, 0>} : (tensor<2x4xf32>) -> tensor<8x4xf32>
// BOX1-NEXT: return {{.*}}, %[[ZEROS]], %{{.*}}, %[[PAD]] :
// BOX1-NOT: process_linear_index

//--- grid-boxing.mlir
// Casts on a 2 x 2 grid, one step per hierarchy axis that changes.
#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @grid_boxing(%s: tensor<8x4xf32, #sbp.global<[S(0), S(0)], #g>>, %b: tensor<8x4xf32, #sbp.global<[B, B], #g>>, %x: tensor<8x4xf32, #sbp.global<[S(0), S(1)], #g>>) -> (tensor<8x4xf32, #sbp.global<[B, B], #g>>, tensor<8x4xf32, #sbp.global<[P(sum), P(sum)], #g>>, tensor<8x4xf32, #sbp.global<[S(0), B], #g>>, tensor<8x4xf32, #sbp.global<[S(0), S(1)], #g>>) {
  %0 = sbp.cast %s : tensor<8x4xf32, #sbp.global<[S(0), S(0)], #g>> to tensor<8x4xf32, #sbp.global<[B, B], #g>>
  %1 = sbp.cast %b : tensor<8x4xf32, #sbp.global<[B, B], #g>> to tensor<8x4xf32, #sbp.global<[P(sum), P(sum)], #g>>
  %2 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[S(0), S(1)], #g>> to tensor<8x4xf32, #sbp.global<[S(0), B], #g>>
  %3 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[S(0), S(1)], #g>> to tensor<8x4xf32, #sbp.global<[S(0), S(1)], #g>>
  return %0, %1, %2, %3 : tensor<8x4xf32, #sbp.global<[B, B], #g>>, tensor<8x4xf32, #sbp.global<[P(sum), P(sum)], #g>>, tensor<8x4xf32, #sbp.global<[S(0), B], #g>>, tensor<8x4xf32, #sbp.global<[S(0), S(1)], #g>>
}
// GRIDBOX: shard.grid @cpus4_2x2(shape = 2x2) {zero.placement = #cpus4}
// GRIDBOX-LABEL: func.func @grid_boxing(
// GRIDBOX-SAME: %[[S:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<8x4xf32>, %[[X:.*]]: tensor<4x2xf32>)
// GRIDBOX-NEXT: %[[G1:.*]] = shard.all_gather %[[S]] on @cpus4_2x2 grid_axes = [1] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// GRIDBOX-NEXT: %[[G0:.*]] = shard.all_gather %[[G1]] on @cpus4_2x2 grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// GRIDBOX-NEXT: %[[P0:.*]] = sbp.to_partial %[[B]] on axis 0 : tensor<8x4xf32> -> tensor<8x4xf32>
// GRIDBOX-NEXT: %[[P:.*]] = sbp.to_partial %[[P0]] on axis 1 : tensor<8x4xf32> -> tensor<8x4xf32>
// GRIDBOX-NEXT: %[[C:.*]] = shard.all_gather %[[X]] on @cpus4_2x2 grid_axes = [1] gather_axis = 1 : tensor<4x2xf32> -> tensor<4x4xf32>
// GRIDBOX-NEXT: return %[[G0]], %[[P]], %[[C]], %[[X]] :

// Rank 3 is (1, 1) on the grid: both axes zero B -> P(sum).
// GRIDBOX3-LABEL: func.func @grid_boxing(
// GRIDBOX3-SAME: attributes {zero.rank = 3 : i64}
// GRIDBOX3: %[[ZEROS:.*]] = nn.fill 0.000000e+00 : tensor<8x4xf32>
// GRIDBOX3-NEXT: shard.all_gather
// GRIDBOX3-NEXT: return %{{.*}}, %[[ZEROS]], %{{.*}}, %{{.*}} :
