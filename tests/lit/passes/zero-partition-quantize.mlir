// RUN: zero-opt %s -zero-partition | FileCheck %s

// In the local view a 1-D tensor split S(0) over four ranks is quantized
// part by part: each rank's 256 elements give 256 codes and 4 scales of
// blocks of 64, and nn.dequantize's `shape` becomes the rank's part. A
// broadcast tensor keeps its whole codes.

// CHECK-LABEL: func.func @split(
// CHECK-SAME: %[[X:.*]]: tensor<256xf32>, %[[B:.*]]: tensor<1024xf32>
// CHECK: %[[C:.*]], %[[S:.*]] = nn.quantize %[[X]] {block_size = 64 : i64} : (tensor<256xf32>) -> (tensor<256xi8>, tensor<4xf32>)
// CHECK: nn.dequantize %[[C]], %[[S]] {block_size = 64 : i64, dtype = f32, shape = array<i64: 256>} : (tensor<256xi8>, tensor<4xf32>) -> tensor<256xf32>
// CHECK: nn.quantize %[[B]] {block_size = 64 : i64} : (tensor<1024xf32>) -> (tensor<1024xi8>, tensor<16xf32>)
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @split(%x: tensor<1024xf32, #sbp.global<[S(0)], #p>>, %b: tensor<1024xf32, #sbp.global<[B], #p>>) -> tensor<1024xf32, #sbp.global<[S(0)], #p>> {
  %c, %s = nn.quantize %x {block_size = 64 : i64} : (tensor<1024xf32, #sbp.global<[S(0)], #p>>) -> (tensor<1024xi8, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[S(0)], #p>>)
  %r = nn.dequantize %c, %s {block_size = 64 : i64, shape = array<i64: 1024>, dtype = f32} : (tensor<1024xi8, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[S(0)], #p>>) -> tensor<1024xf32, #sbp.global<[S(0)], #p>>
  %cb, %sb = nn.quantize %b {block_size = 64 : i64} : (tensor<1024xf32, #sbp.global<[B], #p>>) -> (tensor<1024xi8, #sbp.global<[B], #p>>, tensor<16xf32, #sbp.global<[B], #p>>)
  return %r : tensor<1024xf32, #sbp.global<[S(0)], #p>>
}
