// RUN: zero-opt %s -split-input-file | FileCheck %s
// RUN: zero-opt %s -split-input-file | zero-opt -split-input-file | FileCheck %s

// nn.quantize's codes and scales: ceil(n * bits / 8) bytes and
// ceil(n / block_size) scales for n elements; nn.dequantize gives the shape
// and dtype back. On four ranks a 1-D tensor split S(0) quantizes and
// dequantizes split, and a broadcast one stays broadcast.

// CHECK-LABEL: func.func @plain
// CHECK: nn.quantize %{{.*}} {block_size = 64 : i64} : (tensor<10x100xf32>) -> (tensor<1000xi8>, tensor<16xf32>)
// CHECK: nn.quantize %{{.*}} {bits = 4 : i64, block_size = 2 : i64} : (tensor<7xbf16>) -> (tensor<4xi8>, tensor<4xf32>)
// CHECK: nn.dequantize %{{.*}}, %{{.*}} {block_size = 64 : i64, dtype = bf16, shape = array<i64: 10, 100>} : (tensor<1000xi8>, tensor<16xf32>) -> tensor<10x100xbf16>
func.func @plain(%x: tensor<10x100xf32>, %y: tensor<7xbf16>) -> tensor<10x100xbf16> {
  %c, %s = nn.quantize %x {block_size = 64 : i64} : (tensor<10x100xf32>) -> (tensor<1000xi8>, tensor<16xf32>)
  %c4, %s4 = nn.quantize %y {block_size = 2 : i64, bits = 4 : i64} : (tensor<7xbf16>) -> (tensor<4xi8>, tensor<4xf32>)
  %r = nn.dequantize %c, %s {block_size = 64 : i64, shape = array<i64: 10, 100>, dtype = bf16} : (tensor<1000xi8>, tensor<16xf32>) -> tensor<10x100xbf16>
  return %r : tensor<10x100xbf16>
}

// -----

#p = #sbp.placement<cpu, [0, 1, 2, 3]>
// CHECK-LABEL: func.func @split
// CHECK: nn.quantize {{.*}} -> (tensor<1024xi8, #sbp.global<[S(0)], #{{[a-z0-9]+}}>>, tensor<16xf32, #sbp.global<[S(0)], #{{[a-z0-9]+}}>>)
// CHECK: nn.dequantize {{.*}} -> tensor<1024xf32, #sbp.global<[S(0)], #{{[a-z0-9]+}}>>
// CHECK: nn.quantize {{.*}} -> (tensor<1024xi8, #sbp.global<[B], #{{[a-z0-9]+}}>>, tensor<16xf32, #sbp.global<[B], #{{[a-z0-9]+}}>>)
func.func @split(%x: tensor<1024xf32, #sbp.global<[S(0)], #p>>, %b: tensor<1024xf32, #sbp.global<[B], #p>>) -> tensor<1024xf32, #sbp.global<[S(0)], #p>> {
  %c, %s = nn.quantize %x {block_size = 64 : i64} : (tensor<1024xf32, #sbp.global<[S(0)], #p>>) -> (tensor<1024xi8, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[S(0)], #p>>)
  %r = nn.dequantize %c, %s {block_size = 64 : i64, shape = array<i64: 1024>, dtype = f32} : (tensor<1024xi8, #sbp.global<[S(0)], #p>>, tensor<16xf32, #sbp.global<[S(0)], #p>>) -> tensor<1024xf32, #sbp.global<[S(0)], #p>>
  %cb, %sb = nn.quantize %b {block_size = 64 : i64} : (tensor<1024xf32, #sbp.global<[B], #p>>) -> (tensor<1024xi8, #sbp.global<[B], #p>>, tensor<16xf32, #sbp.global<[B], #p>>)
  return %r : tensor<1024xf32, #sbp.global<[S(0)], #p>>
}
