//===- VocabParallelLoss.cu - cross-entropy of logits split by class ------===//
//
// The CPU kernels' semantics and checks (runtime/kernels/cpu/
// VocabParallelLoss.cpp, runtime/kernels/VocabParallelLossChecks.h), labels
// checked on the device against the whole logits' classes. The rows go as
// in Softmax.cu's cross-entropy: one block per row, the max in f32,
// exp(x - max) by the CPU's fastExp, its sum in double with the block size
// and order of crossEntropyRows, so that on a whole row the f64 sums are the
// CUDA nn.cross_entropy's. The loss adds the row losses in
// crossEntropyTotal's order, so it never depends on timing. Which classes
// the rank holds is the CPU's rule (checks::ClassBlock::localClass, host and
// device).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/SoftmaxChecks.h"
#include "runtime/kernels/VocabParallelLossChecks.h"

#include <cmath>
#include <cstdint>

namespace zerosbp::runtime::gpu {

namespace {
using checks::ClassBlock;

/// Element i of an f32 or f64 tensor (the sums of exp), as double.
__device__ __forceinline__ double loadSum(const void *data, DType type,
                                          int64_t i) {
  return type == DType::F64 ? static_cast<const double *>(data)[i]
                            : static_cast<const float *>(data)[i];
}

__device__ __forceinline__ void storeSum(void *data, DType type, int64_t i,
                                         double value) {
  if (type == DType::F64)
    static_cast<double *>(data)[i] = value;
  else
    static_cast<float *>(data)[i] = static_cast<float>(value);
}

/// max[r] = the max of row r's logits; -infinity for a rank without
/// classes, the identity of the max over ranks.
__global__ void rowMaxes(FloatRef logits, ClassBlock block, float *max) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < block.rows; r += gridDim.x) {
    float local = -INFINITY;
    for (int64_t j = threadIdx.x; j < block.classes; j += blockDim.x) {
      float v = load(logits, r * block.classes + j);
      local = v > local ? v : local;
    }
    float best = blockMax(local, shared);
    if (threadIdx.x == 0)
      max[r] = best;
  }
}

/// sumexp[r] = sum_j exp(x[r, j] - max[r]) over the rank's classes, and the
/// label's logit where the rank holds the label, else 0.
__global__ void rowSums(FloatRef logits, const float *max, const void *labels,
                        DType labelType, ClassBlock block, void *sumexp,
                        DType sumType, float *labelLogits) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < block.rows; r += gridDim.x) {
    float rowMax = max[r];
    double local = 0.0;
    for (int64_t j = threadIdx.x; j < block.classes; j += blockDim.x)
      local += fastExp(load(logits, r * block.classes + j) - rowMax);
    double sum = blockSum(local, shared);
    if (threadIdx.x == 0) {
      storeSum(sumexp, sumType, r, sum);
      int64_t j = block.localClass(loadIndex(labels, labelType, r));
      labelLogits[r] = j >= 0 ? load(logits, r * block.classes + j) : 0.0f;
    }
  }
}

/// The row losses log(sum) + max - x[label] added in a fixed order, over
/// `count`, into the 0-D result.
__global__ void lossTotal(const float *max, const void *sumexp, DType sumType,
                          const float *labelLogits, ClassBlock block,
                          FloatRef result) {
  __shared__ double shared[32];
  double local = 0.0;
  for (int64_t r = threadIdx.x; r < block.rows; r += blockDim.x)
    local += log(loadSum(sumexp, sumType, r)) + static_cast<double>(max[r]) -
             static_cast<double>(labelLogits[r]);
  double total = blockSum(local, shared);
  if (threadIdx.x == 0)
    store(result, 0, static_cast<float>(total / block.count));
}

/// dx = dloss (softmax(x) - onehot(label)) / count on the rank's classes.
/// Each thread writes only the elements it reads: dx may replace x.
__global__ void splitGradRows(FloatRef gradLoss, FloatRef logits,
                              const float *max, const void *sumexp,
                              DType sumType, const void *labels,
                              DType labelType, ClassBlock block, FloatRef dx) {
  auto factor =
      static_cast<float>(static_cast<double>(load(gradLoss, 0)) / block.count);
  for (int64_t r = blockIdx.x; r < block.rows; r += gridDim.x) {
    float rowMax = max[r];
    auto inverse = static_cast<float>(1.0 / loadSum(sumexp, sumType, r));
    int64_t label = block.localClass(loadIndex(labels, labelType, r));
    for (int64_t j = threadIdx.x; j < block.classes; j += blockDim.x) {
      int64_t at = r * block.classes + j;
      float probability = fastExp(load(logits, at) - rowMax) * inverse;
      float value =
          j == label ? (probability - 1.0f) * factor : probability * factor;
      store(dx, at, value);
    }
  }
}

