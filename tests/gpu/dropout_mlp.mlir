// A small MLP with dropout, for tests/gpu/cuda_graph_check.py: each step's
// dropout mask (Philox of the step) and Adam's bias corrections read the
// step count on the device, so a CUDA graph replayed with the step baked
// in would give other losses than launching op by op.
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32>
  %y = nn.input "y" : tensor<8xi64>
  %w1 = nn.variable "w1" param init = uniform(0.4) : tensor<5x6xf32>
  %w2 = nn.variable "w2" param init = uniform(0.4) : tensor<3x5xf32>
  %step = nn.step : tensor<i64>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x6xf32>, tensor<5x6xf32>) -> tensor<8x5xf32>
  %d = nn.dropout %h, %step {p = 0.25 : f64, seed = 7 : i64, stream = 3 : i64} : (tensor<8x5xf32>, tensor<i64>) -> tensor<8x5xf32>
  %r = nn.relu %d : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %z = nn.matmul %r, %w2 {transpose_rhs} : (tensor<8x5xf32>, tensor<3x5xf32>) -> tensor<8x3xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
