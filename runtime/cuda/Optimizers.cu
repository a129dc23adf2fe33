//===- Optimizers.cu - the optimizer step's kernels -----------------------===//
//
// sgd, adam and adamw as torch.optim defines them, each one fused kernel over
// the flat shard: element by element in f32 with PyTorch's order of
// operations, the gradient first divided by `grad_scale`, Adam's bias
// corrections in double from the step counter on the device. Also the
// clipping factor, the overflow select and the dynamic loss scaler
// (DeepSpeed's DynamicLossScaler, without consecutive hysteresis), whose
// scalars stay on the device. All as the CPU kernels (Optimizers.cpp,
// LossScaling.cpp), operation for operation, after the same checks
// (runtime/kernels/OptimizerChecks.h, LossScalingChecks.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/MultiTensor.h"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/LossScalingChecks.h"
#include "runtime/kernels/OptimizerChecks.h"

#include <cmath>

namespace zerosbp::runtime::gpu {

namespace {
/// Element i of an SGD update; the single and the multi-tensor kernels both
/// compute with it.
__device__ __forceinline__ void sgdElement(float lr, float scale,
                                           FloatRef param, FloatRef grad,
                                           FloatRef newParam, int64_t i) {
  store(newParam, i, load(param, i) - lr * (load(grad, i) / scale));
}

__global__ void sgdUpdate(float lr, float scale, FloatRef param, FloatRef grad,
                          FloatRef newParam, int64_t n) {
  ZEROSBP_GRID_LOOP(i, n) { sgdElement(lr, scale, param, grad, newParam, i); }
}

using checks::AdamConstants;

struct AdamTensors {
  FloatRef param, grad, expAvg, expAvgSq;
  FloatRef newParam, newExpAvg, newExpAvgSq;
  const void *step;
  DType stepType;
};

/// Records a step below 1 in `slot` (the CPU kernel's error).
__device__ __forceinline__ bool checkStep(int64_t step, DeviceCheckSlot *slot) {
  if (step >= 1)
    return true;
  slot->position = 0;
  slot->value = step;
  return false;
}

/// What a block of an Adam kernel computes once from the step, in its
/// first thread, before any element.
struct AdamStepScalars {
  float stepSize;            // lr / (1 - beta1^t)
  float biasCorrection2Sqrt; // sqrt(1 - beta2^t)
  bool valid;                // t >= 1
};

__device__ __forceinline__ AdamStepScalars
adamStepScalars(const AdamConstants &c, int64_t step) {
  auto exponent = static_cast<double>(step);
  double biasCorrection1 = 1.0 - pow(c.beta1Double, exponent);
  double biasCorrection2 = 1.0 - pow(c.beta2Double, exponent);
  return {static_cast<float>(c.lr / biasCorrection1),
          static_cast<float>(sqrt(biasCorrection2)), step >= 1};
}

/// Element i of an Adam or AdamW update; the single and the multi-tensor
/// kernels both compute with it. Every operand is read before any result is
/// written, so a result may replace an operand.
__device__ __forceinline__ void adamElement(const AdamConstants &c,
                                            const AdamTensors &t, int64_t i,
                                            float stepSize,
                                            float biasCorrection2Sqrt) {
  float p = load(t.param, i);
  if (c.hasDecay)
    p = p * c.decay;
  float g = load(t.grad, i) / c.gradScale;
  if (c.hasCoupledDecay)
    g = g + c.coupledDecay * p;
  float m = c.beta1 * load(t.expAvg, i) + c.oneMinusBeta1 * g;
  float v = c.beta2 * load(t.expAvgSq, i) + c.oneMinusBeta2 * g * g;
  float denom = sqrtf(v) / biasCorrection2Sqrt + c.epsilon;
  store(t.newParam, i, p - stepSize * m / denom);
  store(t.newExpAvg, i, m);
  store(t.newExpAvgSq, i, v);
}

/// The whole update in one kernel. A step below 1 is recorded in `slot` and
/// writes nothing, as the CPU kernel throws before it writes.
__global__ void adamUpdate(AdamConstants c, AdamTensors t, int64_t n,
                           DeviceCheckSlot *slot) {
  __shared__ float stepSize;
  __shared__ float biasCorrection2Sqrt;
  __shared__ bool validStep;
  if (threadIdx.x == 0) {
    int64_t step = loadIndex(t.step, t.stepType, 0);
    AdamStepScalars scalars = adamStepScalars(c, step);
    stepSize = scalars.stepSize;
    biasCorrection2Sqrt = scalars.biasCorrection2Sqrt;
    validStep = scalars.valid;
    if (blockIdx.x == 0)
      checkStep(step, slot);
  }
  __syncthreads();
  if (!validStep)
    return;
  ZEROSBP_GRID_LOOP(i, n) {
    adamElement(c, t, i, stepSize, biasCorrection2Sqrt);
  }
}

__host__ __device__ __forceinline__ FloatRef
floatRef(const MultiTensorRef &tensor) {
  return {tensor.data, tensor.type};
}

/// Many updates in one kernel (MultiTensor.h): block b takes chunks b, b +
/// grid, ..., each of one tensor, with that tensor's constants and the
/// step scalars of `c` (lr and the betas every entry shares). A step below
/// 1 is recorded in `slot` and writes nothing.
__global__ void adamMultiUpdate(AdamConstants c, const void *stepData,
                                DType stepType, const AdamEntry *entries,
                                const MultiTensorChunk *chunks,
                                int64_t chunkCount, DeviceCheckSlot *slot) {
  __shared__ float stepSize;
  __shared__ float biasCorrection2Sqrt;
  __shared__ bool validStep;
  if (threadIdx.x == 0) {
    int64_t step = loadIndex(stepData, stepType, 0);
    AdamStepScalars scalars = adamStepScalars(c, step);
    stepSize = scalars.stepSize;
    biasCorrection2Sqrt = scalars.biasCorrection2Sqrt;
    validStep = scalars.valid;
    if (blockIdx.x == 0)
      checkStep(step, slot);
  }
  __syncthreads();
  if (!validStep)
    return;
  for (int64_t k = blockIdx.x; k < chunkCount; k += gridDim.x) {
    MultiTensorChunk chunk = chunks[k];
    // A copy: the stores below cannot change what the loop reads.
    AdamEntry entry = entries[chunk.tensor];
    AdamTensors t{floatRef(entry.param),
                  floatRef(entry.grad),
                  floatRef(entry.expAvg),
                  floatRef(entry.expAvgSq),
                  floatRef(entry.newParam),
                  floatRef(entry.newExpAvg),
                  floatRef(entry.newExpAvgSq),
                  stepData,
                  stepType};
    for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x)
      adamElement(entry.c, t, i, stepSize, biasCorrection2Sqrt);
  }
}

/// Many SGD updates in one kernel, chunked as adamMultiUpdate.
__global__ void sgdMultiUpdate(const SgdEntry *entries,
                               const MultiTensorChunk *chunks,
                               int64_t chunkCount) {
  for (int64_t k = blockIdx.x; k < chunkCount; k += gridDim.x) {
    MultiTensorChunk chunk = chunks[k];
    SgdEntry entry = entries[chunk.tensor];
    for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x)
      sgdElement(entry.lr, entry.gradScale, floatRef(entry.param),
                 floatRef(entry.grad), floatRef(entry.newParam), i);
  }
}

