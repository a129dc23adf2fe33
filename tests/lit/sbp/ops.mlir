// RUN: zero-opt %s -split-input-file | FileCheck %s
// Printing and parsing again gives the same IR: custom form, generic form,
// and with every placement written inline instead of as an alias.
// RUN: zero-opt %s -split-input-file | zero-opt -split-input-file | FileCheck %s
// RUN: zero-opt %s -split-input-file --mlir-print-op-generic | zero-opt -split-input-file | FileCheck %s
// RUN: zero-opt %s -split-input-file --mlir-print-local-scope | zero-opt -split-input-file | FileCheck %s
// RUN: zero-opt %s -split-input-file -canonicalize | FileCheck %s --check-prefix=CANON

//===----------------------------------------------------------------------===//
// Placements: 1-D and 2-D hierarchies, cpu and cuda. Each is printed once as
// an alias named after its device kind and rank count.
//===----------------------------------------------------------------------===//

// CHECK: #[[CPU4:cpus4]] = #sbp.placement<cpu, [0, 1, 2, 3]>
// CHECK: #[[CPU4B:cpus4_1]] = #sbp.placement<cpu, [4, 5, 6, 7]>
// CHECK: #[[CPU4H:cpus4_2]] = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
// CHECK: #[[GPU1:gpus1]] = #sbp.placement<cuda, [3]>
// CHECK: #[[GPU8R:gpus8]] = #sbp.placement<cuda, [7, 6, 5, 4, 3, 2, 1, 0], hierarchy = [8]>
// CHECK: #[[GPU8:gpus8_1]] = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>
// CHECK-LABEL: func.func @placements()
// CHECK-SAME: cpu_1d = #[[CPU4]]
// CHECK-SAME: cpu_1d_other_ranks = #[[CPU4B]]
// CHECK-SAME: cpu_2d = #[[CPU4H]]
// CHECK-SAME: cuda_1d = #[[GPU8R]]
// CHECK-SAME: cuda_2d = #[[GPU8]]
// CHECK-SAME: cuda_single = #[[GPU1]]
func.func @placements() attributes {
  cpu_1d = #sbp.placement<cpu, [0, 1, 2, 3]>,
  cpu_1d_other_ranks = #sbp.placement<cpu, [4, 5, 6, 7]>,
  cpu_2d = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>,
  cuda_1d = #sbp.placement<cuda, [7, 6, 5, 4, 3, 2, 1, 0], hierarchy = [8]>,
  cuda_2d = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>,
  cuda_single = #sbp.placement<cuda, [3]>
} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// Standalone SBP attributes.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sbp_forms
// CHECK-SAME: broadcast = #sbp.sbp<B>
// CHECK-SAME: partial_max = #sbp.sbp<P(max)>
// CHECK-SAME: partial_sum = #sbp.sbp<P(sum)>
// CHECK-SAME: split_0 = #sbp.sbp<S(0)>
// CHECK-SAME: split_3 = #sbp.sbp<S(3)>
func.func @sbp_forms() attributes {
  broadcast = #sbp.sbp<B>,
  partial_max = #sbp.sbp<P(max)>,
  partial_sum = #sbp.sbp<P(sum)>,
  split_0 = #sbp.sbp<S(0)>,
  split_3 = #sbp.sbp<S(3)>
} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// Global tensor encodings: every SBP form and every role. `activation` is the
// default role and is not printed.
//===----------------------------------------------------------------------===//

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK: #[[P:cpus4]] = #sbp.placement<cpu, [0, 1, 2, 3]>
// CHECK-LABEL: func.func @encodings_1d(
// CHECK-SAME: tensor<8x4xf32, #sbp.global<[B], #[[P]]>>
// CHECK-SAME: tensor<8x4xf32, #sbp.global<[S(0)], #[[P]], param>>
// CHECK-SAME: tensor<8x4xf32, #sbp.global<[S(1)], #[[P]], grad>>
// CHECK-SAME: tensor<8x4xf32, #sbp.global<[P(sum)], #[[P]], master>>
// CHECK-SAME: tensor<8x4xf32, #sbp.global<[P(max)], #[[P]], opt_state>>
// CHECK-SAME: tensor<8x4xf32, #sbp.global<[B], #[[P]]>>
// CHECK-SAME: tensor<8x4xi64, #sbp.global<[S(0)], #[[P]], input>>
// CHECK-SAME: tensor<f32, #sbp.global<[P(sum)], #[[P]]>>
func.func @encodings_1d(
    %b: tensor<8x4xf32, #sbp.global<[B], #p>>,
    %s0: tensor<8x4xf32, #sbp.global<[S(0)], #p, param>>,
    %s1: tensor<8x4xf32, #sbp.global<[S(1)], #p, grad>>,
    %psum: tensor<8x4xf32, #sbp.global<[P(sum)], #p, master>>,
    %pmax: tensor<8x4xf32, #sbp.global<[P(max)], #p, opt_state>>,
    %act: tensor<8x4xf32, #sbp.global<[B], #p, activation>>,
    %ids: tensor<8x4xi64, #sbp.global<[S(0)], #p, input>>,
    %scalar: tensor<f32, #sbp.global<[P(sum)], #p>>) {
  return
}