void checkLabels(std::string_view op, CudaContext &ctx, const TensorRef &labels,
                 const ClassBlock &block) {
  checks::ValueMessage message = checks::labelMessage(block.globalClasses);
  checkIndexRange(op, ctx, labels, block.globalClasses,
                  std::string(op) + ": " + message.prefix, message.suffix);
}
} // namespace

void crossEntropyMaxKernel(const AttrMap &attrs, const Tensors &operands,
                           const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.cross_entropy_max";
  ClassBlock block = checks::checkCrossEntropyMax(op, attrs, operands, results);
  const TensorRef &logits = operands[0], &result = results[0];
  if (block.rows == 0)
    return;
  ResultTarget out(op, ctx, result, overlapsAny(result, operands));
  rowMaxes<<<rowBlocks(block.rows), rowThreads(block.classes), 0,
             ctx.stream()>>>(ref(logits), block, out.tensor().as<float>());
  checkLaunch(op);
  out.finish();
}

void crossEntropySumsKernel(const AttrMap &attrs, const Tensors &operands,
                            const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.cross_entropy_sums";
  ClassBlock block =
      checks::checkCrossEntropySums(op, attrs, operands, results);
  const TensorRef &logits = operands[0], &max = operands[1];
  const TensorRef &labels = operands[2];
  checkLabels(op, ctx, labels, block);
  if (block.rows == 0)
    return;
  // Thread 0 writes a row's results after every thread has read its max.
  ResultTarget sumexp(op, ctx, results[0], overlapsAny(results[0], operands));
  ResultTarget labelLogits(op, ctx, results[1],
                           overlapsAny(results[1], operands));
  rowSums<<<rowBlocks(block.rows), rowThreads(block.classes), 0,
            ctx.stream()>>>(ref(logits), max.as<const float>(), labels.data,
                            labels.dtype, block, sumexp.data(),
                            results[0].dtype, labelLogits.tensor().as<float>());
  checkLaunch(op);
  sumexp.finish();
  labelLogits.finish();
}

void crossEntropyLossKernel(const AttrMap &attrs, const Tensors &operands,
                            const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.cross_entropy_loss";
  ClassBlock block =
      checks::checkCrossEntropyLoss(op, attrs, operands, results);
  const TensorRef &sumexp = operands[1];
  // One block reads every row before thread 0 writes: the result may lie in
  // an operand.
  lossTotal<<<1, 256, 0, ctx.stream()>>>(
      operands[0].as<const float>(), sumexp.data, sumexp.dtype,
      operands[2].as<const float>(), block, ref(results[0]));
  checkLaunch(op);
}

void crossEntropySplitGradKernel(const AttrMap &attrs, const Tensors &operands,
                                 const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.cross_entropy_split_grad";
  ClassBlock block =
      checks::checkCrossEntropySplitGrad(op, attrs, operands, results);
  const TensorRef &gradLoss = operands[0], &logits = operands[1];
  const TensorRef &max = operands[2], &sumexp = operands[3];
  const TensorRef &labels = operands[4], &result = results[0];
  checkLabels(op, ctx, labels, block);
  if (result.numel() == 0)
    return;
  // Every block reads grad_loss and each row's max, sum and label, so only
  // the logits may be replaced.
  bool separate = overlaps(result, gradLoss) || overlaps(result, max) ||
                  overlaps(result, sumexp) || overlaps(result, labels) ||
                  (overlaps(result, logits) && !replaces(result, logits));
  ResultTarget out(op, ctx, result, separate);
  splitGradRows<<<rowBlocks(block.rows), rowThreads(block.classes), 0,
                  ctx.stream()>>>(
      ref(gradLoss), ref(logits), max.as<const float>(), sumexp.data,
      sumexp.dtype, labels.data, labels.dtype, block, ref(out.tensor()));
  checkLaunch(op);
  out.finish();
}

} // namespace zerosbp::runtime::gpu
