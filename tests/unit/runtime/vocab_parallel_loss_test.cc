//===- vocab_parallel_loss_test.cc - cross-entropy split by class ---------===//
//
// nn.cross_entropy_max, nn.cross_entropy_sums, nn.cross_entropy_loss and
// nn.cross_entropy_split_grad against float64 references: on whole rows
// they are nn.cross_entropy and nn.cross_entropy_grad (bit for bit with the
// sums in f64); on logits split by class over two or three ranks, with each
// rank's `shard_offsets` from rankAttrs as an executor adds them, the ranks'
// parts combined as the collectives combine them (max, sum, sum) give the
// whole rows' loss, and each rank's gradient is its columns of the whole
// gradient. Bad labels, shapes, counts and blocks are refused in one line.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "tests/unit/runtime/kernel_test_util.h"
#include "tests/unit/runtime/rank_attrs_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>

using namespace zerosbp::runtime;
using namespace zerosbp::runtime::test;

namespace {

using Shapes = std::vector<std::vector<int64_t>>;

/// The attributes of `op` on `rank` of a [1, ranks] hierarchy whose axis 1
/// splits the logits' classes, as rankAttrs gives them; `operands` and
/// `results` are the shapes of the instruction's values.
AttrMap rankAttrsOf(const std::string &op, AttrMap attrs, Shapes operands,
                    Shapes results, const std::vector<int64_t> &globalShape,
                    int rank, int ranks) {
  return rankAttrsOnModelAxis(
      op, std::move(attrs), std::move(operands), std::move(results),
      globalShape, static_cast<int64_t>(globalShape.size()) - 1, rank, ranks);
}

/// Columns [begin, begin + size) of a (rows, classes) tensor, in its type.
Buffer columnsOf(const Buffer &whole, int64_t begin, int64_t size) {
  int64_t classes = whole.ref.shape.back();
  int64_t rows = whole.numel() / classes;
  Buffer part(whole.ref.dtype, {rows, size});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < size; ++j)
      part.set(r * size + j, whole.get(r * classes + begin + j));
  return part;
}

/// The whole rows' loss, sum_r (logsumexp(x[r]) - x[r, label[r]]) / count,
/// in double.
double referenceLoss(const Buffer &logits, const Buffer &labels, double count) {
  return crossEntropySum(logits.values(), labels.values(),
                         logits.ref.shape.back()) /
         count;
}

/// d loss / d logits of the whole rows, in double:
/// dloss (softmax(x[r]) - onehot(label[r])) / count.
std::vector<double> referenceGrad(const Buffer &logits, const Buffer &labels,
                                  double gradLoss, double count) {
  int64_t classes = logits.ref.shape.back();
  std::vector<double> x = logits.values(), grad(x.size());
  for (int64_t r = 0; r < labels.numel(); ++r) {
    const double *row = x.data() + r * classes;
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < classes; ++j)
      max = std::max(max, row[j]);
    for (int64_t j = 0; j < classes; ++j)
      sum += std::exp(row[j] - max);
    auto label = static_cast<int64_t>(labels.get(r));
    for (int64_t j = 0; j < classes; ++j)
      grad[r * classes + j] =
          gradLoss / count * (std::exp(row[j] - max) / sum - (j == label));
  }
  return grad;
}

/// Columns [begin, begin + size) of a whole (rows, classes) gradient.
std::vector<double> columnsOf(const std::vector<double> &whole, int64_t classes,
                              int64_t begin, int64_t size) {
  std::vector<double> part;
  for (size_t r = 0; r < whole.size() / classes; ++r)
    for (int64_t j = 0; j < size; ++j)
      part.push_back(whole[r * classes + begin + j]);
  return part;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text;
  for (int64_t dim : shape)
    text += (text.empty() ? "" : "x") + std::to_string(dim);
  return text;
}

bool sameBytes(const Buffer &a, const Buffer &b) {
  return a.ref.bytes() == b.ref.bytes() &&
         std::memcmp(a.ref.data, b.ref.data, a.ref.bytes()) == 0;
}

std::vector<int64_t> leadingOf(const Buffer &logits) {
  return {logits.ref.shape.begin(), logits.ref.shape.end() - 1};
}

/// One rank's max, sums and label logits, and the loss and split gradient
/// from whole rows' (or combined) parts.
struct Parts {
  Buffer max, sumexp, labelLogit;
};

