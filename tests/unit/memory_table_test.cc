//===- memory_table_test.cc - ZeRO memory formulas and the paper's tables -===//
//
// Every cell of Tables 1 and 2 of the ZeRO paper (arXiv:1910.02054),
// transcribed as printed, against the formulas rounded the paper's way; and
// the formulas against hand-computed byte counts.

#include "examples/memory_table/ActivationMemory.h"
#include "examples/memory_table/PaperTables.h"
#include "examples/memory_table/ZeroMemory.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

namespace {

using namespace zerosbp::examples::memory;

constexpr int64_t kK = kMixedPrecisionAdamK;

// Table 1 as printed: [model 7.5B, 128B, 1T][N_d 1, 4, 16, 64, 256, 1024]
// [P_os, P_os+g, P_os+g+p], in GB.
const char *const kPaperTable1[3][6][3] = {
    {{"120", "120", "120"},
     {"52.5", "41.3", "30"},
     {"35.6", "21.6", "7.5"},
     {"31.4", "16.6", "1.88"},
     {"30.4", "15.4", "0.47"},
     {"30.1", "15.1", "0.12"}},
    {{"2048", "2048", "2048"},
     {"896", "704", "512"},
     {"608", "368", "128"},
     {"536", "284", "32"},
     {"518", "263", "8"},
     {"513", "257", "2"}},
    {{"16000", "16000", "16000"},
     {"7000", "5500", "4000"},
     {"4750", "2875", "1000"},
     {"4187", "2218", "250"},
     {"4046", "2054", "62.5"},
     {"4011", "2013", "15.6"}},
};

// Table 1's bold cells as (model, N_d, stage) indices.
const std::set<std::tuple<int, int, int>> kPaperTable1Bold = {
    {0, 3, 0}, {0, 2, 1}, {0, 1, 2}, {1, 3, 2}, {2, 5, 2}};

// Table 2's theoretical columns as printed: [MP 1, 2, 4, 8, 16]
// [Baseline, P_os, P_os+g, P_os+g+p].
const char *const kPaperTable2[5][4] = {
    {"2B", "7.6B", "14.4B", "128B"},   {"4B", "15.2B", "28.8B", "256B"},
    {"8B", "30.4B", "57.6B", "0.5T"},  {"16B", "60.8B", "115.2B", "1T"},
    {"32B", "121.6B", "230.4B", "2T"},
};

TEST(ZeroMemoryTest, FormulasMatchHandComputedBytes) {
  // psi = 1e9, N = 8, K = 12: 16e9, 4e9 + 1.5e9, 2e9 + 1.75e9, 2e9 bytes.
  const int64_t psi = 1'000'000'000;
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::DataParallel, psi, 8, kK),
            16'000'000'000);
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::OptimizerStates, psi, 8, kK),
            5'500'000'000);
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::Gradients, psi, 8, kK),
            3'750'000'000);
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::Parameters, psi, 8, kK),
            2'000'000'000);
  // The real-valued formula is exact here too.
  EXPECT_EQ(modelStateBytes(ZeroStage::DataParallel, 1e9, 8, kK), 16e9);
  EXPECT_EQ(modelStateBytes(ZeroStage::OptimizerStates, 1e9, 8, kK), 5.5e9);
  EXPECT_EQ(modelStateBytes(ZeroStage::Gradients, 1e9, 8, kK), 3.75e9);
  EXPECT_EQ(modelStateBytes(ZeroStage::Parameters, 1e9, 8, kK), 2e9);
}

TEST(ZeroMemoryTest, BytesPerParameterByStage) {
  auto expectSplit = [](ZeroStage stage, int64_t replicated,
                        int64_t partitioned) {
    BytesPerParameter bytes = bytesPerParameter(stage, kK);
    EXPECT_EQ(bytes.replicated, replicated);
    EXPECT_EQ(bytes.partitioned, partitioned);
  };
  expectSplit(ZeroStage::DataParallel, 16, 0);
  expectSplit(ZeroStage::OptimizerStates, 4, 12);
  expectSplit(ZeroStage::Gradients, 2, 14);
  expectSplit(ZeroStage::Parameters, 0, 16);
}

