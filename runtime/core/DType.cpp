//===- DType.cpp - element types of plan tensors --------------------------===//

#include "runtime/core/DType.h"

#include <cmath>

namespace zerosbp::runtime {

std::optional<DType> parseDType(std::string_view name) {
  if (name == "f32")
    return DType::F32;
  if (name == "f16")
    return DType::F16;
  if (name == "bf16")
    return DType::BF16;
  if (name == "f64")
    return DType::F64;
  if (name == "i64")
    return DType::I64;
  if (name == "i32")
    return DType::I32;
  if (name == "i1")
    return DType::I1;
  if (name == "i8")
    return DType::I8;
  return std::nullopt;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  }
  return "?";
}

size_t dtypeBytes(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I1:
  case DType::I8:
    return 1;
  }
  return 0;
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t result;
  if (exponent == 0) {
    if (mantissa == 0) {
      result = sign;
    } else { // Subnormal: renormalize.
      float value = std::ldexp(static_cast<float>(mantissa), -24);
      std::memcpy(&result, &value, sizeof(result));
      result |= sign;
    }
  } else if (exponent == 31) {
    result = sign | 0x7f800000u | (mantissa << 13);
  } else {
    result = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &result, sizeof(value));
  return value;
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return sign | 0x7e00u;
  if (magnitude >= 0x477ff000u) // Rounds to or beyond 65520: infinity.
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) { // Below the smallest normal: subnormal.
    float absolute;
    std::memcpy(&absolute, &magnitude, sizeof(absolute));
    // nearbyint rounds to nearest even in the default rounding mode.
    return sign | static_cast<uint16_t>(std::nearbyint(absolute * 16777216.0f));
  }
  uint32_t roundingBias = 0xfffu + ((magnitude >> 13) & 1u);
  magnitude += roundingBias;
  return sign | static_cast<uint16_t>((magnitude - 0x38000000u) >> 13);
}

} // namespace zerosbp::runtime
