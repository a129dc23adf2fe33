// RUN: zero-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Placements
//===----------------------------------------------------------------------===//

// expected-error@+1 {{placement has no ranks}}
func.func @empty_ranks() attributes {p = #sbp.placement<cpu, []>} {
  return
}

// -----

// expected-error@+1 {{placement lists rank 1 twice}}
func.func @duplicate_rank() attributes {p = #sbp.placement<cpu, [0, 1, 2, 1]>} {
  return
}

// -----

// expected-error@+1 {{placement rank -1 is negative}}
func.func @negative_rank() attributes {p = #sbp.placement<cpu, [0, -1]>} {
  return
}

// -----

// expected-error@+1 {{placement hierarchy holds 4 ranks but the placement lists 6}}
func.func @hierarchy_product() attributes {p = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5], hierarchy = [2, 2]>} {
  return
}

// -----

// expected-error@+1 {{placement hierarchy has 3 axes; at most 2 are supported}}
func.func @hierarchy_3d() attributes {p = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 2, 2]>} {
  return
}

// -----

// expected-error@+1 {{placement hierarchy axis size 0 is not positive}}
func.func @hierarchy_zero() attributes {p = #sbp.placement<cpu, [0, 1], hierarchy = [0, 2]>} {
  return
}

// -----

// expected-error@+1 {{placement hierarchy axis size -2 is not positive}}
func.func @hierarchy_negative() attributes {p = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [-2, -2]>} {
  return
}

// -----

