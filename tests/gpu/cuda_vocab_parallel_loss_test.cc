//===- cuda_vocab_parallel_loss_test.cc - split cross-entropy on CUDA -----===//
//
// nn.cross_entropy_max, nn.cross_entropy_sums, nn.cross_entropy_loss and
// nn.cross_entropy_split_grad on CUDA against their CPU kernels, on whole
// rows and on a rank's block of logits split by class (`shard_offsets` as
// the executor adds them), f32 and bf16 logits, f32 and f64 sums. The max
// and the label's logit are exact; sums and products agree to float
// rounding. Skips itself without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/gpu_test_util.h"

namespace zerosbp::runtime::gputest {
namespace {

class CudaVocabParallelLoss : public CudaDeviceTest {};

using Shape = std::vector<int64_t>;

/// A rank's logits, its labels over the whole classes, and its attributes.
struct Block {
  Shape shape;
  int64_t globalClasses;
  int64_t begin;
  DType type;
  std::string what;
};

AttrMap blockAttrs(const Block &block) {
  if (block.globalClasses == block.shape.back())
    return {};
  Shape global = block.shape, offsets(block.shape.size(), 0);
  global.back() = block.globalClasses;
  offsets.back() = block.begin;
  return makeAttrs({{"global_shape", global}, {"shard_offsets", offsets}});
}

const Block kBlocks[] = {
    {{17, 29}, 29, 0, DType::F32, "whole rows"},
    {{4, 5, 11}, 11, 0, DType::BF16, "bf16 rank 3"},
    {{8, 5000}, 5000, 0, DType::F32, "5000 classes"},
    {{2048, 61}, 61, 0, DType::F32, "2048 rows"},
    {{6, 2500}, 5000, 0, DType::F32, "rank 0 of 2"},
    {{6, 2500}, 5000, 2500, DType::BF16, "bf16 rank 1 of 2"},
    {{9, 333}, 1000, 667, DType::F32, "rank 2 of 3"},
};

/// The CPU's max, sums and label logits of `logits`, as the inputs of the
/// later steps.
struct CpuParts {
  HostTensor max, sumexp, labelLogit;
};

CpuParts cpuParts(const HostTensor &logits, const HostTensor &labels,
                  const AttrMap &attrs, DType sumType) {
  Shape leading(logits.ref.shape.begin(), logits.ref.shape.end() - 1);
  CpuParts parts{HostTensor(DType::F32, leading), HostTensor(sumType, leading),
                 HostTensor(DType::F32, leading)};
  findCpuKernel("nn.cross_entropy_max")({}, {logits.ref}, {parts.max.ref});
  findCpuKernel("nn.cross_entropy_sums")(
      attrs, {logits.ref, parts.max.ref, labels.ref},
      {parts.sumexp.ref, parts.labelLogit.ref});
  return parts;
}

TEST_F(CudaVocabParallelLoss, MaxAndSums) {
  unsigned seed = 1;
  for (const Block &block : kBlocks) {
    HostTensor logits = randomTensor(block.type, block.shape, seed++, -5, 5);
    Shape leading(block.shape.begin(), block.shape.end() - 1);
    HostTensor labels =
        randomIndices(block.type == DType::BF16 ? DType::I32 : DType::I64,
                      leading, seed++, block.globalClasses);
    AttrMap attrs = blockAttrs(block);
    expectMatchesCpu("nn.cross_entropy_max", {}, {&logits},
                     {{DType::F32, leading}}, exactBits(), block.what);
    CpuParts parts = cpuParts(logits, labels, attrs, DType::F32);
    // The sums in double, in another order: f64 agrees to double rounding,
    // f32 to one rounding.
    expectMatchesCpu("nn.cross_entropy_sums", attrs,
                     {&logits, &parts.max, &labels},
                     {{DType::F64, leading}, {DType::F32, leading}},
                     Tolerance{0, 1e-11}, block.what + " f64");
    expectMatchesCpu("nn.cross_entropy_sums", attrs,
                     {&logits, &parts.max, &labels},
                     {{DType::F32, leading}, {DType::F32, leading}},
                     Tolerance{0, 2.5e-7}, block.what + " f32");
  }
}

TEST_F(CudaVocabParallelLoss, Loss) {
  unsigned seed = 20;
  for (const Block &block : kBlocks) {
    HostTensor logits = randomTensor(block.type, block.shape, seed++, -5, 5);
    Shape leading(block.shape.begin(), block.shape.end() - 1);
    HostTensor labels =
        randomIndices(DType::I64, leading, seed++, block.globalClasses);
    for (DType sumType : {DType::F32, DType::F64}) {
      CpuParts parts = cpuParts(logits, labels, blockAttrs(block), sumType);
      std::string what = block.what + " " + dtypeName(sumType) + " sums";
      expectMatchesCpu("nn.cross_entropy_loss", {},
                       {&parts.max, &parts.sumexp, &parts.labelLogit},
                       {{DType::F32, {}}}, Tolerance{1e-6, 1e-5}, what);
      expectMatchesCpu(
          "nn.cross_entropy_loss", makeAttrs({{"count", int64_t{64}}}),
          {&parts.max, &parts.sumexp, &parts.labelLogit}, {{DType::F32, {}, 1}},
          Tolerance{1e-6, 1e-5}, what + " counted, over the sums");
    }
  }
}

TEST_F(CudaVocabParallelLoss, SplitGrad) {
  Tolerance tolerance{1e-8, 1e-5};
  HostTensor gradLoss = makeTensor(DType::F32, {}, {0.7});
  unsigned seed = 40;
  for (const Block &block : kBlocks) {
    HostTensor logits = randomTensor(block.type, block.shape, seed++, -5, 5);
    Shape leading(block.shape.begin(), block.shape.end() - 1);
    HostTensor labels =
        randomIndices(DType::I64, leading, seed++, block.globalClasses);
    AttrMap attrs = blockAttrs(block);
    for (DType sumType : {DType::F32, DType::F64}) {
      CpuParts parts = cpuParts(logits, labels, attrs, sumType);
      std::string what = block.what + " " + dtypeName(sumType) + " sums";
      std::vector<const HostTensor *> operands = {
          &gradLoss, &logits, &parts.max, &parts.sumexp, &labels};
      expectMatchesCpu("nn.cross_entropy_split_grad", attrs, operands,
                       {{block.type, block.shape}}, tolerance, what);
      AttrMap counted = attrs;
      counted.set("count", int64_t{64});
      expectMatchesCpu("nn.cross_entropy_split_grad", counted, operands,
                       {{block.type, block.shape, 1}}, tolerance,
                       what + " in place over the logits");
    }
  }
}

TEST_F(CudaVocabParallelLoss, LabelsOutsideTheWholeClassesThrowTheCpuError) {
  // Rank 1 of two, classes [5, 10) of (3, 10) logits: label 7 is its, 2
  // rank 0's, 10 no rank's.
  AttrMap attrs = makeAttrs(
      {{"global_shape", ints({3, 10})}, {"shard_offsets", ints({0, 5})}});
  HostTensor logits = randomTensor(DType::F32, {3, 5}, 1);
  HostTensor max = randomTensor(DType::F32, {3}, 2);
  HostTensor sumexp = randomTensor(DType::F32, {3}, 3, 1.0, 2.0);
  HostTensor labels = makeTensor(DType::I64, {3}, {7, 2, 10});
  HostTensor gradLoss = makeTensor(DType::F32, {}, {1});
  HostTensor sums(DType::F32, {3}), labelLogits(DType::F32, {3});
  HostTensor dx(DType::F32, {3, 5});
  struct Call {
    const char *op;
    std::vector<const HostTensor *> operands, results;
  };
  const Call calls[] = {{"nn.cross_entropy_sums",
                         {&logits, &max, &labels},
                         {&sums, &labelLogits}},
                        {"nn.cross_entropy_split_grad",
                         {&gradLoss, &logits, &max, &sumexp, &labels},
                         {&dx}}};
  for (const Call &call : calls) {
    std::vector<std::unique_ptr<DeviceTensor>> copies;
    std::vector<TensorRef> cpuOperands, cpuResults, cudaOperands, cudaResults;
    for (const HostTensor *tensor : call.operands) {
      copies.push_back(std::make_unique<DeviceTensor>(*tensor));
      cpuOperands.push_back(tensor->ref);
      cudaOperands.push_back(copies.back()->ref);
    }
    for (const HostTensor *tensor : call.results) {
      copies.push_back(std::make_unique<DeviceTensor>(*tensor));
      cpuResults.push_back(tensor->ref);
      cudaResults.push_back(copies.back()->ref);
    }
    CudaContext ctx;
    std::string message =
        expectSameError(call.op, attrs, cpuOperands, cpuResults, cudaOperands,
                        cudaResults, ctx);
    EXPECT_EQ(message, std::string(call.op) +
                           ": label 10 is out of range for 10 classes");
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

} // namespace
} // namespace zerosbp::runtime::gputest