Parts forward(const Buffer &logits, const Buffer &labels, DType sumType,
              const AttrMap &sumsAttrs = {}) {
  std::vector<int64_t> leading = leadingOf(logits);
  Parts parts{Buffer(DType::F32, leading), Buffer(sumType, leading),
              Buffer(DType::F32, leading)};
  runKernel("nn.cross_entropy_max", {}, {logits.ref}, {parts.max.ref});
  runKernel("nn.cross_entropy_sums", sumsAttrs,
            {logits.ref, parts.max.ref, labels.ref},
            {parts.sumexp.ref, parts.labelLogit.ref});
  return parts;
}

Buffer lossOf(const Parts &parts, const AttrMap &attrs = {}) {
  Buffer loss(DType::F32, {});
  runKernel("nn.cross_entropy_loss", attrs,
            {parts.max.ref, parts.sumexp.ref, parts.labelLogit.ref},
            {loss.ref});
  return loss;
}

Buffer splitGradOf(const Buffer &gradLoss, const Buffer &logits,
                   const Parts &parts, const Buffer &labels,
                   const AttrMap &attrs = {}) {
  Buffer dx(logits.ref.dtype, logits.ref.shape);
  runKernel(
      "nn.cross_entropy_split_grad", attrs,
      {gradLoss.ref, logits.ref, parts.max.ref, parts.sumexp.ref, labels.ref},
      {dx.ref});
  return dx;
}

TEST(VocabParallelLoss, WholeRowsAreTheCrossEntropy) {
  struct Case {
    std::vector<int64_t> shape;
    DType labelType;
    std::optional<int64_t> count;
  };
  const Case cases[] = {{{6, 37}, DType::I64, std::nullopt},
                        {{2, 3, 11}, DType::I32, int64_t{64}},
                        {{3, 1000}, DType::I64, int64_t{5}}};
  unsigned seed = 1;
  for (const Case &c : cases) {
    std::string what = shapeText(c.shape);
    Buffer logits = randomTensor(DType::F32, c.shape, seed++, -5.0, 5.0);
    Buffer labels =
        randomIndices(c.labelType, leadingOf(logits), seed++, c.shape.back());
    Buffer gradLoss = makeTensor(DType::F32, {}, {0.7});
    AttrMap attrs;
    if (c.count)
      attrs.set("count", *c.count);
    double count = c.count ? static_cast<double>(*c.count)
                           : static_cast<double>(labels.numel());

    Buffer whole(DType::F32, {});
    runKernel("nn.cross_entropy", attrs, {logits.ref, labels.ref}, {whole.ref});
    Buffer wholeGrad(DType::F32, c.shape);
    runKernel("nn.cross_entropy_grad", attrs,
              {gradLoss.ref, logits.ref, labels.ref}, {wholeGrad.ref});
    double reference = referenceLoss(logits, labels, count);

    for (DType sumType : {DType::F32, DType::F64}) {
      std::string with = what + " " + dtypeName(sumType) + " sums";
      Parts parts = forward(logits, labels, sumType);
      Buffer loss = lossOf(parts, attrs);
      expectClose(loss.values(), {reference}, 0, 1e-6, with + " loss");
      Buffer grad = splitGradOf(gradLoss, logits, parts, labels, attrs);
      expectClose(grad.values(), referenceGrad(logits, labels, 0.7, count),
                  1e-9, 2e-6, with + " grad");
      if (sumType == DType::F64) {
        // The sums as nn.cross_entropy holds them: its bits.
        EXPECT_TRUE(sameBytes(loss, whole)) << with;
        EXPECT_TRUE(sameBytes(grad, wholeGrad)) << with;
      } else {
        // The sums rounded to f32 move 1 / sum by at most an ulp.
        expectClose(loss.values(), whole.values(), 0, 2.5e-7, with);
        expectClose(grad.values(), wholeGrad.values(), 1e-10, 5e-7, with);
      }
    }
  }
}

