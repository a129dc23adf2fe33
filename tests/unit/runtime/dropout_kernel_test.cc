//===- dropout_kernel_test.cc - Philox4x32-10 and the dropout kernel ------===//
//
// The generator against Random123's known-answer vectors, and the kernel
// against masks computed by an independent NumPy Philox (the words below),
// on a whole tensor and on a shard of it (docs/compiler.md, "Dropout").
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/kernel_test_util.h"

#include "runtime/core/Error.h"
#include "runtime/kernels/Philox.h"

namespace zerosbp::runtime::test {
namespace {

using philox::Counter;
using philox::Key;

void expectPhilox(Counter ctr, Key key, Counter expected) {
  Counter out = philox::philox4x32_10(ctr, key);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out.v[i], expected.v[i]) << "word " << i;
}

// Random123 1.14, kat_vectors: philox4x32 10.
TEST(Philox, KnownAnswers) {
  expectPhilox({{0, 0, 0, 0}}, {{0, 0}},
               {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
  expectPhilox({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
               {{0xffffffff, 0xffffffff}},
               {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
  expectPhilox({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
               {{0xa4093822, 0x299f31d0}},
               {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

constexpr int64_t kSeed = 0x0123456789abcdefLL;

// Word 0 for global indices 12..23 with seed kSeed, step 3, stream 2 and
// micro-batch 1 (NumPy, uint64 arithmetic).
constexpr uint32_t kWords[] = {0x1ea77228, 0x8dfb1af6, 0x3b8ac93e, 0x5ba5ec14,
                               0x5b36a785, 0xe981ec39, 0x8d6514d0, 0x3f446b6d,
                               0x9f293ea9, 0xaeb50f09, 0x54b45dde, 0xafb883c6};

TEST(Philox, DropoutCounter) {
  philox::DropoutStream stream{
      {{static_cast<uint32_t>(kSeed), static_cast<uint32_t>(kSeed >> 32)}},
      /*microBatch=*/1,
      /*stream=*/2,
      /*threshold=*/1u << 22};
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(philox::dropoutBits(stream, 12 + i, 3), kWords[i]) << i;
  // The step enters as its low 32 bits.
  EXPECT_EQ(philox::dropoutBits(stream, 12, 3 + (int64_t(1) << 32)), kWords[0]);
}

AttrMap dropoutAttrs(double p, int64_t microBatch) {
  return makeAttrs({{"p", p},
                    {"seed", kSeed},
                    {"stream", int64_t(2)},
                    {"micro_batch", microBatch}});
}

/// x * float(1 / (1 - p)) in f32 where kept, else 0.
std::vector<double> expected(const Buffer &x, const std::vector<int> &keep,
                             double p) {
  auto scale = static_cast<float>(1.0 / (1.0 - p));
  std::vector<double> out;
  for (int64_t i = 0; i < x.numel(); ++i)
    out.push_back(keep[i] ? static_cast<float>(x.get(i)) * scale : 0.0);
  return out;
}

// Rows 2-3 of a 4x6 tensor: global indices 12..23. With p = 0.25, element
// i is kept iff (word >> 8) 2^-24 >= 0.25.
TEST(DropoutKernel, ShardOfTheGlobalTensor) {
  const std::vector<int> keep = {0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1};
  for (DType type : {DType::F32, DType::BF16, DType::F16}) {
    Buffer x = randomTensor(type, {2, 6}, 7);
    Buffer step = makeTensor(DType::I64, {}, {3});
    Buffer y(type, {2, 6});
    AttrMap attrs = dropoutAttrs(0.25, 1);
    attrs.set("global_shape", ints({4, 6}));
    attrs.set("shard_offsets", ints({2, 0}));
    runKernel("nn.dropout", attrs, {x.ref, step.ref}, {y.ref});
    Buffer want = makeTensor(type, {2, 6}, expected(x, keep, 0.25));
    EXPECT_EQ(y.values(), want.values()) << dtypeName(type);
  }
}

// The same elements seen as columns: a 12x4 global tensor split on dim 1
// holds global index 4 r + c at local (r, c - 2) for its columns 2-3.
TEST(DropoutKernel, ColumnShard) {
  Buffer x = randomTensor(DType::F32, {12, 2}, 3);
  Buffer step = makeTensor(DType::I64, {}, {3});
  Buffer y(DType::F32, {12, 2});
  AttrMap attrs = dropoutAttrs(0.25, 1);
  attrs.set("global_shape", ints({12, 4}));
  attrs.set("shard_offsets", ints({0, 2}));
  runKernel("nn.dropout", attrs, {x.ref, step.ref}, {y.ref});
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t c = 0; c < 2; ++c) {
      int64_t global = 4 * r + c + 2;
      double want = 0;
      if (global >= 12 && global < 24) {
        bool keep = (kWords[global - 12] >> 8) >= (1u << 22);
        want = keep ? static_cast<float>(x.get(2 * r + c)) * (4.0f / 3.0f) : 0;
      } else {
        continue; // Outside the words above.
      }
      EXPECT_EQ(y.get(2 * r + c), want) << r << ", " << c;
    }
}

// Every split gives the whole tensor's mask: two halves of rows equal the
// whole, and so does a result written over its input.
TEST(DropoutKernel, ShardsAgreeWithTheWhole) {
  Buffer x = randomTensor(DType::F32, {6, 10}, 11);
  Buffer step = makeTensor(DType::I64, {}, {17});
  Buffer whole(DType::F32, {6, 10});
  runKernel("nn.dropout", dropoutAttrs(0.5, 0), {x.ref, step.ref}, {whole.ref});
  for (int64_t part = 0; part < 2; ++part) {
    Buffer half(DType::F32, {3, 10});
    std::memcpy(half.ref.data, x.ref.as<float>() + 30 * part,
                30 * sizeof(float));
    AttrMap attrs = dropoutAttrs(0.5, 0);
    attrs.set("global_shape", ints({6, 10}));
    attrs.set("shard_offsets", ints({3 * part, 0}));
    runKernel("nn.dropout", attrs, {half.ref, step.ref}, {half.ref});
    for (int64_t i = 0; i < 30; ++i)
      EXPECT_EQ(half.get(i), whole.get(30 * part + i)) << part << ", " << i;
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < 60; ++i)
    kept += whole.get(i) != 0;
  EXPECT_GT(kept, 15);
  EXPECT_LT(kept, 45);
}

TEST(DropoutKernel, StepStreamAndMicroBatchChangeTheMask) {
  Buffer x = makeTensor(DType::F32, {64}, std::vector<double>(64, 1.0));
  auto mask = [&](int64_t stepValue, int64_t stream, int64_t micro) {
    Buffer step = makeTensor(DType::I64, {}, {double(stepValue)});
    Buffer y(DType::F32, {64});
    AttrMap attrs = dropoutAttrs(0.5, micro);
    attrs.set("stream", stream);
    runKernel("nn.dropout", attrs, {x.ref, step.ref}, {y.ref});
    return y.values();
  };
  std::vector<double> base = mask(1, 0, 0);
  EXPECT_NE(base, mask(2, 0, 0));
  EXPECT_NE(base, mask(1, 1, 0));
  EXPECT_NE(base, mask(1, 0, 1));
  EXPECT_EQ(base, mask(1, 0, 0));
}

TEST(DropoutKernel, Errors) {
  Buffer x = randomTensor(DType::F32, {2, 6}, 1);
  Buffer step = makeTensor(DType::I64, {}, {1});
  Buffer y(DType::F32, {2, 6});
  auto message = [&](const AttrMap &attrs) -> std::string {
    try {
      findCpuKernel("nn.dropout")(attrs, {x.ref, step.ref}, {y.ref});
    } catch (const RuntimeError &error) {
      return error.what();
    }
    return "";
  };
  EXPECT_EQ(message(dropoutAttrs(1.0, 0)),
            "nn.dropout: p must lie in [0, 1), got 1");
  AttrMap outside = dropoutAttrs(0.5, 0);
  outside.set("global_shape", ints({3, 6}));
  outside.set("shard_offsets", ints({2, 0}));
  EXPECT_EQ(message(outside), "nn.dropout: the block [2, 6] at [2, 0] does "
                              "not lie in the global shape [3, 6]");
  AttrMap stream = dropoutAttrs(0.5, 0);
  stream.set("stream", int64_t(-1));
  EXPECT_EQ(message(stream),
            "nn.dropout: stream must lie in [0, 2^32), got -1");
}

} // namespace
} // namespace zerosbp::runtime::test