// expected-error@+1 {{unknown device kind 'tpu' (expected 'cpu' or 'cuda')}}
func.func @unknown_device() attributes {p = #sbp.placement<tpu, [0, 1]>} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// SBP
//===----------------------------------------------------------------------===//

// expected-error@+1 {{expected SBP 'B', 'S(axis)' or 'P(sum|max)', got 'R'}}
func.func @unknown_sbp() attributes {s = #sbp.sbp<R>} {
  return
}

// -----

// expected-error@+1 {{unknown partial reduction 'min' (expected 'sum' or 'max')}}
func.func @unknown_reduction() attributes {s = #sbp.sbp<P(min)>} {
  return
}

// -----

// expected-error@+1 {{split axis -1 is negative}}
func.func @negative_split_standalone() attributes {s = #sbp.sbp<S(-1)>} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// Global tensor encodings
//===----------------------------------------------------------------------===//

#p = #sbp.placement<cpu, [0, 1]>

// expected-error@+1 {{split axis 2 is out of range for a tensor of rank 2 (hierarchy axis 0)}}
func.func @split_axis_out_of_range(%x: tensor<8x4xf32, #sbp.global<[S(2)], #p>>) {
  return
}

// -----

#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>

// expected-error@+1 {{split axis 1 is out of range for a tensor of rank 1 (hierarchy axis 1)}}
func.func @split_axis_out_of_range_2d(%x: tensor<8xf32, #sbp.global<[S(0), S(1)], #g>>) {
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

// expected-error@+1 {{split axis 0 is out of range for a tensor of rank 0 (hierarchy axis 0)}}
func.func @split_scalar(%x: tensor<f32, #sbp.global<[S(0)], #p>>) {
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

// expected-error@+1 {{split axis -1 is negative}}
func.func @negative_split_axis(%x: tensor<8x4xf32, #sbp.global<[S(-1)], #p>>) {
  return
}

// -----

#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>

// expected-error@+1 {{SBP list has 1 entry but the placement hierarchy has 2 axes}}
func.func @sbp_list_too_short(%x: tensor<8x4xf32, #sbp.global<[S(0)], #g>>) {
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

// expected-error@+1 {{SBP list has 2 entries but the placement hierarchy has 1 axis}}
func.func @sbp_list_too_long(%x: tensor<8x4xf32, #sbp.global<[S(0), B], #p>>) {
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

// expected-error@+1 {{unknown role 'weight' (expected param, grad, master, opt_state, activation or input)}}
func.func @unknown_role(%x: tensor<8x4xf32, #sbp.global<[B], #p, weight>>) {
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

// expected-error@+1 {{global tensors must have static shapes}}
func.func @dynamic_shape(%x: tensor<?x4xf32, #sbp.global<[S(1)], #p>>) {
  return
}

// -----

//===----------------------------------------------------------------------===//
// sbp.cast
//===----------------------------------------------------------------------===//

#p = #sbp.placement<cpu, [0, 1]>
#q = #sbp.placement<cpu, [2, 3, 4]>

func.func @cast_placement(%x: tensor<8x4xf32, #sbp.global<[B], #p>>) {
  // expected-error@+1 {{'sbp.cast' op casts between different placements #sbp.placement<cpu, [0, 1]> and #sbp.placement<cpu, [2, 3, 4]>; only SBP changes on one placement and moves between pipeline stages' placements of one grid shape are supported}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[B], #p>>
                  to tensor<8x4xf32, #sbp.global<[B], #q>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>
#q = #sbp.placement<cpu, [2, 3]>

// A move to another pipeline stage keeps the SBP.
func.func @cast_hop_and_sbp(%x: tensor<8x4xf32, #sbp.global<[B], #p>>) {
  // expected-error@+1 {{'sbp.cast' op moves to another pipeline stage's placement and changes the SBP or memory kind too; cast one, then the other}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[B], #p>>
                  to tensor<8x4xf32, #sbp.global<[S(0)], #q>>
  return
}

// -----

func.func @send_to_itself(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'sbp.send' op sends from stage 1 to itself}}
  %0 = sbp.send %x from stage 1 to stage 1 : tensor<8x4xf32> -> !sbp.future<tensor<8x4xf32>>
  return
}

// -----

func.func @send_another_type(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'sbp.send' op carries 'tensor<8x4xf32>' but its message is '!sbp.future<tensor<4xf32>>'}}
  %0 = sbp.send %x from stage 0 to stage 1 : tensor<8x4xf32> -> !sbp.future<tensor<4xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @cast_shape(%x: tensor<8x4xf32, #sbp.global<[B], #p>>) {
  // expected-error@+1 {{'sbp.cast' op changes the shape from 'tensor<8x4xf32, #sbp.global<[B], #sbp.placement<cpu, [0, 1]>>>' to 'tensor<4x8xf32, #sbp.global<[B], #sbp.placement<cpu, [0, 1]>>>'}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[B], #p>>
                  to tensor<4x8xf32, #sbp.global<[B], #p>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @cast_element_type(%x: tensor<8x4xf32, #sbp.global<[B], #p>>) {
  // expected-error@+1 {{'sbp.cast' op changes the element type from 'f32' to 'bf16'; use nn.cast}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[B], #p>>
                  to tensor<8x4xbf16, #sbp.global<[B], #p>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @cast_role(%x: tensor<8x4xf32, #sbp.global<[P(sum)], #p, grad>>) {
  // expected-error@+1 {{'sbp.cast' op changes the role from grad to param}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[P(sum)], #p, grad>>
                  to tensor<8x4xf32, #sbp.global<[B], #p, param>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @cast_partial_kind(%x: tensor<8x4xf32, #sbp.global<[P(sum)], #p>>) {
  // expected-error@+1 {{'sbp.cast' op cannot cast P(sum) to P(max) on hierarchy axis 0}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[P(sum)], #p>>
                  to tensor<8x4xf32, #sbp.global<[P(max)], #p>>
  return
}

// -----

#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>

func.func @cast_partial_kind_2d(%x: tensor<8x4xf32, #sbp.global<[B, P(max)], #g>>) {
  // expected-error@+1 {{'sbp.cast' op cannot cast P(max) to P(sum) on hierarchy axis 1}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[B, P(max)], #g>>
                  to tensor<8x4xf32, #sbp.global<[S(0), P(sum)], #g>>
  return
}

// -----

func.func @cast_no_encoding(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'sbp.cast' op needs #sbp.global encodings on both sides}}
  %0 = sbp.cast %x : tensor<8x4xf32> to tensor<8x4xf32>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @cast_one_encoding(%x: tensor<8x4xf32, #sbp.global<[S(0)], #p>>) {
  // expected-error@+1 {{'sbp.cast' op needs #sbp.global encodings on both sides}}
  %0 = sbp.cast %x : tensor<8x4xf32, #sbp.global<[S(0)], #p>> to tensor<8x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// sbp.collective_start / sbp.collective_wait
//===----------------------------------------------------------------------===//

#g = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>

func.func @hierarchy_axis_out_of_range(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op hierarchy axis 2 is out of range for a placement with 2 axes}}
  %f = sbp.collective_start all_reduce %x on #g axis 2
      : tensor<8x4xf32> -> !sbp.future<tensor<8x4xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @hierarchy_axis_negative(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op hierarchy axis -1 is out of range for a placement with 1 axis}}
  %f = sbp.collective_start all_reduce %x on #p axis -1
      : tensor<8x4xf32> -> !sbp.future<tensor<8x4xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @all_gather_shape(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op result type 'tensor<8x8xf32>' does not match all_gather over 4 ranks of 'tensor<4x8xf32>' (expected shape 'tensor<16x8xf32>')}}
  %f = sbp.collective_start all_gather %x on #p axis 0 {gather_axis = 0}
      : tensor<4x8xf32> -> !sbp.future<tensor<8x8xf32>>
  return
}

// -----

#g = #sbp.placement<cuda, [0, 1, 2, 3, 4, 5, 6, 7], hierarchy = [2, 4]>

// The group is the size of the chosen hierarchy axis (2), not the rank count.
func.func @all_gather_shape_2d(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op result type 'tensor<32x8xf32>' does not match all_gather over 2 ranks of 'tensor<4x8xf32>' (expected shape 'tensor<8x8xf32>')}}
  %f = sbp.collective_start all_gather %x on #g axis 0 {gather_axis = 0}
      : tensor<4x8xf32> -> !sbp.future<tensor<32x8xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @all_reduce_shape(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op result type 'tensor<1x8xf32>' does not match all_reduce over 4 ranks of 'tensor<4x8xf32>' (expected shape 'tensor<4x8xf32>')}}
  %f = sbp.collective_start all_reduce %x on #p axis 0
      : tensor<4x8xf32> -> !sbp.future<tensor<1x8xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @reduce_scatter_not_divisible(%x: tensor<10x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op scatter dimension 10 is not divisible by 4 ranks; pad the buffer first}}
  %f = sbp.collective_start reduce_scatter %x on #p axis 0 {scatter_axis = 0}
      : tensor<10x8xf32> -> !sbp.future<tensor<2x8xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @all_to_all_not_divisible(%x: tensor<6x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op scatter dimension 6 is not divisible by 4 ranks}}
  %f = sbp.collective_start all_to_all %x on #p axis 0 {gather_axis = 1, scatter_axis = 0}
      : tensor<6x8xf32> -> !sbp.future<tensor<1x32xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @missing_gather_axis(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op all_gather needs 'gather_axis'}}
  %f = sbp.collective_start all_gather %x on #p axis 0
      : tensor<4x8xf32> -> !sbp.future<tensor<16x8xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @missing_scatter_axis(%x: tensor<16x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op reduce_scatter needs 'scatter_axis'}}
  %f = sbp.collective_start reduce_scatter %x on #p axis 0 {gather_axis = 0}
      : tensor<16x8xf32> -> !sbp.future<tensor<4x8xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>