// -----

#g = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>

// CHECK: #[[G:gpus8]] = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>
// CHECK-LABEL: func.func @encodings_2d(
// CHECK-SAME: tensor<16x8xbf16, #sbp.global<[S(0), S(1)], #[[G]], param>>
// CHECK-SAME: tensor<16x8xf16, #sbp.global<[B, P(sum)], #[[G]], grad>>
// CHECK-SAME: tensor<16x8xf32, #sbp.global<[P(max), B], #[[G]]>>
func.func @encodings_2d(
    %a: tensor<16x8xbf16, #sbp.global<[S(0), S(1)], #g, param>>,
    %b: tensor<16x8xf16, #sbp.global<[B, P(sum)], #g, grad>>,
    %c: tensor<16x8xf32, #sbp.global<[P(max), B], #g>>) {
  return
}

// -----

//===----------------------------------------------------------------------===//
// sbp.cast: one case per collective class on a 1-D placement.
//===----------------------------------------------------------------------===//

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// P -> B: all-reduce.
// CHECK-LABEL: func.func @cast_partial_to_broadcast(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x4xf32, #sbp.global<[P(sum)], #cpus4>>
// CHECK: %[[R:.+]] = sbp.cast %[[X]] : tensor<8x4xf32, #sbp.global<[P(sum)], #cpus4>> to tensor<8x4xf32, #sbp.global<[B], #cpus4>>
// CHECK: return %[[R]]
func.func @cast_partial_to_broadcast(%x: tensor<8x4xf32, #sbp.global<[P(sum)], #p>>)
    -> tensor<8x4xf32, #sbp.global<[B], #p>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[P(sum)], #p>>
                  to tensor<8x4xf32, #sbp.global<[B], #p>>
  return %0 : tensor<8x4xf32, #sbp.global<[B], #p>>
}

// P(max) -> B: all-reduce with max.
// CHECK-LABEL: func.func @cast_partial_max_to_broadcast(
// CHECK: sbp.cast %{{.*}} : tensor<8x4xf32, #sbp.global<[P(max)], #cpus4>> to tensor<8x4xf32, #sbp.global<[B], #cpus4>>
func.func @cast_partial_max_to_broadcast(%x: tensor<8x4xf32, #sbp.global<[P(max)], #p>>)
    -> tensor<8x4xf32, #sbp.global<[B], #p>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[P(max)], #p>>
                  to tensor<8x4xf32, #sbp.global<[B], #p>>
  return %0 : tensor<8x4xf32, #sbp.global<[B], #p>>
}

// P -> S: reduce-scatter. The role is kept.
// CHECK-LABEL: func.func @cast_partial_to_split(
// CHECK: sbp.cast %{{.*}} : tensor<8x4xf32, #sbp.global<[P(sum)], #cpus4, grad>> to tensor<8x4xf32, #sbp.global<[S(0)], #cpus4, grad>>
func.func @cast_partial_to_split(%x: tensor<8x4xf32, #sbp.global<[P(sum)], #p, grad>>)
    -> tensor<8x4xf32, #sbp.global<[S(0)], #p, grad>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[P(sum)], #p, grad>>
                  to tensor<8x4xf32, #sbp.global<[S(0)], #p, grad>>
  return %0 : tensor<8x4xf32, #sbp.global<[S(0)], #p, grad>>
}