TEST(VocabParallelLoss, SplitGradMayReplaceTheLogits) {
  for (DType type : {DType::F32, DType::BF16}) {
    Buffer logits = randomTensor(type, {5, 19}, 7, -5.0, 5.0);
    Buffer labels = randomIndices(DType::I64, {5}, 8, 19);
    Buffer gradLoss = makeTensor(DType::F32, {}, {1.3});
    Parts parts = forward(logits, labels, DType::F32);
    Buffer separate = splitGradOf(gradLoss, logits, parts, labels);
    Buffer inPlace = logits.clone();
    runKernel("nn.cross_entropy_split_grad", {},
              {gradLoss.ref, inPlace.ref, parts.max.ref, parts.sumexp.ref,
               labels.ref},
              {inPlace.ref});
    EXPECT_TRUE(sameBytes(inPlace, separate)) << dtypeName(type);
  }
}

/// The logits (rows, classes) split by class over `ranks` ranks: each rank's
/// max, sums (with the max over ranks) and label logits, combined as an
/// all-reduce combines them, give the whole rows' loss; each rank's split
/// gradient is its columns of the whole gradient.
void checkSplit(DType type, int64_t rows, int64_t classes, int ranks,
                unsigned seed) {
  std::string what = std::string(dtypeName(type)) + " over " +
                     std::to_string(ranks) + " ranks";
  std::vector<int64_t> shape = {rows, classes};
  Buffer logits = randomTensor(type, shape, seed, -5.0, 5.0);
  // Labels on every rank, the first and last classes among them.
  std::vector<double> labelValues;
  for (int64_t r = 0; r < rows; ++r)
    labelValues.push_back(
        static_cast<double>((r * 7 + (r % 2 ? 0 : 9)) % classes));
  labelValues[0] = 0;
  labelValues[rows - 1] = static_cast<double>(classes - 1);
  Buffer labels = makeTensor(DType::I64, {rows}, labelValues);
  Buffer gradLoss = makeTensor(DType::F32, {}, {0.9});
  constexpr int64_t kCount = 16;
  AttrMap counted = makeAttrs({{"count", kCount}});

  // Balanced parts, larger first (docs/plan-format.md, "Shards").
  std::vector<int64_t> begins, sizes;
  for (int k = 0, begin = 0; k < ranks; ++k) {
    sizes.push_back(classes / ranks + (k < classes % ranks ? 1 : 0));
    begins.push_back(begin);
    begin += static_cast<int>(sizes.back());
  }

  // max: the max over ranks.
  std::vector<Buffer> parts;
  Buffer max =
      makeTensor(DType::F32, {rows}, std::vector<double>(rows, -INFINITY));
  for (int k = 0; k < ranks; ++k) {
    parts.push_back(columnsOf(logits, begins[k], sizes[k]));
    Buffer local(DType::F32, {rows});
    runKernel("nn.cross_entropy_max", {}, {parts[k].ref}, {local.ref});
    for (int64_t r = 0; r < rows; ++r)
      max.set(r, std::max(max.get(r), local.get(r)));
  }
  // sums and label logits: the sums over ranks, in f32 as an all-reduce.
  Buffer sumexp = makeTensor(DType::F32, {rows}, std::vector<double>(rows, 0));
  Buffer labelLogit =
      makeTensor(DType::F32, {rows}, std::vector<double>(rows, 0));
  for (int k = 0; k < ranks; ++k) {
    AttrMap attrs = rankAttrsOf("nn.cross_entropy_sums", {},
                                {{rows, sizes[k]}, {rows}, {rows}},
                                {{rows}, {rows}}, shape, k, ranks);
    EXPECT_EQ(attrs.getInts("shard_offsets"), ints({0, begins[k]})) << what;
    Buffer localSum(DType::F32, {rows}), localLabel(DType::F32, {rows});
    runKernel("nn.cross_entropy_sums", attrs,
              {parts[k].ref, max.ref, labels.ref},
              {localSum.ref, localLabel.ref});
    for (int64_t r = 0; r < rows; ++r) {
      sumexp.ref.as<float>()[r] += localSum.ref.as<float>()[r];
      labelLogit.ref.as<float>()[r] += localLabel.ref.as<float>()[r];
    }
  }
  // The max and the label's logit are the whole row's, exactly.
  for (int64_t r = 0; r < rows; ++r) {
    double rowMax = -INFINITY;
    for (int64_t j = 0; j < classes; ++j)
      rowMax = std::max(rowMax, logits.get(r * classes + j));
    EXPECT_EQ(max.get(r), rowMax) << what << " row " << r;
    EXPECT_EQ(labelLogit.get(r),
              logits.get(r * classes + static_cast<int64_t>(labels.get(r))))
        << what << " row " << r;
  }
  Parts combined{std::move(max), std::move(sumexp), std::move(labelLogit)};
  Buffer loss = lossOf(combined, counted);
  // f32 sums of a few f32 terms each: within float rounding of float64.
  expectClose(loss.values(), {referenceLoss(logits, labels, kCount)}, 0, 1e-6,
              what + " loss");

  std::vector<double> wholeGrad = referenceGrad(logits, labels, 0.9, kCount);
  for (int k = 0; k < ranks; ++k) {
    AttrMap attrs = rankAttrsOf(
        "nn.cross_entropy_split_grad",
        makeAttrs({{"count", kCount}, {"split_of", std::string("result")}}),
        {{}, {rows, sizes[k]}, {rows}, {rows}, {rows}}, {{rows, sizes[k]}},
        shape, k, ranks);
    EXPECT_EQ(attrs.getInts("shard_offsets"), ints({0, begins[k]})) << what;
    Buffer grad = splitGradOf(gradLoss, parts[k], combined, labels, attrs);
    // f32: a few roundings of exp, 1 / sum and the products; bf16 results
    // round once more, to 2^-8 of the value.
    double rtol = type == DType::BF16 ? 1.0 / 256 : 2e-6;
    expectClose(grad.values(),
                columnsOf(wholeGrad, classes, begins[k], sizes[k]), 1e-9, rtol,
                what + " grad of rank " + std::to_string(k));
  }
}