func.func @gather_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op gather_axis 2 is out of range for rank 2}}
  %f = sbp.collective_start all_gather %x on #p axis 0 {gather_axis = 2}
      : tensor<4x8xf32> -> !sbp.future<tensor<4x8xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @collective_on_global(%x: tensor<8x4xf32, #sbp.global<[P(sum)], #p>>) {
  // expected-error@+1 {{'sbp.collective_start' op works on per-rank tensors; drop the #sbp.global encoding}}
  %f = sbp.collective_start all_reduce %x on #p axis 0
      : tensor<8x4xf32, #sbp.global<[P(sum)], #p>> -> !sbp.future<tensor<8x4xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @collective_element_type(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op changes the element type from 'f32' to 'f16'}}
  %f = sbp.collective_start all_reduce %x on #p axis 0
      : tensor<8x4xf32> -> !sbp.future<tensor<8x4xf16>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @collective_rank(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'sbp.collective_start' op changes the rank from 2 to 1}}
  %f = sbp.collective_start all_gather %x on #p axis 0 {gather_axis = 0}
      : tensor<8x4xf32> -> !sbp.future<tensor<64xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1]>

func.func @unknown_collective(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{unknown collective 'broadcast' (expected all_reduce, reduce_scatter, all_gather or all_to_all)}}
  %f = sbp.collective_start broadcast %x on #p axis 0
      : tensor<8x4xf32> -> !sbp.future<tensor<8x4xf32>>
  return
}

