//===- Registry.cpp - op names to CPU kernels -----------------------------===//

#include "runtime/kernels/Kernel.h"
#include "runtime/kernels/cpu/CpuKernels.h"
#include "runtime/kernels/cpu/HostThreads.h"

#include <algorithm>
#include <iterator>

extern "C" void openblas_set_num_threads(int threads);

namespace zerosbp::runtime {

namespace {
struct Entry {
  std::string_view name;
  KernelFn kernel;
};

// Sorted by name.
constexpr Entry kKernels[] = {
    {"nn.adam", cpu::adamKernel},
    {"nn.adamw", cpu::adamwKernel},
    {"nn.add", cpu::addKernel},
    {"nn.attention", cpu::attentionKernel},
    {"nn.attention_grad", cpu::attentionGradKernel},
    {"nn.batch_matmul", cpu::batchMatmulKernel},
    {"nn.bias_add", cpu::biasAddKernel},
    {"nn.cast", cpu::castKernel},
    {"nn.clip_coefficient", cpu::clipCoefficientKernel},
    {"nn.concat", cpu::concatKernel},
    {"nn.cross_entropy", cpu::crossEntropyKernel},
    {"nn.cross_entropy_grad", cpu::crossEntropyGradKernel},
    {"nn.cross_entropy_loss", cpu::crossEntropyLossKernel},
    {"nn.cross_entropy_max", cpu::crossEntropyMaxKernel},
    {"nn.cross_entropy_split_grad", cpu::crossEntropySplitGradKernel},
    {"nn.cross_entropy_sums", cpu::crossEntropySumsKernel},
    {"nn.dequantize", cpu::dequantizeKernel},
    {"nn.div", cpu::divKernel},
    {"nn.dropout", cpu::dropoutKernel},
    {"nn.embedding", cpu::embeddingKernel},
    {"nn.embedding_grad", cpu::embeddingGradKernel},
    {"nn.fill", cpu::fillKernel},
    {"nn.gelu", cpu::geluKernel},
    {"nn.gelu_grad", cpu::geluGradKernel},
    {"nn.layer_norm", cpu::layerNormKernel},
    {"nn.layer_norm_grad", cpu::layerNormGradKernel},
    {"nn.loss_scale_update", cpu::lossScaleUpdateKernel},
    {"nn.matmul", cpu::matmulKernel},
    {"nn.matmul_add", cpu::matmulAddKernel},
    {"nn.matmul_bias", cpu::matmulBiasKernel},
    {"nn.matmul_bias_gelu", cpu::matmulBiasGeluKernel},
    {"nn.mul", cpu::mulKernel},
    {"nn.nonfinite_count", cpu::nonfiniteCountKernel},
    {"nn.pad", cpu::padKernel},
    {"nn.quantize", cpu::quantizeKernel},
    {"nn.reduce_mean", cpu::reduceMeanKernel},
    {"nn.reduce_sum", cpu::reduceSumKernel},
    {"nn.relu", cpu::reluKernel},
    {"nn.relu_grad", cpu::reluGradKernel},
    {"nn.reshape", cpu::reshapeKernel},
    {"nn.scale", cpu::scaleKernel},
    {"nn.select", cpu::selectKernel},
    {"nn.sgd", cpu::sgdKernel},
    {"nn.slice", cpu::sliceKernel},
    {"nn.softmax", cpu::softmaxKernel},
    {"nn.softmax_grad", cpu::softmaxGradKernel},
    {"nn.split", cpu::splitKernel},
    {"nn.sub", cpu::subKernel},
    {"nn.tanh", cpu::tanhKernel},
    {"nn.tanh_grad", cpu::tanhGradKernel},
    {"nn.transpose", cpu::transposeKernel},
};

bool byName(const Entry &entry, std::string_view name) {
  return entry.name < name;
}
} // namespace

KernelFn findCpuKernel(std::string_view op) {
  const Entry *end = std::end(kKernels);
  const Entry *it = std::lower_bound(std::begin(kKernels), end, op, byName);
  return it != end && it->name == op ? it->kernel : nullptr;
}

std::vector<std::string_view> cpuKernelNames() {
  std::vector<std::string_view> names;
  for (const Entry &entry : kKernels)
    names.push_back(entry.name);
  return names;
}

void setCpuKernelThreads(int threads) {
  openblas_set_num_threads(std::max(threads, 1));
  cpu::setHostKernelThreads(threads);
}

} // namespace zerosbp::runtime
