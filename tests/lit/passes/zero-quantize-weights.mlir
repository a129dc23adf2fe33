// RUN: zero-opt %s --zero-quantize-weights=block-size=4 | FileCheck %s
// RUN: zero-opt %s '--zero-quantize-weights=block-size=8 bits=4' | FileCheck %s --check-prefix=PAD

// Each rank's part of w (4 elements) is one block of 4: the shard is
// quantized as it is, its codes and scales gathered, and every rank
// dequantizes the whole tensor.
// CHECK-LABEL: func.func @gathers
// CHECK: %[[W:.*]] = nn.variable "w"
// CHECK: %[[C:.*]], %[[S:.*]] = nn.quantize %[[W]] {block_size = 4 : i64} : (tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>) -> (tensor<16xi8, #sbp.global<[S(0)], #cpus4, param>>, tensor<4xf32, #sbp.global<[S(0)], #cpus4, param>>)
// CHECK-NEXT: %[[GC:.*]] = sbp.cast %[[C]] : tensor<16xi8, #sbp.global<[S(0)], #cpus4, param>> to tensor<16xi8, #sbp.global<[B], #cpus4, param>>
// CHECK-NEXT: %[[GS:.*]] = sbp.cast %[[S]] : tensor<4xf32, #sbp.global<[S(0)], #cpus4, param>> to tensor<4xf32, #sbp.global<[B], #cpus4, param>>
// CHECK-NEXT: %[[WQ:.*]] = nn.dequantize %[[GC]], %[[GS]] {block_size = 4 : i64, dtype = f32, shape = array<i64: 16>}
// A bf16 parameter comes back as bf16.
// CHECK: %[[H:.*]] = nn.variable "h"
// CHECK: nn.quantize %[[H]] {block_size = 4 : i64}
// CHECK: %[[HQ:.*]] = nn.dequantize {{.*}} dtype = bf16
// A gradient's reduce-scatter, an activation's gather and the gather of an
// updated parameter shard (the parameter itself, kept whole) stay as they
// are.
// CHECK: %[[G:.*]] = sbp.cast %arg1 : tensor<16xf32, #sbp.global<[P(sum)], #cpus4, grad>> to tensor<16xf32, #sbp.global<[S(0)], #cpus4, grad>>
// CHECK: %[[X:.*]] = sbp.cast %arg0 : tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>> to tensor<8x16xf32, #sbp.global<[B], #cpus4>>
// CHECK: %[[U:.*]] = sbp.cast %{{.*}} : tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>> to tensor<16xf32, #sbp.global<[B], #cpus4, param>>
// CHECK: return %[[WQ]], %[[HQ]], %[[G]], %[[X]], %[[U]]
// CHECK-NOT: nn.quantize

// A part of 4 elements in blocks of 8 at 4 bits: each rank's part is padded
// to a block as a row of (ranks, part), and the padding sliced off after.
// PAD: %[[W:.*]] = nn.variable "w"
// PAD-NEXT: %[[ROWS:.*]] = nn.reshape %[[W]] : tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>> to tensor<4x4xf32, #sbp.global<[S(0)], #cpus4, param>>
// PAD-NEXT: %[[PADDED:.*]] = nn.pad %[[ROWS]] {high = array<i64: 0, 4>, low = array<i64: 0, 0>} : {{.*}} -> tensor<4x8xf32, #sbp.global<[S(0)], #cpus4, param>>
// PAD-NEXT: %[[FLAT:.*]] = nn.reshape %[[PADDED]] : {{.*}} to tensor<32xf32, #sbp.global<[S(0)], #cpus4, param>>
// PAD-NEXT: %[[C:.*]], %[[S:.*]] = nn.quantize %[[FLAT]] {bits = 4 : i64, block_size = 8 : i64} : {{.*}} -> (tensor<16xi8, #sbp.global<[S(0)], #cpus4, param>>, tensor<4xf32, #sbp.global<[S(0)], #cpus4, param>>)
// PAD-NEXT: %[[GC:.*]] = sbp.cast %[[C]] : {{.*}} to tensor<16xi8, #sbp.global<[B], #cpus4, param>>
// PAD-NEXT: %[[GS:.*]] = sbp.cast %[[S]] : {{.*}} to tensor<4xf32, #sbp.global<[B], #cpus4, param>>
// PAD-NEXT: %[[D:.*]] = nn.dequantize %[[GC]], %[[GS]] {bits = 4 : i64, block_size = 8 : i64, dtype = f32, shape = array<i64: 32>}
// PAD-NEXT: %[[DROWS:.*]] = nn.reshape %[[D]] : {{.*}} to tensor<4x8xf32, #sbp.global<[B], #cpus4, param>>
// PAD-NEXT: %[[SLICED:.*]] = nn.slice %[[DROWS]] {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>}
// PAD-NEXT: %[[WQ:.*]] = nn.reshape %[[SLICED]] : {{.*}} to tensor<16xf32, #sbp.global<[B], #cpus4, param>>
// PAD: return %[[WQ]],

#cpus4 = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @gathers(%x: tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>>, %g: tensor<16xf32, #sbp.global<[P(sum)], #cpus4, grad>>) -> (tensor<16xf32, #sbp.global<[B], #cpus4, param>>, tensor<16xbf16, #sbp.global<[B], #cpus4, param>>, tensor<16xf32, #sbp.global<[S(0)], #cpus4, grad>>, tensor<8x16xf32, #sbp.global<[B], #cpus4>>, tensor<16xf32, #sbp.global<[B], #cpus4, param>>) {
  %w = nn.variable "w" param init = uniform(0.1) {logical_shape = array<i64: 16>} : tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>
  %gw = sbp.cast %w : tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>> to tensor<16xf32, #sbp.global<[B], #cpus4, param>>
  %h = nn.variable "h" param init = uniform(0.1) {logical_shape = array<i64: 16>} : tensor<16xbf16, #sbp.global<[S(0)], #cpus4, param>>
  %gh = sbp.cast %h : tensor<16xbf16, #sbp.global<[S(0)], #cpus4, param>> to tensor<16xbf16, #sbp.global<[B], #cpus4, param>>
  %sg = sbp.cast %g : tensor<16xf32, #sbp.global<[P(sum)], #cpus4, grad>> to tensor<16xf32, #sbp.global<[S(0)], #cpus4, grad>>
  %bx = sbp.cast %x : tensor<8x16xf32, #sbp.global<[S(0)], #cpus4>> to tensor<8x16xf32, #sbp.global<[B], #cpus4>>
  %updated = nn.add %w, %w : (tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>, tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>) -> tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>>
  %gu = sbp.cast %updated : tensor<16xf32, #sbp.global<[S(0)], #cpus4, param>> to tensor<16xf32, #sbp.global<[B], #cpus4, param>>
  return %gw, %gh, %sg, %bx, %gu : tensor<16xf32, #sbp.global<[B], #cpus4, param>>, tensor<16xbf16, #sbp.global<[B], #cpus4, param>>, tensor<16xf32, #sbp.global<[S(0)], #cpus4, grad>>, tensor<8x16xf32, #sbp.global<[B], #cpus4>>, tensor<16xf32, #sbp.global<[B], #cpus4, param>>
}
