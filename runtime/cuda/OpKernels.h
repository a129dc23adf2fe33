//===- OpKernels.h - the CUDA kernel functions ------------------*- C++ -*-===//
//
// One function per op, each a CudaKernelFn; Registry.cpp maps op names to
// them. Grouped by file like runtime/kernels/cpu/CpuKernels.h.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CUDA_OPKERNELS_H
#define ZEROSBP_RUNTIME_CUDA_OPKERNELS_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/Tensor.h"
#include "runtime/cuda/CudaContext.h"

#include <string>
#include <string_view>
#include <vector>

namespace zerosbp::runtime::gpu {

/// A CudaKernelFn's signature: every function below is declared with it.
using KernelSignature = void(const AttrMap &attrs,
                             const std::vector<TensorRef> &operands,
                             const std::vector<TensorRef> &results,
                             CudaContext &ctx);

// Matmul.cpp (cuBLAS)
KernelSignature matmulKernel;
KernelSignature batchMatmulKernel;

// MatmulEpilogue.cpp (cuBLASLt, the bias and GELU in the product's epilogue)
KernelSignature matmulBiasKernel;
KernelSignature matmulBiasGeluKernel;
KernelSignature matmulAddKernel;
/// Whether the matmul epilogues may use cuBLASLt (the default) or always
/// take their fallback, cuBLAS and elementwise kernels; tests compare the
/// two.
void setMatmulEpilogueCublasLt(bool enabled);

// Elementwise.cu
KernelSignature addKernel;
KernelSignature subKernel;
KernelSignature mulKernel;
KernelSignature divKernel;
KernelSignature biasAddKernel;
KernelSignature scaleKernel;
KernelSignature castKernel;
KernelSignature reluKernel;
KernelSignature geluKernel;
KernelSignature tanhKernel;
KernelSignature reluGradKernel;
KernelSignature geluGradKernel;
KernelSignature tanhGradKernel;

// Dropout.cu
KernelSignature dropoutKernel;
KernelSignature quantizeKernel;
KernelSignature dequantizeKernel;

// Normalization.cu
KernelSignature layerNormKernel;
KernelSignature layerNormGradKernel;

// Softmax.cu (softmax rows and the cross-entropy built on them)
KernelSignature softmaxKernel;
KernelSignature softmaxGradKernel;
KernelSignature crossEntropyKernel;
KernelSignature crossEntropyGradKernel;

// VocabParallelLoss.cu (the cross-entropy of logits split by class)
KernelSignature crossEntropyMaxKernel;
KernelSignature crossEntropySumsKernel;
KernelSignature crossEntropyLossKernel;
KernelSignature crossEntropySplitGradKernel;

// Attention.cu (fused attention, FlashAttention-2)
KernelSignature attentionKernel;
KernelSignature attentionGradKernel;
/// Whether bf16/f16 attention may take the tensor-core kernels (the default)
/// or always takes the f32-FMA ones; tests compare the two.
void setAttentionTensorCores(bool enabled);

// Embedding.cu
KernelSignature embeddingKernel;
KernelSignature embeddingGradKernel;

// ShapeOps.cu
KernelSignature fillKernel;
KernelSignature reshapeKernel;
KernelSignature padKernel;
KernelSignature transposeKernel;
KernelSignature sliceKernel;
KernelSignature splitKernel;
KernelSignature concatKernel;

// Reductions.cu
KernelSignature reduceSumKernel;
KernelSignature reduceMeanKernel;
KernelSignature nonfiniteCountKernel;

// Optimizers.cu (the optimizer step: updates, clipping, loss scaling)
KernelSignature sgdKernel;
KernelSignature adamKernel;
KernelSignature adamwKernel;
KernelSignature clipCoefficientKernel;
KernelSignature selectKernel;
KernelSignature lossScaleUpdateKernel;

//===----------------------------------------------------------------------===//
// Launchers the kernels share
//===----------------------------------------------------------------------===//

/// Enqueues to[i] = from[i] for a float tensor of any storage type into one
/// of the same number of elements, through f32 as the CPU kernels convert
/// (Elementwise.cu). The two must not overlap.
void launchConvert(std::string_view op, CudaContext &ctx, const TensorRef &from,
                   const TensorRef &to);

/// Checks that every element of the i32/i64 tensor `indices` lies in
/// [0, bound); a failure reads "<prefix><first bad value><suffix>"
/// (Embedding.cu).
void checkIndexRange(std::string_view op, CudaContext &ctx,
                     const TensorRef &indices, int64_t bound,
                     std::string prefix, std::string suffix);

} // namespace zerosbp::runtime::gpu

#endif // ZEROSBP_RUNTIME_CUDA_OPKERNELS_H
