//===- Elementwise.cu - arithmetic, activations, scale and cast -----------===//
//
// One kernel maps every elementwise op: each thread reads element i of its
// operands (broadcast through strides) in f32 and writes element i of the
// result, so a result may replace an operand of its own shape. The op is a
// launch argument rather than a template parameter, which keeps the build
// to one instantiation. Formulas are the CPU kernels' (Elementwise.cpp,
// Activations.cpp), operation for operation; so are the checks
// (runtime/kernels/ElementwiseChecks.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/MultiTensor.h"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/Support.h"
#include "runtime/kernels/ElementwiseChecks.h"

#include <algorithm>
#include <cstdint>

namespace zerosbp::runtime::gpu {

namespace {
enum class MapOp : int {
  Copy,
  Scale,
  Relu,
  Gelu,
  Tanh,
  Add,
  Sub,
  Mul,
  Div,
  ReluGrad,
  GeluGrad,
  TanhGrad,
};

/// An operand as the kernel reads it: strides along the result's dims, 0
/// where it is broadcast.
struct MapOperand {
  const void *data;
  DType type;
  int64_t strides[kMaxDims];
};

/// The result's dims after merging; the result itself is contiguous.
struct MapShape {
  int rank;
  int64_t sizes[kMaxDims];
};

constexpr float kGeluBeta = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluKappa = 0.044715f;

/// sigmoid(2u) = (1 + tanh(u)) / 2 for GELU's u.
__device__ __forceinline__ float geluGate(float x) {
  float u = kGeluBeta * (x + kGeluKappa * (x * x * x));
  return 1.0f / (1.0f + fastExp(-2.0f * u));
}

__device__ __forceinline__ float applyOp(MapOp op, float a, float b,
                                         float factor) {
  switch (op) {
  case MapOp::Copy:
    return a;
  case MapOp::Scale:
    return a * factor;
  case MapOp::Relu:
    return a < 0.0f ? 0.0f : a;
  case MapOp::Gelu:
    return a * geluGate(a);
  case MapOp::Tanh:
    return fastTanh(a);
  case MapOp::Add:
    return a + b;
  case MapOp::Sub:
    return a - b;
  case MapOp::Mul:
    return a * b;
  case MapOp::Div:
    return a / b;
  case MapOp::ReluGrad: // a = dy, b = x
    return b <= 0.0f ? 0.0f : a;
  case MapOp::GeluGrad: { // a = dy, b = x
    float s = geluGate(b);
    float innerDerivative = kGeluBeta * (1.0f + 3.0f * kGeluKappa * (b * b));
    return a * (s + 2.0f * b * s * (1.0f - s) * innerDerivative);
  }
  case MapOp::TanhGrad: // a = dy, b = y
    return a * (1.0f - b * b);
  }
  return 0.0f;
}

__global__ void mapKernel(MapOp op, float factor, MapOperand a, MapOperand b,
                          void *out, DType outType, MapShape shape, int64_t n) {
  ZEROSBP_GRID_LOOP(i, n) {
    int64_t offsetA = i, offsetB = i;
    if (shape.rank != 1 || a.strides[0] != 1 || b.strides[0] != 1) {
      offsetA = offsetB = 0;
      int64_t rest = i;
      // Unrolled with constant indices, so the arrays stay kernel parameters.
#pragma unroll
      for (int k = 0; k < kMaxDims; ++k) {
        int d = kMaxDims - 1 - k;
        if (d < shape.rank) {
          int64_t index = rest % shape.sizes[d];
          rest /= shape.sizes[d];
          offsetA += index * a.strides[d];
          offsetB += index * b.strides[d];
        }
      }
    }
    float x = loadFloat(a.data, a.type, offsetA);
    float y = b.data ? loadFloat(b.data, b.type, offsetB) : 0.0f;
    storeFloat(out, outType, i, applyOp(op, x, y, factor));
  }
}

/// mapKernel for a contiguous `a` and a `b` that is absent, contiguous, or a
/// contiguous row repeated every `period` elements (a bias): kVector
/// elements per thread in 16-byte loads and stores, the same arithmetic per
/// element. The scalar loop maps the tail past the last whole vector.
__global__ void mapVectorKernel(MapOp op, float factor, const void *a,
                                DType aType, const void *b, DType bType,
                                int64_t period, void *out, DType outType,
                                int64_t n) {
  int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t vectors = n / kVector;
  for (int64_t v = first; v < vectors; v += stride) {
    int64_t i = v * kVector;
    float x[kVector], y[kVector] = {}, r[kVector];
    loadVector(a, aType, i, x);
    if (b)
      loadVector(b, bType, period ? i % period : i, y);
#pragma unroll
    for (int k = 0; k < kVector; ++k)
      r[k] = applyOp(op, x[k], y[k], factor);
    storeVector(out, outType, i, r);
  }
  for (int64_t i = vectors * kVector + first; i < n; i += stride) {
    float x = loadFloat(a, aType, i);
    float y = b ? loadFloat(b, bType, period ? i % period : i) : 0.0f;
    storeFloat(out, outType, i, applyOp(op, x, y, factor));
  }
}

/// Many casts in one kernel (MultiTensor.h): block b takes chunks b, b +
/// grid, ..., each of one tensor, and maps its elements as mapVectorKernel
/// and mapKernel map nn.cast's (MapOp::Copy): kVector at a time where both
/// tensors take 16-byte words (chunks begin at multiples of kVector), one
/// at a time otherwise and past the last whole vector.
__global__ void castMultiKernel(const CastEntry *entries,
                                const MultiTensorChunk *chunks,
                                int64_t chunkCount) {
  for (int64_t k = blockIdx.x; k < chunkCount; k += gridDim.x) {
    MultiTensorChunk chunk = chunks[k];
    CastEntry entry = entries[chunk.tensor];
    const void *from = entry.from.data;
    void *to = entry.to.data;
    DType fromType = entry.from.type, toType = entry.to.type;
    // vectorLoadable's test of both, on the device.
    uintptr_t addresses =
        reinterpret_cast<uintptr_t>(from) | reinterpret_cast<uintptr_t>(to);
    bool vector =
        fromType != DType::F64 && toType != DType::F64 && addresses % 16 == 0;
    int64_t tail = chunk.begin;
    if (vector) {
      int64_t vectors = (chunk.end - chunk.begin) / kVector;
      for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x) {
        int64_t i = chunk.begin + v * kVector;
        float x[kVector], r[kVector];
        loadVector(from, fromType, i, x);
#pragma unroll
        for (int e = 0; e < kVector; ++e)
          r[e] = applyOp(MapOp::Copy, x[e], 0.0f, 0.0f);
        storeVector(to, toType, i, r);
      }
      tail = chunk.begin + vectors * kVector;
    }
    for (int64_t i = tail + threadIdx.x; i < chunk.end; i += blockDim.x)
      storeFloat(
          to, toType, i,
          applyOp(MapOp::Copy, loadFloat(from, fromType, i), 0.0f, 0.0f));
  }
}

/// Where `b` of a map repeats: 0 when it is contiguous like the result,
/// the row length for a row broadcast along the leading dims, -1 otherwise.
int64_t vectorPeriod(const MapOperand &a, const MapOperand &b,
                     const MapShape &shape) {
  if (shape.rank == 1 && a.strides[0] == 1 && b.strides[0] == 1)
    return 0;
  if (shape.rank == 2 && a.strides[0] == shape.sizes[1] && a.strides[1] == 1 &&
      b.strides[0] == 0 && b.strides[1] == 1 && shape.sizes[1] % kVector == 0)
    return shape.sizes[1];
  return -1;
}

MapOperand contiguousOperand(const TensorRef &tensor) {
  MapOperand operand{tensor.data, tensor.dtype, {}};
  operand.strides[0] = 1;
  return operand;
}

MapShape flatShape(int64_t numel) {
  MapShape shape{1, {}};
  shape.sizes[0] = numel;
  return shape;
}

void launchMap(std::string_view op, CudaContext &ctx, MapOp mapOp, float factor,
               const MapOperand &a, const MapOperand &b,
               const TensorRef &result, const MapShape &shape, bool separate) {
  int64_t numel = result.numel();
  if (numel == 0)
    return;
  ResultTarget out(op, ctx, result, separate);
  constexpr int kThreads = 256;
  int64_t period = vectorPeriod(a, b, shape);
  bool vector = period >= 0 && vectorLoadable(a.data, a.type) &&
                vectorLoadable(out.data(), result.dtype) &&
                (!b.data || vectorLoadable(b.data, b.type));
  if (vector) {
    int64_t vectors = std::max<int64_t>(numel / kVector, 1);
    mapVectorKernel<<<gridFor(vectors, kThreads), kThreads, 0, ctx.stream()>>>(
        mapOp, factor, a.data, a.type, b.data, b.type, period, out.data(),
        result.dtype, numel);
  } else {
    mapKernel<<<gridFor(numel, kThreads), kThreads, 0, ctx.stream()>>>(
        mapOp, factor, a, b, out.data(), result.dtype, shape, numel);
  }
  checkLaunch(op);
  out.finish();
}

void runBinary(std::string_view op, CudaContext &ctx, MapOp mapOp,
               const TensorRef &lhs, const TensorRef &rhs,
               const TensorRef &result) {
  std::vector<int64_t> shape = checks::checkBroadcast(op, lhs, rhs, result);
  if (result.numel() == 0)
    return;

  // Each thread reads element i of a replaced operand before writing it;
  // any other overlap goes through a separate buffer.
  bool separate = overlapsOtherThanReplaced(result, {lhs, rhs});
  if (lhs.shape == rhs.shape) {
    launchMap(op, ctx, mapOp, 0.0f, contiguousOperand(lhs),
              contiguousOperand(rhs), result, flatShape(result.numel()),
              separate);
    return;
  }
  std::vector<StridedDim> dims =
      simplifyDims(shape, broadcastStrides(lhs.shape, shape),
                   broadcastStrides(rhs.shape, shape));
  expectDeviceRank(op, dims);
  MapOperand a{lhs.data, lhs.dtype, {}}, b{rhs.data, rhs.dtype, {}};
  MapShape mapShape{static_cast<int>(dims.size()), {}};
  for (size_t d = 0; d < dims.size(); ++d) {
    mapShape.sizes[d] = dims[d].size;
    a.strides[d] = dims[d].strideA;
    b.strides[d] = dims[d].strideB;
  }
  launchMap(op, ctx, mapOp, 0.0f, a, b, result, mapShape, separate);
}

void runBinaryKernel(std::string_view op, MapOp mapOp, const Tensors &operands,
                     const Tensors &results, CudaContext &ctx) {
  expectArity(op, operands, results, 2, 1);
  runBinary(op, ctx, mapOp, operands[0], operands[1], results[0]);
}

/// An elementwise op of one operand of the result's shape.
void runUnary(std::string_view op, CudaContext &ctx, MapOp mapOp, float factor,
              const TensorRef &input, const TensorRef &result) {
  MapOperand none{nullptr, DType::F32, {}};
  none.strides[0] = 1;
  launchMap(op, ctx, mapOp, factor, contiguousOperand(input), none, result,
            flatShape(input.numel()),
            overlapsOtherThanReplaced(result, {input}));
}

void runActivation(std::string_view op, MapOp mapOp, const Tensors &operands,
                   const Tensors &results, CudaContext &ctx) {
  checks::checkUnaryFloat(op, operands, results);
  runUnary(op, ctx, mapOp, 0.0f, operands[0], results[0]);
}

/// An activation gradient `dx = op(dy, saved)`.
void runActivationGrad(std::string_view op, MapOp mapOp,
                       const Tensors &operands, const Tensors &results,
                       CudaContext &ctx) {
  checks::checkGradPair(op, operands, results, "saved");
  const TensorRef &gradOutput = operands[0], &saved = operands[1];
  const TensorRef &result = results[0];
  launchMap(op, ctx, mapOp, 0.0f, contiguousOperand(gradOutput),
            contiguousOperand(saved), result, flatShape(result.numel()),
            overlapsOtherThanReplaced(result, operands));
}
} // namespace