/// The step check alone, for an empty shard.
__global__ void checkStepPositive(const void *step, DType type,
                                  DeviceCheckSlot *slot) {
  checkStep(loadIndex(step, type, 0), slot);
}

__global__ void clipCoefficient(FloatRef sumSquares, float maxNorm,
                                float gradScale, FloatRef result) {
  // torch.nn.utils.clip_grad_norm_: min(1, max_norm / (norm + 1e-6)); NaN
  // stays NaN.
  float norm = sqrtf(load(sumSquares, 0)) / gradScale;
  float coefficient = maxNorm / (norm + 1e-6f);
  float clipped = coefficient > 1.0f ? 1.0f : coefficient;
  // The device's NaN is not the host's (ptxas may make the clamp a
  // NaN-propagating min, which writes 0x7fffffff): a NaN is written as the
  // IEEE quiet NaN, tested on the bits so that no float rewrite undoes it.
  unsigned bits = __float_as_uint(clipped);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    bits = 0x7fc00000u;
  store(result, 0, __uint_as_float(bits));
}

__global__ void selectElements(FloatRef predicate, FloatRef onTrue,
                               FloatRef onFalse, FloatRef out, int64_t n) {
  FloatRef chosen = load(predicate, 0) != 0.0f ? onTrue : onFalse;
  bool sameType = chosen.type == out.type;
  int elementBytes = out.type == DType::F64   ? 8
                     : out.type == DType::F32 ? 4
                                              : 2;
  ZEROSBP_GRID_LOOP(i, n) {
    if (sameType)
      copyElement(out.data, i, chosen.data, i, elementBytes);
    else
      store(out, i, load(chosen, i));
  }
}