TEST(VocabParallelLoss, TwoRanksGiveTheWholeRows) {
  checkSplit(DType::F32, 4, 10, 2, 11);
}

TEST(VocabParallelLoss, ThreeUnevenRanksGiveTheWholeRows) {
  checkSplit(DType::F32, 6, 10, 3, 12);
}

TEST(VocabParallelLoss, Bf16Logits) {
  checkSplit(DType::BF16, 4, 10, 2, 13);
  checkSplit(DType::BF16, 8, 50, 3, 14);
  // Whole rows of bf16 logits, f64 sums: nn.cross_entropy's bits.
  Buffer logits = randomTensor(DType::BF16, {3, 4, 9}, 15, -5.0, 5.0);
  Buffer labels = randomIndices(DType::I32, {3, 4}, 16, 9);
  Buffer gradLoss = makeTensor(DType::BF16, {}, {1.0});
  Parts parts = forward(logits, labels, DType::F64);
  Buffer whole(DType::F32, {});
  runKernel("nn.cross_entropy", {}, {logits.ref, labels.ref}, {whole.ref});
  EXPECT_TRUE(sameBytes(lossOf(parts), whole));
  Buffer wholeGrad(DType::BF16, {3, 4, 9});
  runKernel("nn.cross_entropy_grad", {}, {gradLoss.ref, logits.ref, labels.ref},
            {wholeGrad.ref});
  EXPECT_TRUE(
      sameBytes(splitGradOf(gradLoss, logits, parts, labels), wholeGrad));
}

