//===- cpu_quantize_kernel_test.cc - block quantization on the CPU --------===//
//
// nn.quantize and nn.dequantize against a float64 reference of the same
// block quantization (runtime/kernels/BlockQuantize.h): per block of
// `block_size` elements the scale is amax / L, L = 2^(bits-1) - 1, and the
// code rint(x / scale) in [-L, L]. Checked:
//
// - every scale equals float(amax / L) computed in double (the f32 division
//   of an f32 by L is correctly rounded, and double rounding of a quotient
//   to f32 through a 53-bit double is exact);
// - every code equals the reference's, but where x / scale lies within
//   1e-4 of a half (the f32 product may round either way), where it is
//   one off at most;
// - dequantized, every element is within scale / 2 (plus f32 rounding) of
//   x: the bound the block size and bit width give;
// - a block of zeros has scale 0, codes 0 and dequantizes to 0; a NaN or an
//   infinity makes its block's scale non-finite and its elements NaN, and
//   leaves the other blocks alone;
// - 4-bit codes are packed two per byte, element 2k in the low nibble, by
//   hand on a small example;
// - the checks' messages.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include "runtime/core/Error.h"

#include <cmath>
#include <limits>

namespace zerosbp::runtime::test {
namespace {

struct Quantized {
  Buffer codes, scales;
};

int64_t codeBytes(int64_t count, int bits) { return (count * bits + 7) / 8; }

Quantized quantize(const Buffer &x, int64_t block, int bits) {
  int64_t count = x.numel();
  Quantized out{Buffer(DType::I8, {codeBytes(count, bits)}),
                Buffer(DType::F32, {(count + block - 1) / block})};
  runKernel("nn.quantize", makeAttrs({{"block_size", block}, {"bits", bits}}),
            {x.ref}, {out.codes.ref, out.scales.ref});
  return out;
}

Buffer dequantize(const Quantized &q, DType type, std::vector<int64_t> shape,
                  int64_t block, int bits) {
  Buffer y(type, std::move(shape));
  runKernel("nn.dequantize", makeAttrs({{"block_size", block}, {"bits", bits}}),
            {q.codes.ref, q.scales.ref}, {y.ref});
  return y;
}

/// Code `i` as the reference reads a packed buffer.
int codeAt(const Buffer &codes, int64_t i, int bits) {
  const auto *bytes = codes.ref.as<int8_t>();
  if (bits == 8)
    return bytes[i];
  int nibble = (static_cast<uint8_t>(bytes[i / 2]) >> (4 * (i % 2))) & 0xF;
  return nibble >= 8 ? nibble - 16 : nibble;
}

double roundHalfEven(double value) {
  double floor = std::floor(value), fraction = value - floor;
  if (fraction != 0.5)
    return std::round(value);
  return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
}

void checkAgainstReference(const Buffer &x, int64_t block, int bits,
                           DType resultType) {
  SCOPED_TRACE("block " + std::to_string(block) + ", " + std::to_string(bits) +
               " bits, " + dtypeName(x.ref.dtype) + " -> " +
               dtypeName(resultType));
  Quantized q = quantize(x, block, bits);
  Buffer y = dequantize(q, resultType, x.ref.shape, block, bits);
  double levels = (1 << (bits - 1)) - 1;
  int64_t count = x.numel();
  int failures = 0;
  for (int64_t b = 0; b * block < count; ++b) {
    int64_t begin = b * block, end = std::min(count, begin + block);
    double amax = 0;
    for (int64_t i = begin; i < end; ++i)
      amax = std::max(amax, std::fabs(x.get(i)));
    double scale = amax / levels;
    ASSERT_EQ(q.scales.get(b), static_cast<double>(static_cast<float>(scale)))
        << "scale of block " << b;
    for (int64_t i = begin; i < end; ++i) {
      double exact = amax > 0 ? x.get(i) / scale : 0;
      double reference = roundHalfEven(exact);
      int code = codeAt(q.codes, i, bits);
      bool nearHalf =
          std::fabs(std::fabs(exact - std::floor(exact)) - 0.5) < 1e-4;
      double allowed = nearHalf ? 1 : 0;
      if (std::fabs(code - reference) > allowed && failures++ < 5)
        ADD_FAILURE() << "element " << i << ": code " << code << ", reference "
                      << reference << " (x / scale " << exact << ")";
      // Within half a step, plus the f32 roundings of x * factor, of
      // q * scale and, for bf16, of the result.
      double tolerance = scale / 2 * (1 + 1e-5) + 1e-6 * std::fabs(x.get(i));
      if (resultType == DType::BF16)
        tolerance += std::fabs(x.get(i)) * std::ldexp(1.0, -8) + scale;
      if (std::fabs(y.get(i) - x.get(i)) > tolerance && failures++ < 5)
        ADD_FAILURE() << "element " << i << ": dequantized " << y.get(i)
                      << ", x " << x.get(i) << ", scale " << scale;
    }
  }
}

TEST(QuantizeKernel, MatchesTheFloat64Reference) {
  unsigned seed = 1;
  for (int bits : {8, 4})
    for (int64_t block : {1, 3, 64, 100, 2048})
      for (DType type : {DType::F32, DType::BF16}) {
        if (bits == 4 && block % 2)
          continue; // Refused: see RefusesBadAttributesAndBuffers.
        // 4099 elements: a last block shorter than the others, and an odd
        // count at 4 bits.
        Buffer x = randomTensor(type, {4099}, seed++, -3.0, 2.0);
        checkAgainstReference(x, block, bits, type);
        checkAgainstReference(x, block, bits, DType::F32);
      }
}

TEST(QuantizeKernel, ValuesOfVeryDifferentMagnitudes) {
  // Each block's scale follows its own largest magnitude.
  Buffer x(DType::F32, {256});
  for (int64_t i = 0; i < 256; ++i)
    x.set(i,
          std::ldexp(1.0 + (i % 7) / 8.0, static_cast<int>(i / 32) * 9 - 30) *
              (i % 3 == 0 ? -1 : 1));
  for (int bits : {8, 4})
    checkAgainstReference(x, 32, bits, DType::F32);
}

TEST(QuantizeKernel, ZeroAndNonFiniteBlocks) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Buffer x =
      makeTensor(DType::F32, {12}, {0, 0, 0, 0, 1, nan, -2, 3, 4, -inf, 5, 6});
  for (int bits : {8, 4}) {
    Quantized q = quantize(x, 4, bits);
    EXPECT_EQ(q.scales.get(0), 0.0);
    EXPECT_TRUE(std::isnan(q.scales.get(1)));
    EXPECT_TRUE(std::isinf(q.scales.get(2)));
    Buffer y = dequantize(q, DType::F32, {12}, 4, bits);
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(codeAt(q.codes, i, bits), 0);
      EXPECT_EQ(y.get(i), 0.0);
    }
    for (int64_t i = 4; i < 12; ++i)
      EXPECT_TRUE(std::isnan(y.get(i))) << i << " at " << bits << " bits";
  }
}

