//===- Registry.cpp - op names to CUDA kernels ----------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/OpKernels.h"

#include <algorithm>
#include <iterator>

namespace zerosbp::runtime {

namespace {
struct Entry {
  std::string_view name;
  CudaKernelFn kernel;
};

// Sorted by name; the same names as the CPU registry.
constexpr Entry kKernels[] = {
    {"nn.adam", gpu::adamKernel},
    {"nn.adamw", gpu::adamwKernel},
    {"nn.add", gpu::addKernel},
    {"nn.attention", gpu::attentionKernel},
    {"nn.attention_grad", gpu::attentionGradKernel},
    {"nn.batch_matmul", gpu::batchMatmulKernel},
    {"nn.bias_add", gpu::biasAddKernel},
    {"nn.cast", gpu::castKernel},
    {"nn.clip_coefficient", gpu::clipCoefficientKernel},
    {"nn.concat", gpu::concatKernel},
    {"nn.cross_entropy", gpu::crossEntropyKernel},
    {"nn.cross_entropy_grad", gpu::crossEntropyGradKernel},
    {"nn.cross_entropy_loss", gpu::crossEntropyLossKernel},
    {"nn.cross_entropy_max", gpu::crossEntropyMaxKernel},
    {"nn.cross_entropy_split_grad", gpu::crossEntropySplitGradKernel},
    {"nn.cross_entropy_sums", gpu::crossEntropySumsKernel},
    {"nn.dequantize", gpu::dequantizeKernel},
    {"nn.div", gpu::divKernel},
    {"nn.dropout", gpu::dropoutKernel},
    {"nn.embedding", gpu::embeddingKernel},
    {"nn.embedding_grad", gpu::embeddingGradKernel},
    {"nn.fill", gpu::fillKernel},
    {"nn.gelu", gpu::geluKernel},
    {"nn.gelu_grad", gpu::geluGradKernel},
    {"nn.layer_norm", gpu::layerNormKernel},
    {"nn.layer_norm_grad", gpu::layerNormGradKernel},
    {"nn.loss_scale_update", gpu::lossScaleUpdateKernel},
    {"nn.matmul", gpu::matmulKernel},
    {"nn.matmul_add", gpu::matmulAddKernel},
    {"nn.matmul_bias", gpu::matmulBiasKernel},
    {"nn.matmul_bias_gelu", gpu::matmulBiasGeluKernel},
    {"nn.mul", gpu::mulKernel},
    {"nn.nonfinite_count", gpu::nonfiniteCountKernel},
    {"nn.pad", gpu::padKernel},
    {"nn.quantize", gpu::quantizeKernel},
    {"nn.reduce_mean", gpu::reduceMeanKernel},
    {"nn.reduce_sum", gpu::reduceSumKernel},
    {"nn.relu", gpu::reluKernel},
    {"nn.relu_grad", gpu::reluGradKernel},
    {"nn.reshape", gpu::reshapeKernel},
    {"nn.scale", gpu::scaleKernel},
    {"nn.select", gpu::selectKernel},
    {"nn.sgd", gpu::sgdKernel},
    {"nn.slice", gpu::sliceKernel},
    {"nn.softmax", gpu::softmaxKernel},
    {"nn.softmax_grad", gpu::softmaxGradKernel},
    {"nn.split", gpu::splitKernel},
    {"nn.sub", gpu::subKernel},
    {"nn.tanh", gpu::tanhKernel},
    {"nn.tanh_grad", gpu::tanhGradKernel},
    {"nn.transpose", gpu::transposeKernel},
};

bool byName(const Entry &entry, std::string_view name) {
  return entry.name < name;
}
} // namespace

CudaKernelFn findCudaKernel(std::string_view op) {
  const Entry *end = std::end(kKernels);
  const Entry *it = std::lower_bound(std::begin(kKernels), end, op, byName);
  return it != end && it->name == op ? it->kernel : nullptr;
}

std::vector<std::string_view> cudaKernelNames() {
  std::vector<std::string_view> names;
  for (const Entry &entry : kKernels)
    names.push_back(entry.name);
  return names;
}

} // namespace zerosbp::runtime
