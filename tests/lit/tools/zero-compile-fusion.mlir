// zero-fuse-attention on the GPT-2 preset (2 layers, 4 heads, sequence 32,
// head dim 16), through autodiff, SBP propagation and partitioning at stage
// 2 on 2 ranks: each layer's attention is one nn.attention and its backward
// one nn.attention_grad, split on the batch, and no heads x seq x seq tensor
// is left anywhere in the plan. zero-fuse-epilogues folds each linear
// layer's bias (and the MLP's GELU) into its matmul, and autodiff gives the
// GELU's gradient the pre-activation the fused op returns.
// fuse-attention=false keeps the unfused attention.
//
// RUN: zero-compile --preset=tiny --world=2 --stage=2 --emit-ir=%t.mlir -o %t.zplan --report=none
// RUN: FileCheck %s < %t.mlir
// RUN: FileCheck %s --check-prefix=PLAN < %t.zplan
// RUN: FileCheck %s --check-prefix=EPILOGUE < %t.mlir
// RUN: zero-compile --preset=tiny --world=2 --stage=2 --pipeline='fuse-attention=false' --emit-ir=%t.unfused.mlir -o %t.unfused.zplan --report=none
// RUN: FileCheck %s --check-prefix=UNFUSED < %t.unfused.mlir

// CHECK-NOT: x32x32x
// CHECK-NOT: nn.softmax
// CHECK: %{{.*}}, %[[LSE0:.*]] = nn.attention {{.*}} {causal, scale = 2.500000e-01 : f64{{.*}}} : (tensor<1x4x32x16xf32>, tensor<1x4x32x16xf32>, tensor<1x4x32x16xf32>) -> (tensor<1x4x32x16xf32>, tensor<1x4x32xf32>)
// CHECK: nn.attention {{.*}} {causal
// CHECK: nn.cross_entropy
// CHECK: nn.attention_grad {{.*}} {causal, scale = 2.500000e-01 : f64{{.*}}} : (tensor<1x4x32x16xf32>, {{.*}}, tensor<1x4x32xf32>) -> (tensor<1x4x32x16xf32>, tensor<1x4x32x16xf32>, tensor<1x4x32x16xf32>)
// CHECK: nn.attention_grad
// CHECK-NOT: x32x32x
// CHECK-NOT: nn.softmax

// PLAN: "op": "nn.attention"
// PLAN-NEXT: "results"
// PLAN: "causal": true,
// PLAN-NEXT: "scale": 0.25
// PLAN: "op": "nn.attention_grad"

// UNFUSED-NOT: nn.attention
// UNFUSED: nn.softmax {{.*}} : (tensor<1x4x32x32xf32>) -> tensor<1x4x32x32xf32>
// UNFUSED: nn.softmax_grad
// UNFUSED-NOT: nn.attention

// EPILOGUE-NOT: nn.bias_add
// EPILOGUE-NOT: nn.gelu %
// EPILOGUE: nn.matmul_bias {{.*}} {transpose_rhs
// EPILOGUE: %{{.*}}, %[[PRE:.*]] = nn.matmul_bias_gelu {{.*}} {transpose_rhs
// EPILOGUE: nn.gelu_grad %{{.*}}, %[[PRE]]
// EPILOGUE-NOT: nn.bias_add
