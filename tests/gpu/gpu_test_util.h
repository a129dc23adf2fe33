//===- gpu_test_util.h - host and device tensors for CUDA kernel tests ----===//
//
// Owning host tensors with random contents, their device copies, the check
// that a CUDA device is usable, and the comparison that runs an op's CPU
// kernel on host memory and its CUDA kernel on device copies of the same
// inputs.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_GPU_GPU_TEST_UTIL_H
#define ZEROSBP_TESTS_GPU_GPU_TEST_UTIL_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/Tensor.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/kernels/Kernel.h"

#include "gtest/gtest.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime::gputest {

//===----------------------------------------------------------------------===//
// Host tensors
//===----------------------------------------------------------------------===//

/// A tensor that owns its (8-byte aligned) host bytes. Movable, not
/// copyable: `ref` points into the storage.
class HostTensor {
public:
  HostTensor(DType type, std::vector<int64_t> shape) {
    ref.dtype = type;
    ref.shape = std::move(shape);
    storage.assign((ref.bytes() + 7) / 8 + 1, 0);
    ref.data = storage.data();
  }
  HostTensor(HostTensor &&) = default;
  HostTensor &operator=(HostTensor &&) = default;
  HostTensor(const HostTensor &) = delete;
  HostTensor &operator=(const HostTensor &) = delete;

  HostTensor clone() const {
    HostTensor copy(ref.dtype, ref.shape);
    std::memcpy(copy.ref.data, ref.data, ref.bytes());
    return copy;
  }

  int64_t numel() const { return ref.numel(); }

  /// Element i as a double (floats widened, integers converted).
  double get(int64_t i) const {
    switch (ref.dtype) {
    case DType::F32:
      return ref.as<float>()[i];
    case DType::F16:
      return halfToFloat(ref.as<uint16_t>()[i]);
    case DType::BF16:
      return bf16ToFloat(ref.as<uint16_t>()[i]);
    case DType::F64:
      return ref.as<double>()[i];
    case DType::I64:
      return static_cast<double>(ref.as<int64_t>()[i]);
    case DType::I32:
      return ref.as<int32_t>()[i];
    case DType::I1:
      return ref.as<uint8_t>()[i];
    }
    return 0;
  }

  /// Stores `value` as element i, rounding to nearest even.
  void set(int64_t i, double value) {
    switch (ref.dtype) {
    case DType::F32:
      ref.as<float>()[i] = static_cast<float>(value);
      return;
    case DType::F16:
      ref.as<uint16_t>()[i] = floatToHalf(static_cast<float>(value));
      return;
    case DType::BF16:
      ref.as<uint16_t>()[i] = floatToBf16(static_cast<float>(value));
      return;
    case DType::F64:
      ref.as<double>()[i] = value;
      return;
    case DType::I64:
      ref.as<int64_t>()[i] = static_cast<int64_t>(value);
      return;
    case DType::I32:
      ref.as<int32_t>()[i] = static_cast<int32_t>(value);
      return;
    case DType::I1:
      ref.as<uint8_t>()[i] = value != 0;
      return;
    }
  }

  TensorRef ref;

private:
  std::vector<uint64_t> storage;
};

inline HostTensor makeTensor(DType type, std::vector<int64_t> shape,
                             const std::vector<double> &values) {
  HostTensor tensor(type, std::move(shape));
  if (static_cast<int64_t>(values.size()) != tensor.numel())
    throw std::invalid_argument("makeTensor: wrong number of values");
  for (int64_t i = 0; i < tensor.numel(); ++i)
    tensor.set(i, values[i]);
  return tensor;
}

/// Uniform values in [low, high), deterministic for a seed.
inline HostTensor randomTensor(DType type, std::vector<int64_t> shape,
                               unsigned seed, double low = -1.0,
                               double high = 1.0) {
  HostTensor tensor(type, std::move(shape));
  std::mt19937 engine(seed);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    double unit = static_cast<double>(engine()) / 4294967296.0;
    tensor.set(i, low + (high - low) * unit);
  }
  return tensor;
}

/// Uniform integers in [0, bound), deterministic for a seed.
inline HostTensor randomIndices(DType type, std::vector<int64_t> shape,
                                unsigned seed, int64_t bound) {
  HostTensor tensor(type, std::move(shape));
  std::mt19937 engine(seed);
  for (int64_t i = 0; i < tensor.numel(); ++i)
    tensor.set(i, static_cast<double>(engine() % bound));
  return tensor;
}

inline AttrMap
makeAttrs(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  AttrMap attrs;
  for (const auto &[name, value] : entries)
    attrs.set(name, value);
  return attrs;
}

