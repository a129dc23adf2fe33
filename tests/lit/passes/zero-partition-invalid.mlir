// RUN: split-file %s %t
// RUN: zero-opt %t/spmd.mlir -split-input-file -zero-partition -verify-diagnostics
// RUN: zero-opt %t/rank.mlir -split-input-file -zero-partition=rank=0 -verify-diagnostics
// RUN: not zero-opt %t/range.mlir -zero-partition=rank=4 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not zero-opt %t/range.mlir -zero-partition=rank=-2 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not zero-opt %t/pipeline.mlir --zero-pipeline='stage=0 world=4' -zero-partition 2>&1 | FileCheck %s --check-prefix=PIPELINE

//--- spmd.mlir
// A graph without SBP (propagation has not run).
func.func @unannotated() -> tensor<f32> {
  // expected-error@+1 {{'nn.input' op result #0 of type 'tensor<8x6xf32>' has no #sbp.global encoding; zero-partition needs a fully annotated graph (run zero-sbp-propagation first)}}
  %x = nn.input "x" : tensor<8x6xf32>
  %l = nn.reduce_mean %x {axes = array<i64: 0, 1>} : (tensor<8x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// One value without SBP is enough.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @partly_annotated() {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0)], #p, input>>
  // expected-error@+1 {{'nn.relu' op result #0 of type 'tensor<8x6xf32>' has no #sbp.global encoding}}
  %r = nn.relu %x : (tensor<8x6xf32, #sbp.global<[S(0)], #p, input>>) -> tensor<8x6xf32>
  return
}

// -----

// A batch of 10 on 4 ranks has parts of 3, 3, 2 and 2 rows: no single
// program fits every rank.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @uneven_spmd() {
  // expected-error@+1 {{'nn.input' op result #0 of type 'tensor<10x6xf32, #sbp.global<[S(0)], #sbp.placement<cpu, [0, 1, 2, 3]>, input>>' splits dim 0 (size 10) unevenly over 4 ranks; the SPMD program (rank=-1) needs even splits: pad the tensor, or pass rank=N for the program of rank N}}
  %x = nn.input "x" : tensor<10x6xf32, #sbp.global<[S(0)], #p, input>>
  return
}

// -----

// On a 2 x 2 grid the message names the hierarchy axis.
#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @uneven_grid_axis() {
  // expected-error@+1 {{splits dim 0 (size 5) unevenly over 2 ranks of hierarchy axis 1}}
  %x = nn.input "x" : tensor<10x6xf32, #sbp.global<[S(0), S(0)], #g, input>>
  return
}

// -----

// Zeros around the local part are no partial max.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @split_to_partial_max(%x: tensor<8xf32, #sbp.global<[S(0)], #p>>) {
  // expected-error@+1 {{'sbp.cast' op from [S(0)] to [P(max)]: S -> P(max) is not supported by zero-partition}}
  %0 = sbp.cast %x : tensor<8xf32, #sbp.global<[S(0)], #p>> to tensor<8xf32, #sbp.global<[P(max)], #p>>
  return
}

// -----

// The global view holds nn ops and casts only.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @foreign_op(%x: tensor<8xf32, #sbp.global<[B], #p>>) {
  // expected-error@+1 {{'arith.addf' op has no zero-partition rule; the global view holds nn ops and sbp.cast}}
  %0 = arith.addf %x, %x : tensor<8xf32, #sbp.global<[B], #p>>
  return
}

//--- rank.mlir
// The program of one rank holds uneven parts, but the upstream shard
// collectives need equal shards on every rank.
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @uneven_gather(%x: tensor<10x6xf32, #sbp.global<[S(0)], #p>>) {
  // expected-error@+1 {{'sbp.cast' op from [S(0)] to [B]: shard.all_gather needs equal shards, but dim 0 (size 10) splits unevenly over 4 ranks; pad the tensor to a multiple of 4}}
  %0 = sbp.cast %x : tensor<10x6xf32, #sbp.global<[S(0)], #p>> to tensor<10x6xf32, #sbp.global<[B], #p>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @uneven_reduce_scatter(%x: tensor<10xf32, #sbp.global<[P(sum)], #p>>) {
  // expected-error@+1 {{'sbp.cast' op from [P(sum)] to [S(0)]: shard.reduce_scatter needs equal shards, but dim 0 (size 10) splits unevenly over 4 ranks; pad the tensor to a multiple of 4}}
  %0 = sbp.cast %x : tensor<10xf32, #sbp.global<[P(sum)], #p>> to tensor<10xf32, #sbp.global<[S(0)], #p>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @uneven_all_to_all(%x: tensor<10x8xf32, #sbp.global<[S(1)], #p>>) {
  // expected-error@+1 {{'sbp.cast' op from [S(1)] to [S(0)]: shard.all_to_all needs equal shards, but dim 0 (size 10) splits unevenly over 4 ranks}}
  %0 = sbp.cast %x : tensor<10x8xf32, #sbp.global<[S(1)], #p>> to tensor<10x8xf32, #sbp.global<[S(0)], #p>>
  return
}

//--- range.mlir
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @range() {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0)], #p, input>>
  return
}
// RANGE: error: zero-partition: rank=4 is out of range for @range: its placement #sbp.placement<cpu, [0, 1, 2, 3]> has 4 ranks; pass one of them, or -1 for the SPMD program
// NEGATIVE: error: zero-partition: rank must be -1 (the SPMD program) or a rank of the placement, got -2

//--- pipeline.mlir
// The whole pipeline on an uneven batch: the SPMD partition names the input
// and suggests rank=N.
func.func @pipeline() -> tensor<f32> {
  %x = nn.input "x" : tensor<10x6xf32>
  %l = nn.reduce_mean %x {axes = array<i64: 0, 1>} : (tensor<10x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// PIPELINE: pipeline.mlir:4:8: error: 'nn.input' op result #0 {{.*}} splits dim 0 (size 10) unevenly over 4 ranks; {{.*}} pass rank=N