TEST(ZeroMemoryTest, OneRankHoldsEverythingAtEveryStage) {
  for (ZeroStage stage : kTable2Stages)
    EXPECT_EQ(paddedModelStateBytes(stage, 12345, 1, kK), 16 * 12345);
}

TEST(ZeroMemoryTest, UnevenShardsArePadded) {
  // 10 parameters on 4 ranks: shards of 3, so stage 3 holds 16 x 3 bytes
  // where the formula says 16 x 2.5.
  EXPECT_EQ(shardSize(10, 4), 3);
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::Parameters, 10, 4, kK), 48);
  EXPECT_EQ(modelStateBytes(ZeroStage::Parameters, 10, 4, kK), 40.0);
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::OptimizerStates, 10, 4, kK),
            4 * 10 + 12 * 3);
  // Fewer parameters than ranks: one padded element each.
  EXPECT_EQ(shardSize(3, 8), 1);
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::Parameters, 3, 8, kK), 16);
  EXPECT_EQ(paddedModelStateBytes(ZeroStage::Parameters, 0, 8, kK), 0);
}

TEST(ZeroMemoryTest, MaxModelSolvesTheFormula) {
  EXPECT_EQ(maxModelParams(ZeroStage::DataParallel, 32e9, 1, kK), 2e9);
  EXPECT_EQ(maxModelParams(ZeroStage::Parameters, 32e9, 64, kK), 128e9);
  EXPECT_EQ(maxModelParams(ZeroStage::Parameters, 32e9, 64, kK, 16), 2048e9);
  for (ZeroStage stage : kTable2Stages)
    for (int64_t degree : kTable1DataParallel) {
      double psi = maxModelParams(stage, 32e9, degree, kK);
      EXPECT_DOUBLE_EQ(modelStateBytes(stage, psi, degree, kK), 32e9);
    }
}

TEST(PaperTable1Test, EveryCellMatchesThePaper) {
  for (int m = 0; m < 3; ++m)
    for (int d = 0; d < 6; ++d)
      for (int s = 0; s < 3; ++s)
        EXPECT_EQ(table1Cell(kTable1Models[m].numParams, kTable1DataParallel[d],
                             kTable1Stages[s]),
                  kPaperTable1[m][d][s])
            << kTable1Models[m].name
            << " model, N_d = " << kTable1DataParallel[d] << ", "
            << paperStageName(kTable1Stages[s]);
}

TEST(PaperTable1Test, BoldCellsAreTheFirstToFit32GB) {
  std::set<std::tuple<int, int, int>> bold;
  for (int m = 0; m < 3; ++m)
    for (int d = 0; d < 6; ++d)
      for (int s = 0; s < 3; ++s)
        if (table1CellIsBold(kTable1Models[m].numParams, kTable1DataParallel[d],
                             kTable1Stages[s]))
          bold.insert({m, d, s});
  EXPECT_EQ(bold, kPaperTable1Bold);
}

TEST(PaperTable1Test, BaselineIsTheFirstRow) {
  for (const PaperModel &model : kTable1Models)
    for (int64_t degree : kTable1DataParallel)
      EXPECT_EQ(table1Cell(model.numParams, degree, ZeroStage::DataParallel),
                table1Cell(model.numParams, 1, ZeroStage::Parameters));
}

// The paper truncates these eight cells; rounding would end each in one more.
TEST(PaperTable1Test, TruncatedCellsWouldRoundUp) {
  auto gigabytes = [](double numParams, int64_t degree, ZeroStage stage) {
    return table1Bytes(numParams, degree, stage) / 1e9;
  };
  EXPECT_EQ(gigabytes(128e9, 1024, ZeroStage::OptimizerStates), 513.5);
  EXPECT_EQ(gigabytes(128e9, 1024, ZeroStage::Gradients), 257.75);
  EXPECT_EQ(gigabytes(1e12, 64, ZeroStage::OptimizerStates), 4187.5);
  EXPECT_EQ(gigabytes(1e12, 64, ZeroStage::Gradients), 2218.75);
  EXPECT_EQ(gigabytes(1e12, 256, ZeroStage::OptimizerStates), 4046.875);
  EXPECT_EQ(gigabytes(1e12, 256, ZeroStage::Gradients), 2054.6875);
  EXPECT_EQ(gigabytes(1e12, 1024, ZeroStage::OptimizerStates), 4011.71875);
  EXPECT_EQ(gigabytes(1e12, 1024, ZeroStage::Gradients), 2013.671875);
}