inline std::vector<int64_t> ints(std::initializer_list<int64_t> values) {
  return std::vector<int64_t>(values);
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

/// Empty when a CUDA device is usable, else why not (the CUDA error).
inline std::string noDeviceReason() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    return cudaGetErrorString(status);
  if (count == 0)
    return "cudaGetDeviceCount found 0 devices";
  return "";
}

/// Every test of a fixture derived from this skips itself on a machine
/// without a usable CUDA device.
class CudaDeviceTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string reason = noDeviceReason();
    if (!reason.empty())
      GTEST_SKIP() << "no CUDA device: " << reason;
  }
};

inline void checkCudaCall(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(status));
}

/// A device copy of a host tensor; `ref.data` is device memory.
class DeviceTensor {
public:
  explicit DeviceTensor(const HostTensor &host) : ref(host.ref) {
    ref.data = nullptr;
    // At least one byte, so that every tensor has its own address.
    checkCudaCall(cudaMalloc(&ref.data, host.ref.bytes() + 8), "cudaMalloc");
    checkCudaCall(cudaMemcpy(ref.data, host.ref.data, host.ref.bytes(),
                             cudaMemcpyHostToDevice),
                  "cudaMemcpy to the device");
  }
  ~DeviceTensor() { (void)cudaFree(ref.data); }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;

  /// The device bytes as a host tensor of `type` and `shape`.
  HostTensor toHost(DType type, std::vector<int64_t> shape) const {
    HostTensor host(type, std::move(shape));
    checkCudaCall(cudaMemcpy(host.ref.data, ref.data, host.ref.bytes(),
                             cudaMemcpyDeviceToHost),
                  "cudaMemcpy to the host");
    return host;
  }
  HostTensor toHost() const { return toHost(ref.dtype, ref.shape); }

  TensorRef ref;
};

//===----------------------------------------------------------------------===//
// CPU against CUDA
//===----------------------------------------------------------------------===//

/// A result of the op: a new tensor, or, with `alias` >= 0, the bytes of
/// operand `alias` (in place) seen with this type and shape.
struct ResultSpec {
  DType type;
  std::vector<int64_t> shape;
  int alias = -1;
};

/// |cuda - cpu| <= atol + rtol |cpu| for f32 results. f16 and bf16 results
/// are allowed at least one unit in their last place (2^-10 and 2^-7 of
/// the value): both sides compute in f32 and round once, and an f32
/// difference can flip that rounding. With `bits`, results must be equal
/// byte for byte.
struct Tolerance {
  double atol = 1e-6;
  double rtol = 1e-5;
  bool bits = false;
};

inline Tolerance exactBits() {
  Tolerance tolerance;
  tolerance.bits = true;
  return tolerance;
}

/// Fills a result before the kernels run, the same on both sides, so that
/// an element one side leaves unwritten shows up.
constexpr unsigned char kUnwrittenByte = 0x5a;

/// Expects two tensors of the same type and shape to agree.
inline void expectAgree(const HostTensor &cuda, const HostTensor &cpu,
                        Tolerance tolerance, const std::string &what) {
  ASSERT_EQ(cuda.ref.shape, cpu.ref.shape) << what;
  if (tolerance.bits) {
    int differing = 0;
    const auto *a = static_cast<const unsigned char *>(cuda.ref.data);
    const auto *b = static_cast<const unsigned char *>(cpu.ref.data);
    size_t elementBytes = dtypeBytes(cpu.ref.dtype);
    for (int64_t i = 0; i < cpu.numel(); ++i)
      if (std::memcmp(a + i * elementBytes, b + i * elementBytes,
                      elementBytes) != 0 &&
          differing++ < 5)
        ADD_FAILURE() << what << " element " << i << ": CUDA " << cuda.get(i)
                      << ", CPU " << cpu.get(i) << " (bits differ)";
    EXPECT_EQ(differing, 0) << what;
    return;
  }
  double rtol = tolerance.rtol;
  if (cpu.ref.dtype == DType::BF16)
    rtol = std::max(rtol, 1.0 / 128);
  if (cpu.ref.dtype == DType::F16)
    rtol = std::max(rtol, 1.0 / 1024);
  int failures = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double expected = cpu.get(i), actual = cuda.get(i);
    bool ok = std::fabs(actual - expected) <=
                  tolerance.atol + rtol * std::fabs(expected) ||
              (std::isnan(actual) && std::isnan(expected)) ||
              (std::isinf(expected) && actual == expected);
    if (!ok && failures++ < 5)
      ADD_FAILURE() << what << " element " << i << ": CUDA " << actual
                    << ", CPU " << expected;
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << cpu.numel()
                         << " elements differ";
}