// S -> B: all-gather.
// CHECK-LABEL: func.func @cast_split_to_broadcast(
// CHECK: sbp.cast %{{.*}} : tensor<8x4xf32, #sbp.global<[S(0)], #cpus4, param>> to tensor<8x4xf32, #sbp.global<[B], #cpus4, param>>
func.func @cast_split_to_broadcast(%x: tensor<8x4xf32, #sbp.global<[S(0)], #p, param>>)
    -> tensor<8x4xf32, #sbp.global<[B], #p, param>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[S(0)], #p, param>>
                  to tensor<8x4xf32, #sbp.global<[B], #p, param>>
  return %0 : tensor<8x4xf32, #sbp.global<[B], #p, param>>
}

// S(i) -> S(j): all-to-all.
// CHECK-LABEL: func.func @cast_split_to_split(
// CHECK: sbp.cast %{{.*}} : tensor<8x4xf32, #sbp.global<[S(0)], #cpus4>> to tensor<8x4xf32, #sbp.global<[S(1)], #cpus4>>
func.func @cast_split_to_split(%x: tensor<8x4xf32, #sbp.global<[S(0)], #p>>)
    -> tensor<8x4xf32, #sbp.global<[S(1)], #p>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[S(0)], #p>>
                  to tensor<8x4xf32, #sbp.global<[S(1)], #p>>
  return %0 : tensor<8x4xf32, #sbp.global<[S(1)], #p>>
}

// B -> S: a local slice.
// CHECK-LABEL: func.func @cast_broadcast_to_split(
// CHECK: sbp.cast %{{.*}} : tensor<8x4xf32, #sbp.global<[B], #cpus4, opt_state>> to tensor<8x4xf32, #sbp.global<[S(1)], #cpus4, opt_state>>
func.func @cast_broadcast_to_split(%x: tensor<8x4xf32, #sbp.global<[B], #p, opt_state>>)
    -> tensor<8x4xf32, #sbp.global<[S(1)], #p, opt_state>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[B], #p, opt_state>>
                  to tensor<8x4xf32, #sbp.global<[S(1)], #p, opt_state>>
  return %0 : tensor<8x4xf32, #sbp.global<[S(1)], #p, opt_state>>
}

// B -> P: rank 0 keeps the value, the others hold zeros.
// CHECK-LABEL: func.func @cast_broadcast_to_partial(
// CHECK: sbp.cast %{{.*}} : tensor<8x4xf32, #sbp.global<[B], #cpus4, master>> to tensor<8x4xf32, #sbp.global<[P(sum)], #cpus4, master>>
func.func @cast_broadcast_to_partial(%x: tensor<8x4xf32, #sbp.global<[B], #p, master>>)
    -> tensor<8x4xf32, #sbp.global<[P(sum)], #p, master>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[B], #p, master>>
                  to tensor<8x4xf32, #sbp.global<[P(sum)], #p, master>>
  return %0 : tensor<8x4xf32, #sbp.global<[P(sum)], #p, master>>
}

// A cast to the same type is legal; it folds away (see below).
// CHECK-LABEL: func.func @cast_identity(
// CHECK: sbp.cast %{{.*}} : tensor<8x4xf32, #sbp.global<[S(0)], #cpus4>> to tensor<8x4xf32, #sbp.global<[S(0)], #cpus4>>
func.func @cast_identity(%x: tensor<8x4xf32, #sbp.global<[S(0)], #p>>)
    -> tensor<8x4xf32, #sbp.global<[S(0)], #p>> {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[S(0)], #p>>
                  to tensor<8x4xf32, #sbp.global<[S(0)], #p>>
  return %0 : tensor<8x4xf32, #sbp.global<[S(0)], #p>>
}

// -----

//===----------------------------------------------------------------------===//
// sbp.cast on a 2-D hierarchy: each axis changes independently.
//===----------------------------------------------------------------------===//

#g = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>

// Reduce on the outer axis, keep the inner split.
// CHECK-LABEL: func.func @cast_2d_outer_axis(
// CHECK: sbp.cast %{{.*}} : tensor<16x8xf32, #sbp.global<[P(sum), S(1)], #gpus8, grad>> to tensor<16x8xf32, #sbp.global<[B, S(1)], #gpus8, grad>>
func.func @cast_2d_outer_axis(%x: tensor<16x8xf32, #sbp.global<[P(sum), S(1)], #g, grad>>)
    -> tensor<16x8xf32, #sbp.global<[B, S(1)], #g, grad>> {
  %0 = sbp.cast %x : tensor<16x8xf32, #sbp.global<[P(sum), S(1)], #g, grad>>
                  to tensor<16x8xf32, #sbp.global<[B, S(1)], #g, grad>>
  return %0 : tensor<16x8xf32, #sbp.global<[B, S(1)], #g, grad>>
}