TEST(PaperTable1Test, RoundingBoundaries) {
  EXPECT_EQ(formatGigabytesLikeTable1(41.25e9), "41.3"); // half up
  EXPECT_EQ(formatGigabytesLikeTable1(99.96e9), "100");  // rounds across
  EXPECT_EQ(formatGigabytesLikeTable1(100.99e9), "100"); // truncated
  EXPECT_EQ(formatGigabytesLikeTable1(9.995e9), "10");   // 0.01 GB step
  EXPECT_EQ(formatGigabytesLikeTable1(0.004e9), "0");
}

TEST(PaperTable2Test, EveryTheoreticalCellMatchesThePaper) {
  for (int r = 0; r < 5; ++r)
    for (int s = 0; s < 4; ++s)
      EXPECT_EQ(table2Cell(kTable2Stages[s], kTable2ModelParallel[r]),
                kPaperTable2[r][s])
          << "MP = " << kTable2ModelParallel[r] << ", "
          << paperStageName(kTable2Stages[s]);
}

// The paper scales its rounded MP = 1 cells by MP; rounding each cell
// directly would print these seven differently.
TEST(PaperTable2Test, ScaledCellsDifferFromDirectRounding) {
  auto billions = [](ZeroStage stage, int64_t mp) {
    return table2Params(stage, mp) / 1e9;
  };
  EXPECT_NEAR(billions(ZeroStage::OptimizerStates, 2), 15.28, 0.01);
  EXPECT_NEAR(billions(ZeroStage::OptimizerStates, 4), 30.57, 0.01);
  EXPECT_NEAR(billions(ZeroStage::OptimizerStates, 8), 61.13, 0.01);
  EXPECT_NEAR(billions(ZeroStage::OptimizerStates, 16), 122.27, 0.01);
  EXPECT_NEAR(billions(ZeroStage::Gradients, 4), 57.69, 0.01);
  EXPECT_NEAR(billions(ZeroStage::Gradients, 8), 115.38, 0.01);
  EXPECT_NEAR(billions(ZeroStage::Gradients, 16), 230.76, 0.01);
  // Exactly representable ones agree: 2B x MP and 128B x MP.
  EXPECT_EQ(billions(ZeroStage::DataParallel, 16), 32.0);
  EXPECT_EQ(billions(ZeroStage::Parameters, 4), 512.0);
}

} // namespace

// Korthikanti et al.'s eq. 1 by hand for the tutorial's 10B model (L 50,
// h 4096, a 32, s 1024, b 1): 34 + 5 a s / h = 34 + 40 = 74 bytes per
// s b h element per layer; checkpointed, 2 s b h per layer plus one layer.
TEST(ActivationMemoryTest, TutorialTenBillionByHand) {
  TransformerShape shape{50, 4096, 32, 1024, 1};
  double sbh = 1024.0 * 4096.0;
  EXPECT_DOUBLE_EQ(layerActivationBytes(shape), sbh * 74);
  EXPECT_DOUBLE_EQ(activationBytes(shape), 50 * sbh * 74);
  EXPECT_DOUBLE_EQ(checkpointedActivationBytes(shape), 2 * sbh * 50 + sbh * 74);
  // 15.5 GB without checkpointing, 0.73 GB with: the 10B model's 25.1 GB
  // of stage-2 model states on 32 GPUs fit a 32 GB V100 only with it.
  EXPECT_NEAR(activationBytes(shape) / 1e9, 15.52, 0.01);
  EXPECT_NEAR(checkpointedActivationBytes(shape) / 1e9, 0.73, 0.01);
  EXPECT_GT(modelStateBytes(ZeroStage::Gradients, 10279047168.0, 32,
                            kMixedPrecisionAdamK) +
                activationBytes(shape),
            32e9);
  EXPECT_LT(modelStateBytes(ZeroStage::Gradients, 10279047168.0, 32,
                            kMixedPrecisionAdamK) +
                checkpointedActivationBytes(shape),
            32e9);
}
