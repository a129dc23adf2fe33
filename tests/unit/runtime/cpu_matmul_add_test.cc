//===- cpu_matmul_add_test.cc - nn.matmul_add on the CPU ------------------===//
//
// nn.matmul_add (op(lhs) op(rhs) + addend, zero-fuse-accumulation's op):
// - against a float64 reference for every transpose combination: f32
//   results within (k + 2) 2^-24 (sum |a b| + |addend|), f16 and bf16 one
//   rounding to the storage type more;
// - in f32, bit for bit the unfused nn.matmul then nn.add (total + product);
// - written over its addend (the running total in place), the same bits as
//   into a separate result;
// - the checks' messages.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include "runtime/core/Error.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace zerosbp::runtime::test {
namespace {

using Shape = std::vector<int64_t>;

constexpr const char *kOp = "nn.matmul_add";

AttrMap transposes(bool transA, bool transB) {
  return makeAttrs({{"transpose_lhs", transA}, {"transpose_rhs", transB}});
}

double unitRoundoff(DType type) {
  switch (type) {
  case DType::BF16:
    return std::ldexp(1.0, -8);
  case DType::F16:
    return std::ldexp(1.0, -11);
  default:
    return std::ldexp(1.0, -24);
  }
}

struct Operands {
  Buffer lhs, rhs, addend;
};

Operands makeOperands(DType type, int64_t m, int64_t n, int64_t k, bool transA,
                      bool transB, unsigned seed) {
  return {randomTensor(type, transA ? Shape{k, m} : Shape{m, k}, seed),
          randomTensor(type, transB ? Shape{n, k} : Shape{k, n}, seed + 1),
          randomTensor(type, {m, n}, seed + 2, -4.0, 4.0)};
}

Buffer fused(const Operands &in, bool transA, bool transB, int64_t m,
             int64_t n) {
  Buffer result(in.lhs.ref.dtype, {m, n});
  std::memset(result.ref.data, 0x5a, result.ref.bytes());
  runKernel(kOp, transposes(transA, transB),
            {in.lhs.ref, in.rhs.ref, in.addend.ref}, {result.ref});
  return result;
}

TEST(CpuMatmulAdd, MatchesFloat64ReferenceEveryTranspose) {
  const int64_t m = 37, n = 29, k = 53;
  for (DType type : {DType::F32, DType::F16, DType::BF16})
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        Operands in = makeOperands(type, m, n, k, transA, transB, 11);
        std::vector<double> a = in.lhs.values(), b = in.rhs.values(),
                            c = in.addend.values();
        std::vector<double> got = fused(in, transA, transB, m, n).values();
        double u = unitRoundoff(type);
        int failures = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = c[i * n + j], magnitude = std::fabs(sum);
            for (int64_t p = 0; p < k; ++p) {
              double product = a[transA ? p * m + i : i * k + p] *
                               b[transB ? j * k + p : p * n + j];
              sum += product;
              magnitude += std::fabs(product);
            }
            // The f32 sum's error, then one rounding to the storage type.
            double bound = (k + 2) * std::ldexp(1.0, -24) * magnitude +
                           (type == DType::F32 ? 0.0 : u * std::fabs(sum));
            if (!(std::fabs(got[i * n + j] - sum) <= bound) && failures++ < 5)
              ADD_FAILURE()
                  << dtypeName(type) << " " << transA << transB << " element ("
                  << i << ", " << j << "): got " << got[i * n + j]
                  << ", expected " << sum << " within " << bound;
          }
        EXPECT_EQ(failures, 0);
      }
}

TEST(CpuMatmulAdd, F32EqualsMatmulThenAddBitForBit) {
  const int64_t m = 16, n = 24, k = 40;
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      Operands in = makeOperands(DType::F32, m, n, k, transA, transB, 5);
      Buffer product(DType::F32, {m, n}), sum(DType::F32, {m, n});
      runKernel("nn.matmul", transposes(transA, transB),
                {in.lhs.ref, in.rhs.ref}, {product.ref});
      runKernel("nn.add", {}, {in.addend.ref, product.ref}, {sum.ref});
      Buffer got = fused(in, transA, transB, m, n);
      EXPECT_EQ(std::memcmp(got.ref.data, sum.ref.data, sum.ref.bytes()), 0)
          << transA << transB;
    }
}

// The running total written over itself, as zero-memory-plan places it.
TEST(CpuMatmulAdd, InPlaceOverTheAddend) {
  const int64_t m = 12, n = 20, k = 32;
  for (DType type : {DType::F32, DType::BF16}) {
    Operands in = makeOperands(type, m, n, k, true, false, 7);
    Buffer separate = fused(in, true, false, m, n);
    runKernel(kOp, transposes(true, false),
              {in.lhs.ref, in.rhs.ref, in.addend.ref}, {in.addend.ref});
    EXPECT_EQ(std::memcmp(in.addend.ref.data, separate.ref.data,
                          separate.ref.bytes()),
              0)
        << dtypeName(type);
  }
}

std::string errorOf(const std::vector<TensorRef> &operands,
                    const std::vector<TensorRef> &results) {
  try {
    runKernel(kOp, transposes(false, false), operands, results);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(CpuMatmulAdd, ErrorMessages) {
  Buffer a = randomTensor(DType::F32, {4, 8}, 1),
         b = randomTensor(DType::F32, {8, 6}, 2),
         c = randomTensor(DType::F32, {4, 6}, 3),
         wrong = randomTensor(DType::F32, {6, 4}, 4),
         half = randomTensor(DType::BF16, {4, 6}, 5);
  Buffer result(DType::F32, {4, 6});
  EXPECT_EQ(errorOf({a.ref, b.ref, wrong.ref}, {result.ref}),
            "nn.matmul_add: addend has shape [6, 4], expected [4, 6]");
  EXPECT_EQ(errorOf({a.ref, b.ref, half.ref}, {result.ref}),
            "nn.matmul_add: addend has element type bf16, expected f32");
  EXPECT_EQ(errorOf({a.ref, b.ref, c.ref}, {a.ref}),
            "nn.matmul_add: result has shape [4, 8], expected [4, 6]");
  // A result over part of the addend (its second row onwards).
  Buffer big = randomTensor(DType::F32, {5, 6}, 6);
  TensorRef over = big.ref;
  over.data = static_cast<char *>(big.ref.data) + 6 * sizeof(float);
  over.shape = {4, 6};
  TensorRef addend = big.ref;
  addend.shape = {4, 6};
  EXPECT_EQ(errorOf({a.ref, b.ref, addend}, {over}),
            "nn.matmul_add: result overlaps the addend without being it");
}

} // namespace
} // namespace zerosbp::runtime::test