// Both axes change: all-gather on one, reduce-scatter on the other.
// CHECK-LABEL: func.func @cast_2d_both_axes(
// CHECK: sbp.cast %{{.*}} : tensor<16x8xf32, #sbp.global<[S(0), P(sum)], #gpus8>> to tensor<16x8xf32, #sbp.global<[B, S(0)], #gpus8>>
func.func @cast_2d_both_axes(%x: tensor<16x8xf32, #sbp.global<[S(0), P(sum)], #g>>)
    -> tensor<16x8xf32, #sbp.global<[B, S(0)], #g>> {
  %0 = sbp.cast %x : tensor<16x8xf32, #sbp.global<[S(0), P(sum)], #g>>
                  to tensor<16x8xf32, #sbp.global<[B, S(0)], #g>>
  return %0 : tensor<16x8xf32, #sbp.global<[B, S(0)], #g>>
}

// All-to-all on the inner axis only.
// CHECK-LABEL: func.func @cast_2d_inner_axis(
// CHECK: sbp.cast %{{.*}} : tensor<16x8xf32, #sbp.global<[B, S(0)], #gpus8, param>> to tensor<16x8xf32, #sbp.global<[B, S(1)], #gpus8, param>>
func.func @cast_2d_inner_axis(%x: tensor<16x8xf32, #sbp.global<[B, S(0)], #g, param>>)
    -> tensor<16x8xf32, #sbp.global<[B, S(1)], #g, param>> {
  %0 = sbp.cast %x : tensor<16x8xf32, #sbp.global<[B, S(0)], #g, param>>
                  to tensor<16x8xf32, #sbp.global<[B, S(1)], #g, param>>
  return %0 : tensor<16x8xf32, #sbp.global<[B, S(1)], #g, param>>
}

// -----

//===----------------------------------------------------------------------===//
// Folding: a cast to its own type folds to its input; a cast that changes
// the SBP stays, even when its result is only returned.
//===----------------------------------------------------------------------===//

#p = #sbp.placement<cpu, [0, 1]>