/// Runs `op`'s CPU kernel on copies of `operands` and its CUDA kernel on
/// device copies, and expects every result to agree.
inline void expectMatchesCpu(std::string_view op, const AttrMap &attrs,
                             const std::vector<const HostTensor *> &operands,
                             const std::vector<ResultSpec> &results,
                             Tolerance tolerance = {},
                             const std::string &what = "") {
  std::string label = std::string(op) + (what.empty() ? "" : " " + what);
  KernelFn cpuKernel = findCpuKernel(op);
  CudaKernelFn cudaKernel = findCudaKernel(op);
  ASSERT_NE(cpuKernel, nullptr) << op;
  ASSERT_NE(cudaKernel, nullptr) << op;

  std::vector<HostTensor> cpuOperands;
  std::vector<std::unique_ptr<DeviceTensor>> deviceOperands;
  for (const HostTensor *operand : operands) {
    cpuOperands.push_back(operand->clone());
    deviceOperands.push_back(std::make_unique<DeviceTensor>(*operand));
  }
  std::vector<HostTensor> cpuResults;
  std::vector<std::unique_ptr<DeviceTensor>> deviceResults;
  std::vector<TensorRef> cpuOperandRefs, deviceOperandRefs, cpuResultRefs,
      deviceResultRefs;
  for (size_t k = 0; k < operands.size(); ++k) {
    cpuOperandRefs.push_back(cpuOperands[k].ref);
    deviceOperandRefs.push_back(deviceOperands[k]->ref);
  }
  for (const ResultSpec &spec : results) {
    if (spec.alias >= 0) {
      TensorRef cpuRef = cpuOperands[spec.alias].ref;
      TensorRef deviceRef = deviceOperands[spec.alias]->ref;
      cpuRef.dtype = deviceRef.dtype = spec.type;
      cpuRef.shape = deviceRef.shape = spec.shape;
      cpuResultRefs.push_back(cpuRef);
      deviceResultRefs.push_back(deviceRef);
      cpuResults.emplace_back(DType::I1, std::vector<int64_t>{0});
      deviceResults.push_back(nullptr);
      continue;
    }
    HostTensor fresh(spec.type, spec.shape);
    std::memset(fresh.ref.data, kUnwrittenByte, fresh.ref.bytes());
    deviceResults.push_back(std::make_unique<DeviceTensor>(fresh));
    cpuResults.push_back(std::move(fresh));
    cpuResultRefs.push_back(cpuResults.back().ref);
    deviceResultRefs.push_back(deviceResults.back()->ref);
  }

  cpuKernel(attrs, cpuOperandRefs, cpuResultRefs);
  CudaContext ctx;
  cudaKernel(attrs, deviceOperandRefs, deviceResultRefs, ctx);
  ctx.checkDeviceErrors();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << label;

  for (size_t k = 0; k < results.size(); ++k) {
    const ResultSpec &spec = results[k];
    std::string name = label + " result " + std::to_string(k);
    if (spec.alias >= 0) {
      HostTensor cpu(spec.type, spec.shape);
      std::memcpy(cpu.ref.data, cpuOperands[spec.alias].ref.data,
                  cpu.ref.bytes());
      expectAgree(deviceOperands[spec.alias]->toHost(spec.type, spec.shape),
                  cpu, tolerance, name + " (in place)");
    } else {
      expectAgree(deviceResults[k]->toHost(), cpuResults[k], tolerance, name);
    }
  }
}

/// Runs both kernels, expecting each to throw RuntimeError with the same
/// message; returns it.
inline std::string expectSameError(std::string_view op, const AttrMap &attrs,
                                   const std::vector<TensorRef> &cpuOperands,
                                   const std::vector<TensorRef> &cpuResults,
                                   const std::vector<TensorRef> &cudaOperands,
                                   const std::vector<TensorRef> &cudaResults,
                                   CudaContext &ctx) {
  std::string cpuMessage = "(no error)", cudaMessage = "(no error)";
  try {
    findCpuKernel(op)(attrs, cpuOperands, cpuResults);
  } catch (const RuntimeError &error) {
    cpuMessage = error.what();
  }
  try {
    findCudaKernel(op)(attrs, cudaOperands, cudaResults, ctx);
  } catch (const RuntimeError &error) {
    cudaMessage = error.what();
  }
  EXPECT_NE(cpuMessage, "(no error)") << op;
  EXPECT_EQ(cudaMessage, cpuMessage) << op;
  return cpuMessage;
}

} // namespace zerosbp::runtime::gputest

#endif // ZEROSBP_TESTS_GPU_GPU_TEST_UTIL_H