void launchConvert(std::string_view op, CudaContext &ctx, const TensorRef &from,
                   const TensorRef &to) {
  runUnary(op, ctx, MapOp::Copy, 0.0f, from, to);
}

void launchMultiCast(std::string_view op, CudaContext &ctx,
                     const CastEntry *entries, const MultiTensorChunk *chunks,
                     int64_t chunkCount) {
  if (chunkCount == 0)
    return;
  constexpr int kThreads = 256;
  castMultiKernel<<<gridFor(chunkCount, 1), kThreads, 0, ctx.stream()>>>(
      entries, chunks, chunkCount);
  checkLaunch(op);
}

void addKernel(const AttrMap &, const Tensors &operands, const Tensors &results,
               CudaContext &ctx) {
  runBinaryKernel("nn.add", MapOp::Add, operands, results, ctx);
}

void subKernel(const AttrMap &, const Tensors &operands, const Tensors &results,
               CudaContext &ctx) {
  runBinaryKernel("nn.sub", MapOp::Sub, operands, results, ctx);
}

void mulKernel(const AttrMap &, const Tensors &operands, const Tensors &results,
               CudaContext &ctx) {
  runBinaryKernel("nn.mul", MapOp::Mul, operands, results, ctx);
}

void divKernel(const AttrMap &, const Tensors &operands, const Tensors &results,
               CudaContext &ctx) {
  runBinaryKernel("nn.div", MapOp::Div, operands, results, ctx);
}

