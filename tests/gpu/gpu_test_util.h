//===- gpu_test_util.h - host and device tensors for CUDA kernel tests ----===//
//
// Device copies of the CPU kernel tests' host tensors
// (tests/unit/runtime/kernel_test_util.h), the check that a CUDA device is
// usable, and the comparison that runs an op's CPU kernel on host memory and
// its CUDA kernel on device copies of the same inputs.
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
#include "tests/unit/runtime/kernel_test_util.h"

#include "gtest/gtest.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime::gputest {

// Host tensors, their contents and attributes are the CPU kernel tests'.
using HostTensor = test::Buffer;
using test::ints;
using test::makeAttrs;
using test::makeTensor;
using test::randomIndices;
using test::randomTensor;

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

/// A CUDA stream of the test's own, destroyed with it.
class Stream {
public:
  Stream() { checkCudaCall(cudaStreamCreate(&stream), "cudaStreamCreate"); }
  ~Stream() { (void)cudaStreamDestroy(stream); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  void sync() { checkCudaCall(cudaStreamSynchronize(stream), "sync"); }
  cudaStream_t stream = nullptr;
};

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
  test::expectClose(cuda.values(), cpu.values(), tolerance.atol, rtol, what);
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

/// Both kernels on the same host tensors (no device is touched): each
/// refuses the call with the same message, one line; returns it.
inline std::string
expectRejected(std::string_view op, const AttrMap &attrs,
               const std::vector<const HostTensor *> &operands,
               const std::vector<const HostTensor *> &results) {
  std::vector<TensorRef> operandRefs, resultRefs;
  for (const HostTensor *tensor : operands)
    operandRefs.push_back(tensor->ref);
  for (const HostTensor *tensor : results)
    resultRefs.push_back(tensor->ref);
  CudaContext ctx;
  std::string message = expectSameError(op, attrs, operandRefs, resultRefs,
                                        operandRefs, resultRefs, ctx);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

/// expectRejected, for a kernel whose checks begin each message with its
/// op's name.
inline void
expectRejectedNamingOp(std::string_view op, const AttrMap &attrs,
                       const std::vector<const HostTensor *> &operands,
                       const std::vector<const HostTensor *> &results) {
  std::string message = expectRejected(op, attrs, operands, results);
  EXPECT_EQ(message.rfind(std::string(op) + ": ", 0), 0u) << message;
}

} // namespace zerosbp::runtime::gputest

#endif // ZEROSBP_TESTS_GPU_GPU_TEST_UTIL_H