TEST(QuantizeKernel, FourBitCodesPackTwoPerByte) {
  // amax 7: the factor is 1 and the codes are the values rounded half to
  // even: 7, -7, 2 (2.5), -4 (-3.5), 1, 0 (0.49), -1 (one element over).
  Buffer x = makeTensor(DType::F32, {7}, {7, -7, 2.5, -3.5, 1, 0.49, -1});
  Quantized q = quantize(x, 8, 4);
  ASSERT_EQ(q.codes.numel(), 4);
  const auto *bytes = q.codes.ref.as<uint8_t>();
  EXPECT_EQ(bytes[0], 0x97);      // 7 low, -7 (0x9) high.
  EXPECT_EQ(bytes[1], 0xC2);      // 2 low, -4 (0xC) high.
  EXPECT_EQ(bytes[2], 0x01);      // 1 low, 0 high.
  EXPECT_EQ(bytes[3] & 0xF, 0xF); // -1 low.
  EXPECT_EQ(q.scales.get(0), 1.0);
}

TEST(QuantizeKernel, DequantizedValuesQuantizeToTheSameCodes) {
  Buffer x = randomTensor(DType::F32, {1000}, 99, -1.0, 1.0);
  for (int bits : {8, 4}) {
    Quantized q = quantize(x, 50, bits);
    Buffer y = dequantize(q, DType::F32, {1000}, 50, bits);
    Quantized again = quantize(y, 50, bits);
    EXPECT_EQ(q.codes.values(), again.codes.values()) << bits;
    EXPECT_EQ(q.scales.values(), again.scales.values()) << bits;
  }
}

std::string errorOf(const std::function<void()> &call) {
  try {
    call();
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(QuantizeKernel, RefusesBadAttributesAndBuffers) {
  Buffer x = randomTensor(DType::F32, {10}, 3);
  Buffer codes(DType::I8, {10}), scales(DType::F32, {5});
  KernelFn quantizeFn = findCpuKernel("nn.quantize");
  ASSERT_NE(quantizeFn, nullptr);
  auto run = [&](const AttrMap &attrs, const TensorRef &c, const TensorRef &s) {
    return errorOf([&] { quantizeFn(attrs, {x.ref}, {c, s}); });
  };
  EXPECT_EQ(run(makeAttrs({{"block_size", int64_t{0}}}), codes.ref, scales.ref),
            "nn.quantize: block_size must be at least 1, got 0");
  EXPECT_EQ(run(makeAttrs({{"block_size", int64_t{2}}, {"bits", int64_t{5}}}),
                codes.ref, scales.ref),
            "nn.quantize: bits must be 8 or 4, got 5");
  EXPECT_EQ(run(makeAttrs({{"block_size", int64_t{3}}, {"bits", int64_t{4}}}),
                codes.ref, scales.ref),
            "nn.quantize: 4-bit codes need an even block_size, got 3");
  Buffer wide(DType::I32, {10});
  EXPECT_EQ(run(makeAttrs({{"block_size", int64_t{2}}}), wide.ref, scales.ref),
            "nn.quantize: codes have element type i32, expected i8");
  Buffer few(DType::F32, {4});
  EXPECT_NE(run(makeAttrs({{"block_size", int64_t{2}}}), codes.ref, few.ref)
                .find("scales"),
            std::string::npos);
  EXPECT_EQ(run(makeAttrs({{"block_size", int64_t{2}}}), codes.ref, scales.ref),
            "(no error)");
}

} // namespace
} // namespace zerosbp::runtime::test