using checks::LossScaleConfig;

/// One thread: every operand is read before any result is written, so the
/// results may be the operands' own bytes.
__global__ void lossScaleUpdate(LossScaleConfig config, FloatRef scaleIn,
                                FloatRef goodStepsIn, FloatRef hysteresisIn,
                                FloatRef overflowIn, FloatRef scaleOut,
                                FloatRef goodStepsOut, FloatRef hysteresisOut) {
  double scale = load(scaleIn, 0);
  double goodSteps = load(goodStepsIn, 0);
  double hysteresisLeft = load(hysteresisIn, 0);
  bool overflow = load(overflowIn, 0) != 0.0f;
  if (overflow) {
    if (config.hysteresis == 1 || hysteresisLeft <= 1.0) {
      double half = scale / 2.0;
      scale = half < config.minScale ? config.minScale : half; // std::max
    } else {
      hysteresisLeft -= 1.0;
    }
    goodSteps = 0.0;
  } else {
    goodSteps += 1.0;
    if (fmod(goodSteps, static_cast<double>(config.window)) == 0.0) {
      scale *= 2.0;
      hysteresisLeft = static_cast<double>(config.hysteresis);
    }
  }
  store(scaleOut, 0, static_cast<float>(scale));
  store(goodStepsOut, 0, static_cast<float>(goodSteps));
  store(hysteresisOut, 0, static_cast<float>(hysteresisLeft));
}

void runAdam(std::string_view op, const AttrMap &attrs, const Tensors &operands,
             const Tensors &results, bool decoupled, CudaContext &ctx) {
  checks::checkAdam(op, operands, results);
  const TensorRef &stepTensor = operands[4];
  AdamConstants c = checks::adamConstants(attrs, decoupled);

  checks::ValueMessage message = checks::adamStepMessage();
  DeviceCheckSlot *slot = ctx.beginCheck(
      op, std::string(op) + ": " + message.prefix, message.suffix);
  int64_t n = operands[0].numel();
  if (n == 0) {
    checkStepPositive<<<1, 1, 0, ctx.stream()>>>(stepTensor.data,
                                                 stepTensor.dtype, slot);
    checkLaunch(op);
    ctx.endCheck();
    return;
  }
  // Each thread reads element i of every operand before writing it, so a
  // result may replace an operand; the step is read by every block.
  Tensors read(operands.begin(), operands.begin() + 4);
  auto separate = [&](const TensorRef &result) {
    return overlaps(result, stepTensor) ||
           overlapsOtherThanReplaced(result, read);
  };
  // A separate result starts as a copy of the result, so that a bad step
  // leaves it as it was even with deferred checks.
  ResultTarget newParam(op, ctx, results[0], separate(results[0]),
                        /*keepContents=*/true);
  ResultTarget newExpAvg(op, ctx, results[1], separate(results[1]),
                         /*keepContents=*/true);
  ResultTarget newExpAvgSq(op, ctx, results[2], separate(results[2]),
                           /*keepContents=*/true);
  AdamTensors t{ref(operands[0]),          ref(operands[1]),
                ref(operands[2]),          ref(operands[3]),
                ref(newParam.tensor()),    ref(newExpAvg.tensor()),
                ref(newExpAvgSq.tensor()), stepTensor.data,
                stepTensor.dtype};
  constexpr int kThreads = 256;
  adamUpdate<<<gridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(c, t, n,
                                                                  slot);
  checkLaunch(op);
  // Eager checks throw here, before a separate result is copied back.
  ctx.endCheck();
  newParam.finish();
  newExpAvg.finish();
  newExpAvgSq.finish();
}
} // namespace

