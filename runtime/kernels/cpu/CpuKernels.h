//===- CpuKernels.h - the CPU kernel functions ------------------*- C++ -*-===//
//
// One function per op, each a KernelFn; Registry.cpp maps op names to them.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_CPU_CPUKERNELS_H
#define ZEROSBP_RUNTIME_KERNELS_CPU_CPUKERNELS_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Tensor.h"

#include <vector>

namespace zerosbp::runtime::cpu {

/// A KernelFn's signature: every function below is declared with it.
using KernelSignature = void(const AttrMap &attrs,
                             const std::vector<TensorRef> &operands,
                             const std::vector<TensorRef> &results);

// Matmul.cpp
KernelSignature matmulKernel;
KernelSignature batchMatmulKernel;
KernelSignature matmulBiasKernel;
KernelSignature matmulBiasGeluKernel;
KernelSignature matmulAddKernel;

// Attention.cpp
KernelSignature attentionKernel;
KernelSignature attentionGradKernel;

// Elementwise.cpp
KernelSignature addKernel;
KernelSignature subKernel;
KernelSignature mulKernel;
KernelSignature divKernel;
KernelSignature biasAddKernel;
KernelSignature scaleKernel;
KernelSignature castKernel;

// Dropout.cpp
KernelSignature dropoutKernel;

// Quantize.cpp
KernelSignature quantizeKernel;
KernelSignature dequantizeKernel;

// Activations.cpp
KernelSignature reluKernel;
KernelSignature geluKernel;
KernelSignature tanhKernel;
KernelSignature reluGradKernel;
KernelSignature geluGradKernel;
KernelSignature tanhGradKernel;
/// y[i] = gelu(x[i]) for f32 values by nn.gelu's own loop, so that
/// nn.matmul_bias_gelu (Matmul.cpp) gives its bits; x and y do not overlap.
void geluValues(const float *x, float *y, int64_t count);

// Normalization.cpp
KernelSignature layerNormKernel;
KernelSignature layerNormGradKernel;

// Softmax.cpp
KernelSignature softmaxKernel;
KernelSignature softmaxGradKernel;

// Embedding.cpp
KernelSignature embeddingKernel;
KernelSignature embeddingGradKernel;

// Loss.cpp
KernelSignature crossEntropyKernel;
KernelSignature crossEntropyGradKernel;

// VocabParallelLoss.cpp (the cross-entropy of logits split by class)
KernelSignature crossEntropyMaxKernel;
KernelSignature crossEntropySumsKernel;
KernelSignature crossEntropyLossKernel;
KernelSignature crossEntropySplitGradKernel;

// ShapeOps.cpp
KernelSignature fillKernel;
KernelSignature reshapeKernel;
KernelSignature padKernel;
KernelSignature transposeKernel;
KernelSignature sliceKernel;
KernelSignature splitKernel;
KernelSignature concatKernel;

// Reductions.cpp
KernelSignature reduceSumKernel;
KernelSignature reduceMeanKernel;

// Optimizers.cpp
KernelSignature sgdKernel;
KernelSignature adamKernel;
KernelSignature adamwKernel;
KernelSignature clipCoefficientKernel;

// LossScaling.cpp
KernelSignature nonfiniteCountKernel;
KernelSignature selectKernel;
KernelSignature lossScaleUpdateKernel;

} // namespace zerosbp::runtime::cpu

#endif // ZEROSBP_RUNTIME_KERNELS_CPU_CPUKERNELS_H