void biasAddKernel(const AttrMap &, const Tensors &operands,
                   const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.bias_add";
  checks::checkBiasAdd(op, operands, results);
  runBinary(op, ctx, MapOp::Add, operands[0], operands[1], results[0]);
}

void scaleKernel(const AttrMap &attrs, const Tensors &operands,
                 const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.scale";
  checks::checkUnaryFloat(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  auto factor = static_cast<float>(attrs.getFloat("factor"));
  runUnary(op, ctx, MapOp::Scale, factor, input, result);
}

void castKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results, CudaContext &ctx) {
  constexpr std::string_view op = "nn.cast";
  checks::checkUnaryFloat(op, operands, results);
  const TensorRef &input = operands[0], &result = results[0];
  if (input.dtype == result.dtype) {
    copyDeviceBytes(op, ctx, result.data, input.data, input.bytes());
    return;
  }
  runUnary(op, ctx, MapOp::Copy, 0.0f, input, result);
}

void reluKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results, CudaContext &ctx) {
  runActivation("nn.relu", MapOp::Relu, operands, results, ctx);
}

void geluKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results, CudaContext &ctx) {
  runActivation("nn.gelu", MapOp::Gelu, operands, results, ctx);
}

void tanhKernel(const AttrMap &, const Tensors &operands,
                const Tensors &results, CudaContext &ctx) {
  runActivation("nn.tanh", MapOp::Tanh, operands, results, ctx);
}

void reluGradKernel(const AttrMap &, const Tensors &operands,
                    const Tensors &results, CudaContext &ctx) {
  runActivationGrad("nn.relu_grad", MapOp::ReluGrad, operands, results, ctx);
}

void geluGradKernel(const AttrMap &, const Tensors &operands,
                    const Tensors &results, CudaContext &ctx) {
  runActivationGrad("nn.gelu_grad", MapOp::GeluGrad, operands, results, ctx);
}

void tanhGradKernel(const AttrMap &, const Tensors &operands,
                    const Tensors &results, CudaContext &ctx) {
  runActivationGrad("nn.tanh_grad", MapOp::TanhGrad, operands, results, ctx);
}

} // namespace zerosbp::runtime::gpu
