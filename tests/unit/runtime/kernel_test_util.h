//===- kernel_test_util.h - owning tensors and checks for kernel tests ----===//
//
// Host tensors that own their bytes, random contents, attributes and
// tolerances: what the CPU kernel tests and the CUDA kernel tests
// (tests/gpu/gpu_test_util.h) share.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_KERNEL_TEST_UTIL_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_KERNEL_TEST_UTIL_H

#include "runtime/core/AttrMap.h"
#include "runtime/core/DType.h"
#include "runtime/core/Tensor.h"
#include "runtime/kernels/Kernel.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime::test {

/// A tensor that owns its (8-byte aligned) bytes. Movable, not copyable:
/// `ref` points into the storage.
class Buffer {
public:
  Buffer(DType type, std::vector<int64_t> shape) {
    ref.dtype = type;
    ref.shape = std::move(shape);
    storage.assign((ref.bytes() + 7) / 8 + 1, 0);
    ref.data = storage.data();
  }
  Buffer(Buffer &&) = default;
  Buffer &operator=(Buffer &&) = default;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  Buffer clone() const {
    Buffer copy(ref.dtype, ref.shape);
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
    case DType::I8:
      return ref.as<int8_t>()[i];
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
    case DType::I8:
      ref.as<int8_t>()[i] = static_cast<int8_t>(value);
      return;
    }
  }

  std::vector<double> values() const {
    std::vector<double> out(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i)
      out[i] = get(i);
    return out;
  }

  TensorRef ref;

private:
  std::vector<uint64_t> storage;
};

inline Buffer makeTensor(DType type, std::vector<int64_t> shape,
                         const std::vector<double> &values) {
  Buffer buffer(type, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), buffer.numel());
  for (int64_t i = 0;
       i < buffer.numel() && i < static_cast<int64_t>(values.size()); ++i)
    buffer.set(i, values[i]);
  return buffer;
}

/// Uniform values in [low, high), deterministic for a seed.
inline Buffer randomTensor(DType type, std::vector<int64_t> shape,
                           unsigned seed, double low = -1.0,
                           double high = 1.0) {
  Buffer buffer(type, std::move(shape));
  std::mt19937 engine(seed);
  for (int64_t i = 0; i < buffer.numel(); ++i) {
    double unit = static_cast<double>(engine()) / 4294967296.0;
    buffer.set(i, low + (high - low) * unit);
  }
  return buffer;
}

/// Uniform integers in [0, bound), deterministic for a seed.
inline Buffer randomIndices(DType type, std::vector<int64_t> shape,
                            unsigned seed, int64_t bound) {
  Buffer buffer(type, std::move(shape));
  std::mt19937 engine(seed);
  for (int64_t i = 0; i < buffer.numel(); ++i)
    buffer.set(i, static_cast<double>(engine() % bound));
  return buffer;
}

inline AttrMap
makeAttrs(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  AttrMap attrs;
  for (const auto &[name, value] : entries)
    attrs.set(name, value);
  return attrs;
}

/// The summed cross-entropy of `labels.size()` rows of `classes` logits,
/// in double with the max subtracted: the reference the loss kernels (mean)
/// and their gradient checks compare against.
inline double crossEntropySum(const std::vector<double> &logits,
                              const std::vector<double> &labels,
                              int64_t classes) {
  double total = 0;
  for (size_t s = 0; s < labels.size(); ++s) {
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < classes; ++j)
      max = std::max(max, logits[s * classes + j]);
    for (int64_t j = 0; j < classes; ++j)
      sum += std::exp(logits[s * classes + j] - max);
    total += std::log(sum) + max -
             logits[s * classes + static_cast<int64_t>(labels[s])];
  }
  return total;
}

inline std::vector<int64_t> ints(std::initializer_list<int64_t> values) {
  return std::vector<int64_t>(values);
}

/// Runs the CPU kernel of `op`; fails the test when there is none.
inline void runKernel(std::string_view op, const AttrMap &attrs,
                      const std::vector<TensorRef> &operands,
                      const std::vector<TensorRef> &results) {
  KernelFn kernel = findCpuKernel(op);
  ASSERT_NE(kernel, nullptr) << "no CPU kernel for " << op;
  kernel(attrs, operands, results);
}

/// |actual - expected| <= atol + rtol |expected|, element by element.
inline void expectClose(const std::vector<double> &actual,
                        const std::vector<double> &expected, double atol,
                        double rtol, const std::string &what = "") {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double bound = atol + rtol * std::fabs(expected[i]);
    bool ok = std::fabs(actual[i] - expected[i]) <= bound ||
              (std::isnan(actual[i]) && std::isnan(expected[i])) ||
              (std::isinf(expected[i]) && actual[i] == expected[i]);
    if (!ok && failures++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << actual[i]
                    << ", expected " << expected[i];
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << actual.size()
                         << " elements differ";
}

/// Row-major strides of `shape`.
inline std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i > 1; --i)
    strides[i - 2] = strides[i - 1] * shape[i - 1];
  return strides;
}

inline int64_t productOf(const std::vector<int64_t> &shape) {
  int64_t product = 1;
  for (int64_t dim : shape)
    product *= dim;
  return product;
}

/// The multi-index of linear index `linear` in `shape`.
inline std::vector<int64_t> unravel(int64_t linear,
                                    const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d > 0; --d) {
    index[d - 1] = linear % shape[d - 1];
    linear /= shape[d - 1];
  }
  return index;
}

/// Central differences of `f` at `x`, in double.
inline std::vector<double>
numericGradient(const std::function<double(const std::vector<double> &)> &f,
                std::vector<double> x, double step = 1e-6) {
  std::vector<double> gradient(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + step;
    double plus = f(x);
    x[i] = saved - step;
    double minus = f(x);
    x[i] = saved;
    gradient[i] = (plus - minus) / (2 * step);
  }
  return gradient;
}

} // namespace zerosbp::runtime::test

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_KERNEL_TEST_UTIL_H
