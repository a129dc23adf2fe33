//===- DType.h - element types of plan tensors ------------------*- C++ -*-===//
//
// The element types a plan names, their sizes, and the fp16/bf16 <-> fp32
// conversions (round to nearest even) that every CPU kernel shares.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CORE_DTYPE_H
#define ZEROSBP_RUNTIME_CORE_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace zerosbp::runtime {

enum class DType { F32, F16, BF16, F64, I64, I32, I1, I8 };

/// `f32`, `f16`, `bf16`, `f64`, `i64`, `i32`, `i1`, `i8`; nullopt for other
/// text.
std::optional<DType> parseDType(std::string_view name);
const char *dtypeName(DType type);
/// Bytes per element: ceil(bits / 8).
size_t dtypeBytes(DType type);
inline bool isFloat(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 ||
         type == DType::F64;
}

inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

inline uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN stays a quiet NaN.
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CORE_DTYPE_H