TEST(VocabParallelLoss, ARankWithoutClassesAddsNothing) {
  // One class over two ranks: rank 1 holds none.
  Buffer logits(DType::F32, {3, 0});
  Buffer labels = makeTensor(DType::I64, {3}, {0, 0, 0});
  AttrMap attrs = rankAttrsOf("nn.cross_entropy_sums", {}, {{3, 0}, {3}, {3}},
                              {{3}, {3}}, {3, 1}, 1, 2);
  Parts parts = forward(logits, labels, DType::F32, attrs);
  expectClose(parts.max.values(), {-INFINITY, -INFINITY, -INFINITY}, 0, 0);
  Buffer max = makeTensor(DType::F32, {3}, {1, 2, 3});
  runKernel("nn.cross_entropy_sums", attrs, {logits.ref, max.ref, labels.ref},
            {parts.sumexp.ref, parts.labelLogit.ref});
  expectClose(parts.sumexp.values(), {0, 0, 0}, 0, 0);
  expectClose(parts.labelLogit.values(), {0, 0, 0}, 0, 0);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Runs `op` and returns its one-line error, which must begin with the op's
/// name.
std::string errorOf(const std::string &op, const AttrMap &attrs,
                    const std::vector<const Buffer *> &operands,
                    const std::vector<const Buffer *> &results) {
  std::vector<TensorRef> operandRefs, resultRefs;
  for (const Buffer *buffer : operands)
    operandRefs.push_back(buffer->ref);
  for (const Buffer *buffer : results)
    resultRefs.push_back(buffer->ref);
  try {
    runKernel(op, attrs, operandRefs, resultRefs);
  } catch (const RuntimeError &error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind(op + ": ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  return "no error";
}

struct ErrorOperands {
  Buffer logits = randomTensor(DType::F32, {3, 5}, 21);
  Buffer max = randomTensor(DType::F32, {3}, 22);
  Buffer sumexp = randomTensor(DType::F32, {3}, 23, 1.0, 2.0);
  Buffer labelLogit = randomTensor(DType::F32, {3}, 24);
  Buffer gradLoss = makeTensor(DType::F32, {}, {1});
  Buffer dx = Buffer(DType::F32, {3, 5});
  Buffer loss = Buffer(DType::F32, {});
  Buffer labelLogitOut = Buffer(DType::F32, {3});
  Buffer sumexpOut = Buffer(DType::F32, {3});
  /// Rank 1 of two, holding classes [5, 10) of (3, 10) logits.
  AttrMap sums = makeAttrs(
      {{"global_shape", ints({3, 10})}, {"shard_offsets", ints({0, 5})}});
};

TEST(VocabParallelLoss, RefusesLabelsOutsideTheWholeClasses) {
  ErrorOperands t;
  for (int64_t bad : {int64_t{10}, int64_t{-1}}) {
    // Label 2 is rank 0's: fine. `bad` is no rank's.
    Buffer labels =
        makeTensor(DType::I64, {3}, {7, 2, static_cast<double>(bad)});
    std::string message =
        "label " + std::to_string(bad) + " is out of range for 10 classes";
    EXPECT_EQ(errorOf("nn.cross_entropy_sums", t.sums,
                      {&t.logits, &t.max, &labels},
                      {&t.sumexpOut, &t.labelLogitOut}),
              "nn.cross_entropy_sums: " + message);
    EXPECT_EQ(errorOf("nn.cross_entropy_split_grad", t.sums,
                      {&t.gradLoss, &t.logits, &t.max, &t.sumexp, &labels},
                      {&t.dx}),
              "nn.cross_entropy_split_grad: " + message);
  }
  // Without global_shape the classes are the local ones.
  Buffer labels = makeTensor(DType::I64, {3}, {0, 5, 1});
  EXPECT_EQ(errorOf("nn.cross_entropy_sums", {}, {&t.logits, &t.max, &labels},
                    {&t.sumexpOut, &t.labelLogitOut}),
            "nn.cross_entropy_sums: label 5 is out of range for 5 classes");
}

TEST(VocabParallelLoss, RefusesMismatchedShapesAndTypes) {
  ErrorOperands t;
  Buffer labels = makeTensor(DType::I64, {3}, {0, 1, 2});
  Buffer four(DType::F32, {4});
  Buffer half(DType::F16, {3});
  Buffer wide(DType::F32, {3, 6});
  Buffer scalar = makeTensor(DType::F32, {}, {1});
  Buffer floatLabels = makeTensor(DType::F32, {3}, {0, 1, 2});
  EXPECT_EQ(errorOf("nn.cross_entropy_max", {}, {&t.logits}, {&four}),
            "nn.cross_entropy_max: result has shape [4], expected [3]");
  EXPECT_EQ(errorOf("nn.cross_entropy_max", {}, {&t.logits}, {&half}),
            "nn.cross_entropy_max: result has element type f16, expected f32");
  EXPECT_EQ(errorOf("nn.cross_entropy_max", {}, {&scalar}, {&scalar}),
            "nn.cross_entropy_max: logits must have a class dim");
  EXPECT_EQ(errorOf("nn.cross_entropy_sums", {}, {&t.logits, &four, &labels},
                    {&t.sumexpOut, &t.labelLogitOut}),
            "nn.cross_entropy_sums: max has shape [4], expected [3]");
  EXPECT_EQ(errorOf("nn.cross_entropy_sums", {},
                    {&t.logits, &t.max, &floatLabels},
                    {&t.sumexpOut, &t.labelLogitOut}),
            "nn.cross_entropy_sums: labels has element type f32, expected i32 "
            "or i64");
  EXPECT_EQ(errorOf("nn.cross_entropy_sums", {}, {&t.logits, &t.max, &labels},
                    {&half, &t.labelLogitOut}),
            "nn.cross_entropy_sums: sumexp has element type f16, expected f32 "
            "or f64");
  EXPECT_EQ(errorOf("nn.cross_entropy_sums", {}, {&t.logits, &t.max, &labels},
                    {&t.sumexpOut}),
            "nn.cross_entropy_sums: expects 3 operands and 2 results, got 3 "
            "and 1");
  EXPECT_EQ(errorOf("nn.cross_entropy_loss", {}, {&t.max, &four, &t.labelLogit},
                    {&t.loss}),
            "nn.cross_entropy_loss: sumexp has shape [4], expected [3]");
  EXPECT_EQ(errorOf("nn.cross_entropy_loss", {},
                    {&t.max, &t.sumexp, &t.labelLogit}, {&four}),
            "nn.cross_entropy_loss: result has 4 elements, expected 1");
  EXPECT_EQ(errorOf("nn.cross_entropy_split_grad", {},
                    {&t.gradLoss, &t.logits, &t.max, &t.sumexp, &labels},
                    {&wide}),
            "nn.cross_entropy_split_grad: result has shape [3, 6], expected "
            "[3, 5]");
  EXPECT_EQ(errorOf("nn.cross_entropy_split_grad", {},
                    {&four, &t.logits, &t.max, &t.sumexp, &labels}, {&t.dx}),
            "nn.cross_entropy_split_grad: grad_loss has 4 elements, expected "
            "1");
  EXPECT_EQ(errorOf("nn.cross_entropy_split_grad", {},
                    {&t.gradLoss, &t.logits, &t.max, &four, &labels}, {&t.dx}),
            "nn.cross_entropy_split_grad: sumexp has shape [4], expected [3]");
}

TEST(VocabParallelLoss, RefusesCountsThatAreNotPositive) {
  ErrorOperands t;
  Buffer labels = makeTensor(DType::I64, {3}, {0, 1, 2});
  EXPECT_EQ(errorOf("nn.cross_entropy_loss", makeAttrs({{"count", int64_t{0}}}),
                    {&t.max, &t.sumexp, &t.labelLogit}, {&t.loss}),
            "nn.cross_entropy_loss: count 0 is not positive");
  EXPECT_EQ(errorOf("nn.cross_entropy_split_grad",
                    makeAttrs({{"count", int64_t{-3}}}),
                    {&t.gradLoss, &t.logits, &t.max, &t.sumexp, &labels},
                    {&t.dx}),
            "nn.cross_entropy_split_grad: count -3 is not positive");
}

TEST(VocabParallelLoss, RefusesBlocksOutsideTheGlobalShape) {
  ErrorOperands t;
  Buffer labels = makeTensor(DType::I64, {3}, {0, 1, 2});
  // The executor's check: rank 1 of two must hold classes [5, 10).
  try {
    rankAttrsOf("nn.cross_entropy_sums", {}, {{3, 6}, {3}, {3}}, {{3}, {3}},
                {3, 10}, 1, 2);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "test.zplan: instructions[0] (nn.cross_entropy_sums): rank 1 "
                 "holds [3, 6], not its block [3, 5] of [3, 10]");
  }
  // The kernels': classes [6, 11) do not lie in 10; a global_shape of
  // another rank.
  AttrMap outside = makeAttrs(
      {{"global_shape", ints({3, 10})}, {"shard_offsets", ints({0, 6})}});
  EXPECT_EQ(errorOf("nn.cross_entropy_sums", outside,
                    {&t.logits, &t.max, &labels},
                    {&t.sumexpOut, &t.labelLogitOut}),
            "nn.cross_entropy_sums: the block [3, 5] at [0, 6] does not lie "
            "in the global shape [3, 10]");
  EXPECT_EQ(errorOf("nn.cross_entropy_split_grad", outside,
                    {&t.gradLoss, &t.logits, &t.max, &t.sumexp, &labels},
                    {&t.dx}),
            "nn.cross_entropy_split_grad: the block [3, 5] at [0, 6] does not "
            "lie in the global shape [3, 10]");
  AttrMap flat = makeAttrs({{"global_shape", ints({10})}});
  EXPECT_EQ(errorOf("nn.cross_entropy_sums", flat, {&t.logits, &t.max, &labels},
                    {&t.sumexpOut, &t.labelLogitOut}),
            "nn.cross_entropy_sums: 'global_shape' has 1 entries for rank 2");
}

} // namespace