void sgdKernel(const AttrMap &attrs, const Tensors &operands,
               const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.sgd";
  checks::checkSgd(op, operands, results);
  auto lr = static_cast<float>(attrs.getFloat("lr"));
  auto scale = static_cast<float>(attrs.getFloat("grad_scale", 1.0));
  int64_t n = operands[0].numel();
  if (n == 0)
    return;
  ResultTarget out(op, ctx, results[0],
                   overlapsOtherThanReplaced(results[0], operands));
  constexpr int kThreads = 256;
  sgdUpdate<<<gridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      lr, scale, ref(operands[0]), ref(operands[1]), ref(out.tensor()), n);
  checkLaunch(op);
  out.finish();
}

void launchMultiSgd(std::string_view op, CudaContext &ctx,
                    const SgdEntry *entries, const MultiTensorChunk *chunks,
                    int64_t chunkCount) {
  if (chunkCount == 0)
    return;
  constexpr int kThreads = 256;
  sgdMultiUpdate<<<gridFor(chunkCount, 1), kThreads, 0, ctx.stream()>>>(
      entries, chunks, chunkCount);
  checkLaunch(op);
}

void launchMultiAdam(std::string_view op, CudaContext &ctx,
                     const AdamEntry *entries, const MultiTensorChunk *chunks,
                     int64_t chunkCount, const AdamConstants &stepConstants,
                     const TensorRef &step) {
  // One check for the launch, with the single kernel's message: every
  // update reads the same step.
  checks::ValueMessage message = checks::adamStepMessage();
  DeviceCheckSlot *slot = ctx.beginCheck(
      op, std::string(op) + ": " + message.prefix, message.suffix);
  constexpr int kThreads = 256;
  adamMultiUpdate<<<gridFor(chunkCount, 1), kThreads, 0, ctx.stream()>>>(
      stepConstants, step.data, step.dtype, entries, chunks, chunkCount, slot);
  checkLaunch(op);
  ctx.endCheck();
}

void adamKernel(const AttrMap &attrs, const Tensors &operands,
                const Tensors &results, CudaContext &ctx) {
  runAdam("nn.adam", attrs, operands, results, /*decoupled=*/false, ctx);
}

void adamwKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results, CudaContext &ctx) {
  runAdam("nn.adamw", attrs, operands, results, /*decoupled=*/true, ctx);
}

void clipCoefficientKernel(const AttrMap &attrs, const Tensors &operands,
                           const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.clip_coefficient";
  checks::checkClipCoefficient(op, operands, results);
  auto maxNorm = static_cast<float>(attrs.getFloat("max_norm"));
  auto gradScale = static_cast<float>(attrs.getFloat("grad_scale", 1.0));
  clipCoefficient<<<1, 1, 0, ctx.stream()>>>(ref(operands[0]), maxNorm,
                                             gradScale, ref(results[0]));
  checkLaunch(op);
}

void selectKernel(const AttrMap &, const Tensors &operands,
                  const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.select";
  checks::checkSelect(op, operands, results);
  const TensorRef &predicate = operands[0];
  const TensorRef &onTrue = operands[1], &onFalse = operands[2];
  const TensorRef &result = results[0];
  int64_t n = result.numel();
  if (n == 0)
    return;
  // The predicate is read by every thread; either choice may be replaced.
  bool separate = overlaps(result, predicate) ||
                  overlapsOtherThanReplaced(result, {onTrue, onFalse});
  ResultTarget out(op, ctx, result, separate);
  constexpr int kThreads = 256;
  selectElements<<<gridFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      ref(predicate), ref(onTrue), ref(onFalse), ref(out.tensor()), n);
  checkLaunch(op);
  out.finish();
}

void lossScaleUpdateKernel(const AttrMap &attrs, const Tensors &operands,
                           const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.loss_scale_update";
  LossScaleConfig config =
      checks::checkLossScaleUpdate(op, attrs, operands, results);
  lossScaleUpdate<<<1, 1, 0, ctx.stream()>>>(
      config, ref(operands[0]), ref(operands[1]), ref(operands[2]),
      ref(operands[3]), ref(results[0]), ref(results[1]), ref(results[2]));
  checkLaunch(op);
}

} // namespace zerosbp::runtime::gpu