// CHECK-LABEL: func.func @fold_same_type(
// CHECK-COUNT-2: sbp.cast
// CANON-LABEL: func.func @fold_same_type(
// CANON-SAME: %[[X:[a-z0-9]+]]: tensor<8x4xf32, #sbp.global<[S(0)], #cpus2>>
// CANON-NEXT: %[[R:.+]] = sbp.cast %[[X]] : tensor<8x4xf32, #sbp.global<[S(0)], #cpus2>> to tensor<8x4xf32, #sbp.global<[B], #cpus2>>
// CANON-NEXT: return %[[X]], %[[R]] :
func.func @fold_same_type(%x: tensor<8x4xf32, #sbp.global<[S(0)], #p>>)
    -> (tensor<8x4xf32, #sbp.global<[S(0)], #p>>,
        tensor<8x4xf32, #sbp.global<[B], #p>>) {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[S(0)], #p>>
                  to tensor<8x4xf32, #sbp.global<[S(0)], #p>>
  %1 = sbp.cast %0 : tensor<8x4xf32, #sbp.global<[S(0)], #p>>
                  to tensor<8x4xf32, #sbp.global<[B], #p>>
  return %0, %1 : tensor<8x4xf32, #sbp.global<[S(0)], #p>>,
                  tensor<8x4xf32, #sbp.global<[B], #p>>
}

// An unused cast is dead code (the op is pure).
// CANON-LABEL: func.func @fold_dead_cast(
// CANON-NOT: sbp.cast
// CANON: return
func.func @fold_dead_cast(%x: tensor<8x4xf32, #sbp.global<[P(sum)], #p>>) {
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[P(sum)], #p>>
                  to tensor<8x4xf32, #sbp.global<[B], #p>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Async collectives on per-rank tensors: all four kinds, start then wait.
//===----------------------------------------------------------------------===//

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// CHECK-LABEL: func.func @all_reduce(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<16x8xf32>
// CHECK: %[[F:.+]] = sbp.collective_start all_reduce %[[X]] on #cpus4 axis 0 : tensor<16x8xf32> -> !sbp.future<tensor<16x8xf32>>
// CHECK: %[[R:.+]] = sbp.collective_wait %[[F]] : !sbp.future<tensor<16x8xf32>>
// CHECK: return %[[R]] : tensor<16x8xf32>
func.func @all_reduce(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %f = sbp.collective_start all_reduce %x on #p axis 0
      : tensor<16x8xf32> -> !sbp.future<tensor<16x8xf32>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<16x8xf32>>
  return %r : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @bucket(
// CHECK: %[[F:.+]] = sbp.collective_start reduce_scatter %{{.*}}, %{{.*}} on #cpus4 axis 0 {bucket = 2 : i64, scatter_axis = 0 : i64} : tensor<16xf32>, tensor<8xf32> -> !sbp.future<tensor<4xf32>, tensor<2xf32>>
// CHECK: %{{.*}}:2 = sbp.collective_wait %[[F]] : !sbp.future<tensor<4xf32>, tensor<2xf32>>
func.func @bucket(%a: tensor<16xf32>, %b: tensor<8xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  %f = sbp.collective_start reduce_scatter %a, %b on #p axis 0 {scatter_axis = 0, bucket = 2}
      : tensor<16xf32>, tensor<8xf32> -> !sbp.future<tensor<4xf32>, tensor<2xf32>>
  %r:2 = sbp.collective_wait %f : !sbp.future<tensor<4xf32>, tensor<2xf32>>
  return %r#0, %r#1 : tensor<4xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @all_reduce_max(
// CHECK: sbp.collective_start all_reduce %{{.*}} on #cpus4 axis 0 {reduce = #sbp<reduce max>} : tensor<16x8xf32> -> !sbp.future<tensor<16x8xf32>>
func.func @all_reduce_max(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %f = sbp.collective_start all_reduce %x on #p axis 0 {reduce = #sbp<reduce max>}
      : tensor<16x8xf32> -> !sbp.future<tensor<16x8xf32>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<16x8xf32>>
  return %r : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @all_gather(
// CHECK: sbp.collective_start all_gather %{{.*}} on #cpus4 axis 0 {gather_axis = 0 : i64} : tensor<4x8xf32> -> !sbp.future<tensor<16x8xf32>>
// CHECK: sbp.collective_wait %{{.*}} : !sbp.future<tensor<16x8xf32>>
func.func @all_gather(%x: tensor<4x8xf32>) -> tensor<16x8xf32> {
  %f = sbp.collective_start all_gather %x on #p axis 0 {gather_axis = 0}
      : tensor<4x8xf32> -> !sbp.future<tensor<16x8xf32>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<16x8xf32>>
  return %r : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @reduce_scatter(
// CHECK: sbp.collective_start reduce_scatter %{{.*}} on #cpus4 axis 0 {scatter_axis = 1 : i64} : tensor<16x8xf16> -> !sbp.future<tensor<16x2xf16>>
// CHECK: sbp.collective_wait %{{.*}} : !sbp.future<tensor<16x2xf16>>
func.func @reduce_scatter(%x: tensor<16x8xf16>) -> tensor<16x2xf16> {
  %f = sbp.collective_start reduce_scatter %x on #p axis 0 {scatter_axis = 1}
      : tensor<16x8xf16> -> !sbp.future<tensor<16x2xf16>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<16x2xf16>>
  return %r : tensor<16x2xf16>
}

// CHECK-LABEL: func.func @all_to_all(
// CHECK: sbp.collective_start all_to_all %{{.*}} on #cpus4 axis 0 {gather_axis = 0 : i64, scatter_axis = 1 : i64} : tensor<4x16xbf16> -> !sbp.future<tensor<16x4xbf16>>
// CHECK: sbp.collective_wait %{{.*}} : !sbp.future<tensor<16x4xbf16>>
func.func @all_to_all(%x: tensor<4x16xbf16>) -> tensor<16x4xbf16> {
  %f = sbp.collective_start all_to_all %x on #p axis 0 {gather_axis = 0, scatter_axis = 1}
      : tensor<4x16xbf16> -> !sbp.future<tensor<16x4xbf16>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<16x4xbf16>>
  return %r : tensor<16x4xbf16>
}

// The collectives have side effects: -canonicalize keeps an unused start.
// CANON-LABEL: func.func @unused_start(
// CANON: sbp.collective_start all_reduce
func.func @unused_start(%x: tensor<16x8xf32>) {
  %f = sbp.collective_start all_reduce %x on #p axis 0
      : tensor<16x8xf32> -> !sbp.future<tensor<16x8xf32>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Collectives over one axis of a 2-D hierarchy: the group is that axis' size.
//===----------------------------------------------------------------------===//

#g = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>

// Axis 0 has 2 ranks.
// CHECK-LABEL: func.func @all_gather_outer_axis(
// CHECK: sbp.collective_start all_gather %{{.*}} on #gpus8 axis 0 {gather_axis = 0 : i64} : tensor<4x8xf32> -> !sbp.future<tensor<8x8xf32>>
func.func @all_gather_outer_axis(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %f = sbp.collective_start all_gather %x on #g axis 0 {gather_axis = 0}
      : tensor<4x8xf32> -> !sbp.future<tensor<8x8xf32>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<8x8xf32>>
  return %r : tensor<8x8xf32>
}

// Axis 1 has 4 ranks.
// CHECK-LABEL: func.func @reduce_scatter_inner_axis(
// CHECK: sbp.collective_start reduce_scatter %{{.*}} on #gpus8 axis 1 {scatter_axis = 0 : i64} : tensor<8x8xf32> -> !sbp.future<tensor<2x8xf32>>
func.func @reduce_scatter_inner_axis(%x: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %f = sbp.collective_start reduce_scatter %x on #g axis 1 {scatter_axis = 0}
      : tensor<8x8xf32> -> !sbp.future<tensor<2x8xf32>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<2x8xf32>>
  return %r : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @all_reduce_inner_axis(
// CHECK: sbp.collective_start all_reduce %{{.*}} on #gpus8 axis 1 {reduce = #sbp<reduce max>} : tensor<8xf32> -> !sbp.future<tensor<8xf32>>
func.func @all_reduce_inner_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f = sbp.collective_start all_reduce %x on #g axis 1 {reduce = #sbp<reduce max>}
      : tensor<8xf32> -> !sbp.future<tensor<8xf32>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<8xf32>>
  return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func @all_to_all_inner_axis(
// CHECK: sbp.collective_start all_to_all %{{.*}} on #gpus8 axis 1 {gather_axis = 1 : i64, scatter_axis = 0 : i64} : tensor<8x2xf32> -> !sbp.future<tensor<2x8xf32>>
func.func @all_to_all_inner_axis(%x: tensor<8x2xf32>) -> tensor<2x8xf32> {
  %f = sbp.collective_start all_to_all %x on #g axis 1 {gather_axis = 1, scatter_axis = 0}
      : tensor<8x2xf32> -> !sbp.future<tensor<2x8xf32>>
  %r = sbp.collective_wait %f : !sbp.future<tensor<2x8xf32>>
  return %r : tensor<2x8xf32>
}

// Starts and waits may be reordered around compute: two in flight at once.
// CHECK-LABEL: func.func @overlapped(
// CHECK: %[[F0:.+]] = sbp.collective_start all_gather
// CHECK: %[[F1:.+]] = sbp.collective_start all_gather
// CHECK: sbp.collective_wait %[[F1]]
// CHECK: sbp.collective_wait %[[F0]]
func.func @overlapped(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %fa = sbp.collective_start all_gather %a on #g axis 0 {gather_axis = 0}
      : tensor<4x8xf32> -> !sbp.future<tensor<8x8xf32>>
  %fb = sbp.collective_start all_gather %b on #g axis 0 {gather_axis = 0}
      : tensor<4x8xf32> -> !sbp.future<tensor<8x8xf32>>
  %rb = sbp.collective_wait %fb : !sbp.future<tensor<8x8xf32>>
  %ra = sbp.collective_wait %fa : !sbp.future<tensor<8x8xf32>>
  return %ra, %rb : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Memory kinds: host and NVMe placements, a cast that moves a tensor between
// them, and the per-rank transfer it becomes.
//===----------------------------------------------------------------------===//

// CHECK: #[[HOST:cpus2_host]] = #sbp.placement<cpu, [0, 1], memory = host>
// CHECK: #[[NVME:gpus4_nvme]] = #sbp.placement<cuda, [0, 1, 2, 3], hierarchy = [2, 2], memory = nvme>
// CHECK-LABEL: func.func @memory_kinds
// CHECK-SAME: device = #cpus2
// CHECK-SAME: host = #[[HOST]]
// CHECK-SAME: nvme = #[[NVME]]
// CHECK: sbp.cast %{{.*}} : tensor<8xf32, #sbp.global<[S(0)], #cpus2, opt_state>> to tensor<8xf32, #sbp.global<[S(0)], #[[HOST]], opt_state>>
// CHECK: %[[F:.*]] = sbp.transfer_start %{{.*}} from nvme to host : tensor<4xf32> -> !sbp.future<tensor<4xf32>>
// CHECK: sbp.transfer_wait %[[F]] : !sbp.future<tensor<4xf32>>
func.func @memory_kinds(%x: tensor<8xf32, #sbp.global<[S(0)], #sbp.placement<cpu, [0, 1]>, opt_state>>, %l: tensor<4xf32>) attributes {
  device = #sbp.placement<cpu, [0, 1], memory = device>,
  host = #sbp.placement<cpu, [0, 1], memory = host>,
  nvme = #sbp.placement<cuda, [0, 1, 2, 3], hierarchy = [2, 2], memory = nvme>
} {
  %h = sbp.cast %x : tensor<8xf32, #sbp.global<[S(0)], #sbp.placement<cpu, [0, 1]>, opt_state>> to tensor<8xf32, #sbp.global<[S(0)], #sbp.placement<cpu, [0, 1], memory = host>, opt_state>>
  %f = sbp.transfer_start %l from nvme to host : tensor<4xf32> -> !sbp.future<tensor<4xf32>>
  %w = sbp.transfer_wait %f : !sbp.future<tensor<4xf32>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Memory plan buffers: every role, each memory kind (device not printed), an
// empty buffer live at one op, and one that ends exactly at 2^53 bytes.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @buffers
// CHECK-SAME: zero.buffers = [
// CHECK-SAME: #sbp.buffer<offset = 0, bytes = 16, live = [0, 2], role = param>,
// CHECK-SAME: #sbp.buffer<offset = 16, bytes = 16, live = [0, 2], role = grad>,
// CHECK-SAME: #sbp.buffer<offset = 32, bytes = 16, live = [0, 2], role = master>,
// CHECK-SAME: #sbp.buffer<offset = 0, bytes = 32, live = [0, 2], role = opt_state, memory = host>,
// CHECK-SAME: #sbp.buffer<offset = 0, bytes = 32, live = [0, 2], role = opt_state, memory = nvme>,
// CHECK-SAME: #sbp.buffer<offset = 48, bytes = 8, live = [1, 1], role = activation>,
// CHECK-SAME: #sbp.buffer<offset = 48, bytes = 0, live = [2, 2], role = input>,
// CHECK-SAME: #sbp.buffer<offset = 9007199254740976, bytes = 16, live = [1, 2], role = comm_buffer>]
func.func @buffers() attributes {
  zero.buffers = [
    #sbp.buffer<offset = 0, bytes = 16, live = [0, 2], role = param>,
    #sbp.buffer<offset = 16, bytes = 16, live = [0, 2], role = grad>,
    #sbp.buffer<offset = 32, bytes = 16, live = [0, 2], role = master, memory = device>,
    #sbp.buffer<offset = 0, bytes = 32, live = [0, 2], role = opt_state, memory = host>,
    #sbp.buffer<offset = 0, bytes = 32, live = [0, 2], role = opt_state, memory = nvme>,
    #sbp.buffer<offset = 48, bytes = 8, live = [1, 1], role = activation>,
    #sbp.buffer<offset = 48, bytes = 0, live = [2, 2], role = input>,
    #sbp.buffer<offset = 9007199254740976, bytes = 16, live = [1, 2], role = comm_buffer>
  ]
} {
  return
}

// -----

// A cast to P(sum) on one hierarchy axis, per rank: from B, and from a
// split (the rank's part placed in a zero tensor).
// CHECK-LABEL: func.func @to_partial(
// CHECK: sbp.to_partial %{{.*}} on axis 1 : tensor<4xf32> -> tensor<4xf32>
// CHECK: sbp.to_partial %{{.*}} on axis 0 split 0 : tensor<2x4xf32> -> tensor<8x4xf32>
func.func @to_partial(%b: tensor<4xf32>, %s: tensor<2x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>) {
  %p = sbp.to_partial %b on axis 1 : tensor<4xf32> -> tensor<4xf32>
  %q = sbp.to_partial %s on axis 0 split 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  return %p, %q : tensor<4xf32>, tensor<8x4xf32>
}