// -----

func.func @wait_type_mismatch(%f: !sbp.future<tensor<16x8xf32>>) {
  // expected-error@+2 {{'sbp.collective_wait' op inferred type(s) 'tensor<16x8xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  // expected-error@+1 {{'sbp.collective_wait' op failed to infer returned types}}
  %0 = "sbp.collective_wait"(%f) : (!sbp.future<tensor<16x8xf32>>) -> tensor<4x8xf32>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @bucket_mixed_types(%a: tensor<8xf32>, %b: tensor<8xbf16>) {
  // expected-error@+1 {{mixes element types 'f32' and 'bf16' in one bucket}}
  %f = sbp.collective_start all_reduce %a, %b on #p axis 0
      : tensor<8xf32>, tensor<8xbf16> -> !sbp.future<tensor<8xf32>, tensor<8xbf16>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @bucket_count_mismatch(%a: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{has 2 operands but its future holds 1 values}}
  %f = sbp.collective_start all_reduce %a, %b on #p axis 0
      : tensor<8xf32>, tensor<8xf32> -> !sbp.future<tensor<8xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @bucket_segment_shape(%a: tensor<8xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{scatter dimension 6 is not divisible by 4 ranks}}
  %f = sbp.collective_start reduce_scatter %a, %b on #p axis 0 {scatter_axis = 0}
      : tensor<8xf32>, tensor<6xf32> -> !sbp.future<tensor<2xf32>, tensor<2xf32>>
  return
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @bucket_negative(%a: tensor<8xf32>) {
  // expected-error@+1 {{bucket index -1 is negative}}
  %f = sbp.collective_start all_reduce %a on #p axis 0 {bucket = -1}
      : tensor<8xf32> -> !sbp.future<tensor<8xf32>>
  return
}

// -----

// expected-error@+2 {{expected non-function type}}
// expected-error@+1 {{failed to parse Sbp_FutureType parameter 'valueTypes'}}
func.func @future_empty(%f: !sbp.future<>) {
  return
}

// -----

// expected-error@+1 {{unknown memory kind 'disk' (expected 'device', 'host' or 'nvme')}}
func.func @memory_unknown() attributes {p = #sbp.placement<cpu, [0], memory = disk>} {
  return
}

// -----

// expected-error@+1 {{expected 'hierarchy = [...]' then 'memory = <kind>' after the ranks, got 'hierarchy'}}
func.func @memory_before_hierarchy() attributes {p = #sbp.placement<cpu, [0, 1], memory = host, hierarchy = [2]>} {
  return
}

// -----

func.func @cast_memory_and_sbp(%x: tensor<8xf32, #sbp.global<[B], #sbp.placement<cpu, [0, 1]>>>) {
  // expected-error@+1 {{changes both the memory kind and the SBP; cast one, then the other}}
  %h = sbp.cast %x : tensor<8xf32, #sbp.global<[B], #sbp.placement<cpu, [0, 1]>>> to tensor<8xf32, #sbp.global<[S(0)], #sbp.placement<cpu, [0, 1], memory = host>>>
  return
}

// -----

func.func @transfer_same_memory(%x: tensor<8xf32>) {
  // expected-error@+1 {{copies from host to the same memory kind}}
  %f = sbp.transfer_start %x from host to host : tensor<8xf32> -> !sbp.future<tensor<8xf32>>
  return
}

// -----

func.func @transfer_changes_type(%x: tensor<8xf32>) {
  // expected-error@+1 {{must yield one tensor of its input's type 'tensor<8xf32>'}}
  %f = sbp.transfer_start %x from host to device : tensor<8xf32> -> !sbp.future<tensor<4xf32>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Memory plan buffers
//===----------------------------------------------------------------------===//

// expected-error@+1 {{buffer offset -8 is negative}}
func.func @buffer_negative_offset() attributes {b = #sbp.buffer<offset = -8, bytes = 16, live = [0, 1], role = activation>} {
  return
}

// -----

// expected-error@+1 {{buffer size -16 is negative}}
func.func @buffer_negative_bytes() attributes {b = #sbp.buffer<offset = 0, bytes = -16, live = [0, 1], role = activation>} {
  return
}

// -----

// expected-error@+1 {{buffer live range [-1, 1] has a negative op index}}
func.func @buffer_negative_live() attributes {b = #sbp.buffer<offset = 0, bytes = 16, live = [-1, 1], role = activation>} {
  return
}

// -----

// expected-error@+1 {{buffer live range [3, 2] ends before it starts}}
func.func @buffer_live_reversed() attributes {b = #sbp.buffer<offset = 0, bytes = 16, live = [3, 2], role = activation>} {
  return
}

// -----

// expected-error@+1 {{buffer of 16 bytes at offset 9007199254740977 ends past 2^53 (9007199254740992), the most a plan addresses}}
func.func @buffer_past_limit() attributes {b = #sbp.buffer<offset = 9007199254740977, bytes = 16, live = [0, 1], role = activation>} {
  return
}

// -----

// Sizes near INT64_MAX must not wrap the end check around.
// expected-error@+1 {{buffer of 9223372036854775807 bytes at offset 16 ends past 2^53 (9007199254740992), the most a plan addresses}}
func.func @buffer_wrapping_size() attributes {b = #sbp.buffer<offset = 16, bytes = 9223372036854775807, live = [0, 1], role = activation>} {
  return
}

// -----

// expected-error@+2 {{expected ::mlir::sbp::BufferRole to be one of}}
// expected-error@+1 {{failed to parse Sbp_BufferAttr parameter 'role'}}
func.func @buffer_unknown_role() attributes {b = #sbp.buffer<offset = 0, bytes = 16, live = [0, 1], role = weights>} {
  return
}

// -----

// expected-error@+2 {{expected ::mlir::sbp::MemoryKind to be one of}}
// expected-error@+1 {{failed to parse Sbp_BufferAttr parameter 'memory'}}
func.func @buffer_unknown_memory() attributes {b = #sbp.buffer<offset = 0, bytes = 16, live = [0, 1], role = activation, memory = disk>} {
  return
}

// -----

func.func @to_partial_other_shape(%b: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{'sbp.to_partial' op result dim 0 must equal the input's (4), got 8}}
  %p = sbp.to_partial %b on axis 0 : tensor<4xf32> -> tensor<8xf32>
  return %p : tensor<8xf32>
}

// -----

func.func @to_partial_shrinks(%s: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{'sbp.to_partial' op result dim 0 must hold the input's (4), got 2}}
  %p = sbp.to_partial %s on axis 0 split 0 : tensor<4x4xf32> -> tensor<2x4xf32>
  return %p : tensor<2x4xf32>
}

// -----

func.func @to_partial_split_out_of_range(%s: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'sbp.to_partial' op split_axis 1 is out of range for rank 1}}
  %p = sbp.to_partial %s on axis 0 split 1 : tensor<4xf32> -> tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

func.func @to_partial_element_type(%b: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error@+1 {{'sbp.to_partial' op result must have the input's element type and rank}}
  %p = sbp.to_partial %b on axis 0 : tensor<4xf32> -> tensor<4xbf16>
  return %p : tensor<4xbf16>
}
