//===- Support.cpp - checks and conversions the CPU kernels share ---------===//

#include "runtime/kernels/cpu/Support.h"

#include <cstdint>

namespace zerosbp::runtime::cpu {

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

void widen(const TensorRef &tensor, int64_t begin, int64_t count, float *out) {
  switch (tensor.dtype) {
  case DType::F32:
    std::memcpy(out, tensor.as<const float>() + begin,
                static_cast<size_t>(count) * sizeof(float));
    return;
  case DType::BF16: {
    const uint16_t *in = tensor.as<const uint16_t>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = bf16ToFloat(in[i]);
    return;
  }
  case DType::F16: {
    const uint16_t *in = tensor.as<const uint16_t>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = halfToFloat(in[i]);
    return;
  }
  case DType::F64: {
    const double *in = tensor.as<const double>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<float>(in[i]);
    return;
  }
  default:
    throw RuntimeError(std::string("cannot read ") + dtypeName(tensor.dtype) +
                       " as a float");
  }
}

void narrow(const float *values, int64_t count, const TensorRef &tensor,
            int64_t begin) {
  switch (tensor.dtype) {
  case DType::F32:
    std::memcpy(tensor.as<float>() + begin, values,
                static_cast<size_t>(count) * sizeof(float));
    return;
  case DType::BF16: {
    uint16_t *out = tensor.as<uint16_t>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = floatToBf16(values[i]);
    return;
  }
  case DType::F16: {
    uint16_t *out = tensor.as<uint16_t>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = floatToHalf(values[i]);
    return;
  }
  case DType::F64: {
    double *out = tensor.as<double>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = values[i];
    return;
  }
  default:
    throw RuntimeError(std::string("cannot store a float as ") +
                       dtypeName(tensor.dtype));
  }
}

float readScalar(const TensorRef &tensor) {
  float value;
  widen(tensor, 0, 1, &value);
  return value;
}

int64_t readInteger(const TensorRef &tensor) {
  switch (tensor.dtype) {
  case DType::I64:
    return *tensor.as<const int64_t>();
  case DType::I32:
    return *tensor.as<const int32_t>();
  case DType::I8:
    return *tensor.as<const int8_t>();
  default:
    return static_cast<int64_t>(readScalar(tensor));
  }
}

void writeScalar(const TensorRef &tensor, float value) {
  narrow(&value, 1, tensor, 0);
}

std::vector<int64_t> readIndices(const TensorRef &tensor) {
  int64_t count = tensor.numel();
  std::vector<int64_t> indices(static_cast<size_t>(count));
  if (tensor.dtype == DType::I64) {
    std::memcpy(indices.data(), tensor.data,
                static_cast<size_t>(count) * sizeof(int64_t));
  } else {
    const int32_t *in = tensor.as<const int32_t>();
    for (int64_t i = 0; i < count; ++i)
      indices[i] = in[i];
  }
  return indices;
}

FloatInput::FloatInput(const TensorRef &tensor) {
  if (tensor.dtype == DType::F32) {
    pointer = tensor.as<const float>();
    return;
  }
  storage.resize(static_cast<size_t>(tensor.numel()));
  widen(tensor, 0, tensor.numel(), storage.data());
  pointer = storage.data();
}

FloatOutput::FloatOutput(const TensorRef &tensor, bool separate)
    : tensor(tensor) {
  if (tensor.dtype == DType::F32 && !separate) {
    pointer = tensor.as<float>();
    return;
  }
  storage.resize(static_cast<size_t>(tensor.numel()));
  pointer = storage.data();
}

void FloatOutput::finish() {
  if (pointer != storage.data() || storage.empty())
    return;
  narrow(storage.data(), tensor.numel(), tensor, 0);
}

ByteOutput::ByteOutput(const TensorRef &tensor, bool separate)
    : tensor(tensor) {
  if (!separate) {
    pointer = static_cast<char *>(tensor.data);
    return;
  }
  storage.resize(tensor.bytes());
  pointer = storage.data();
}

void ByteOutput::finish() {
  if (pointer != storage.data() || storage.empty())
    return;
  std::memcpy(tensor.data, storage.data(), storage.size());
}

} // namespace zerosbp::runtime::cpu
