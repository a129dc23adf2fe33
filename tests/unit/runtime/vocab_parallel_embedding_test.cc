//===- vocab_parallel_embedding_test.cc - embedding split by vocabulary ---===//
//
// nn.embedding and nn.embedding_grad on a (10, 3) table split by rows over
// two ranks, with each rank's `shard_offsets` from rankAttrs as an executor
// adds them (docs/plan-format.md, "nn.embedding"): the ranks' lookups sum to
// the whole table's, each rank's gradient is its rows of the whole
// gradient, and bad ids and blocks are refused in one line.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "tests/unit/runtime/kernel_test_util.h"
#include "tests/unit/runtime/rank_attrs_test_util.h"

#include <gtest/gtest.h>

using namespace zerosbp::runtime;
using namespace zerosbp::runtime::test;

namespace {

constexpr int64_t kVocab = 10, kDim = 3;

/// The attributes of `op` on `rank` of a [1, 2] hierarchy whose axis 1
/// splits the (10, 3) table by rows, as rankAttrs gives them. `operands`
/// and `results` are the shapes of the instruction's values.
AttrMap rankAttrsOf(const std::string &op, AttrMap attrs,
                    std::vector<std::vector<int64_t>> operands,
                    std::vector<std::vector<int64_t>> results, int rank) {
  return rankAttrsOnModelAxis(op, std::move(attrs), std::move(operands),
                              std::move(results), {kVocab, kDim},
                              /*splitDim=*/0, rank, /*ranks=*/2);
}

/// Rows [5 rank, 5 rank + 5) of `whole`, in its type.
Buffer rowsOf(const Buffer &whole, int rank) {
  Buffer part(whole.ref.dtype, {5, kDim});
  for (int64_t i = 0; i < part.numel(); ++i)
    part.set(i, whole.get(5 * kDim * rank + i));
  return part;
}

std::string errorOf(const std::function<void()> &call) {
  try {
    call();
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "no error";
}

TEST(VocabParallelEmbedding, LookupsSumToTheWholeTables) {
  for (DType tableType : {DType::F32, DType::BF16}) {
    for (DType idType : {DType::I32, DType::I64}) {
      std::string what =
          std::string(dtypeName(tableType)) + " " + dtypeName(idType);
      Buffer whole = randomTensor(tableType, {kVocab, kDim}, 1);
      Buffer ids = makeTensor(idType, {2, 4}, {0, 9, 4, 5, 7, 4, 2, 9});
      Buffer sum = makeTensor(DType::F32, {2, 4, kDim},
                              std::vector<double>(2 * 4 * kDim, 0.0));
      for (int rank = 0; rank < 2; ++rank) {
        AttrMap attrs = rankAttrsOf("nn.embedding", {}, {{5, kDim}, {2, 4}},
                                    {{2, 4, kDim}}, rank);
        EXPECT_EQ(attrs.getInts("shard_offsets"), ints({5 * rank, 0}));
        Buffer table = rowsOf(whole, rank);
        Buffer y(DType::F32, {2, 4, kDim});
        runKernel("nn.embedding", attrs, {table.ref, ids.ref}, {y.ref});
        // The rank's ids give their rows, the others zeros.
        std::vector<double> expected;
        for (int64_t t = 0; t < 8; ++t) {
          auto id = static_cast<int64_t>(ids.get(t));
          for (int64_t j = 0; j < kDim; ++j)
            expected.push_back(id / 5 == rank ? whole.get(id * kDim + j) : 0);
        }
        expectClose(y.values(), expected, 0, 0, what);
        for (int64_t i = 0; i < sum.numel(); ++i)
          sum.set(i, sum.get(i) + y.get(i));
      }
      Buffer lookup(DType::F32, {2, 4, kDim});
      runKernel("nn.embedding", {}, {whole.ref, ids.ref}, {lookup.ref});
      expectClose(sum.values(), lookup.values(), 0, 0, what + " sum");
    }
  }
}

TEST(VocabParallelEmbedding, GradsAreTheWholeGradsRows) {
  for (DType idType : {DType::I32, DType::I64}) {
    Buffer ids = makeTensor(idType, {2, 4}, {0, 9, 4, 5, 7, 4, 2, 9});
    Buffer dy = randomTensor(DType::F32, {2, 4, kDim}, 2);
    Buffer whole(DType::F32, {kVocab, kDim});
    runKernel("nn.embedding_grad", makeAttrs({{"vocab_size", kVocab}}),
              {dy.ref, ids.ref}, {whole.ref});
    // By hand: ids 4 and 9 appear twice.
    std::vector<double> reference(kVocab * kDim, 0.0);
    for (int64_t t = 0; t < 8; ++t)
      for (int64_t j = 0; j < kDim; ++j)
        reference[static_cast<int64_t>(ids.get(t)) * kDim + j] +=
            dy.get(t * kDim + j);
    expectClose(whole.values(), reference, 1e-7, 1e-6, dtypeName(idType));
    for (int rank = 0; rank < 2; ++rank) {
      AttrMap attrs =
          rankAttrsOf("nn.embedding_grad",
                      makeAttrs({{"vocab_size", int64_t{5}},
                                 {"split_of", std::string("result")}}),
                      {{2, 4, kDim}, {2, 4}}, {{5, kDim}}, rank);
      EXPECT_EQ(attrs.getInts("shard_offsets"), ints({5 * rank, 0}));
      Buffer grad(DType::F32, {5, kDim});
      grad.set(0, 123.0); // The result starts from zero, not its bytes.
      runKernel("nn.embedding_grad", attrs, {dy.ref, ids.ref}, {grad.ref});
      // Added in the order of the ids, as the whole gradient: the same bits.
      expectClose(grad.values(), rowsOf(whole, rank).values(), 0, 0,
                  std::string(dtypeName(idType)) + " rank " +
                      std::to_string(rank));
    }
  }
}

TEST(VocabParallelEmbedding, RefusesIdsOutsideTheWholeVocabulary) {
  AttrMap forward =
      rankAttrsOf("nn.embedding", {}, {{5, kDim}, {3}}, {{3, kDim}}, 1);
  AttrMap backward =
      rankAttrsOf("nn.embedding_grad",
                  makeAttrs({{"vocab_size", int64_t{5}},
                             {"split_of", std::string("result")}}),
                  {{3, kDim}, {3}}, {{5, kDim}}, 1);
  Buffer table = randomTensor(DType::F32, {5, kDim}, 3);
  Buffer rows(DType::F32, {3, kDim});
  Buffer dy = randomTensor(DType::F32, {3, kDim}, 4);
  Buffer grad(DType::F32, {5, kDim});
  for (int64_t bad : {int64_t{10}, int64_t{-1}}) {
    Buffer ids = makeTensor(DType::I64, {3}, {2, static_cast<double>(bad), 7});
    std::string id = std::to_string(bad);
    EXPECT_EQ(
        errorOf([&] {
          runKernel("nn.embedding", forward, {table.ref, ids.ref}, {rows.ref});
        }),
        "nn.embedding: id " + id + " is out of range for vocab 10");
    EXPECT_EQ(errorOf([&] {
                runKernel("nn.embedding_grad", backward, {dy.ref, ids.ref},
                          {grad.ref});
              }),
              "nn.embedding_grad: id " + id + " is out of range for vocab 10");
  }
}

TEST(VocabParallelEmbedding, RefusesBlocksThatAreNotTheRanks) {
  // The executor's check: rank 1's table must be rows [5, 10).
  EXPECT_EQ(errorOf([] {
              rankAttrsOf("nn.embedding", {}, {{6, kDim}, {3}}, {{3, kDim}}, 1);
            }),
            "test.zplan: instructions[0] (nn.embedding): rank 1 holds [6, 3], "
            "not its block [5, 3] of [10, 3]");
  EXPECT_EQ(errorOf([] {
              rankAttrsOf("nn.embedding_grad",
                          makeAttrs({{"vocab_size", int64_t{5}},
                                     {"split_of", std::string("left")}}),
                          {{3, kDim}, {3}}, {{5, kDim}}, 0);
            }),
            "test.zplan: instructions[0] (nn.embedding_grad): 'split_of' "
            "must be \"result\", got \"left\"");
  // The kernel's: rows [6, 11) do not lie in 10.
  AttrMap attrs = makeAttrs({{"global_shape", ints({kVocab, kDim})},
                             {"shard_offsets", ints({6, 0})}});
  Buffer table = randomTensor(DType::F32, {5, kDim}, 5);
  Buffer ids = makeTensor(DType::I64, {1}, {6});
  Buffer rows(DType::F32, {1, kDim});
  EXPECT_EQ(
      errorOf([&] {
        runKernel("nn.embedding", attrs, {table.ref, ids.ref}, {rows.ref});
      }),
      "nn.embedding: the block [5, 3] at [6, 0] does not lie in the "
      "global shape [10, 3]");
}

} // namespace
