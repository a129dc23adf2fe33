func.func @to_partial(%b: tensor<4xf32>, %s: tensor<2x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>) {
  %p = sbp.to_partial %b on axis 1 : tensor<4xf32> -> tensor<4xf32>
  %q = sbp.to_partial %s on axis 0 split 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  return %p, %q : tensor<4xf32>, tensor<8x4xf32>
}
