//===- checkpoint_test.cc - saving and loading across layouts -------------===//
//
// A checkpoint of a two-rank plan saved through begin/write/commit, with
// every element of every variable distinct in every byte, then loaded into
// plans of one, two and three ranks whose layouts all differ: every loaded
// byte is checked against the model, padding against zero. Also what
// openCheckpoint, checkCompatible and verifyCheckpointFile refuse (devices
// in place of files, an edited manifest), pruning to `keep` around the
// checkpoints readers hold, a step saved twice, and partial directories.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/core/Error.h"
#include "runtime/io/DurableFile.h"

#include "test_files.h"
#include "test_plans.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace zerosbp::runtime;
using namespace zerosbp::testing;

namespace {

/// Saves `plan` at `step` into `directory` as a training session does:
/// every rank's shard holds the model bytes, its padding 0xEE.
std::string saveCheckpoint(const Plan &plan, const std::string &directory,
                           int64_t step, int keep, uint64_t seed = 17) {
  ::mkdir(directory.c_str(), 0755); // As the trainer does, to lock it.
  DirectoryLock lock(directory);
  std::string partial = beginCheckpoint(directory, step);
  EXPECT_EQ(partial, partialCheckpointPath(directory, step));
  CheckpointManifest manifest = manifestOfPlan(plan, step, seed);
  for (int rank = 0; rank < plan.world; ++rank) {
    std::vector<std::vector<unsigned char>> shards;
    for (const PlanVariable &variable : plan.variables)
      shards.push_back(shardBytes(variable, rank, 0xEE));
    FileDigest digest = writeRankCheckpoint(
        plan, rank, partial,
        [&](int variable, int64_t offset, void *out, int64_t bytes) {
          ASSERT_LE(offset + bytes,
                    static_cast<int64_t>(shards[variable].size()));
          std::copy(shards[variable].begin() + offset,
                    shards[variable].begin() + offset + bytes,
                    static_cast<unsigned char *>(out));
        });
    manifest.files[rank].bytes = digest.bytes;
    manifest.files[rank].crc32 = digest.crc32;
  }
  return commitCheckpoint(directory, partial, manifest, keep);
}

/// Loads every rank of `plan` from `checkpoint` and checks each byte of
/// each shard: the model's bytes, zero in padding.
void expectLoadsExactly(const OpenedCheckpoint &checkpoint, const Plan &plan) {
  checkCompatible(checkpoint, plan);
  for (int rank = 0; rank < plan.world; ++rank) {
    std::vector<std::vector<unsigned char>> loaded;
    std::vector<std::vector<int>> writes;
    for (const PlanVariable &variable : plan.variables) {
      size_t bytes = static_cast<size_t>(shardElements(variable.shards[rank]) *
                                         dtypeBytes(variable.dtype));
      loaded.emplace_back(bytes, 0x55);
      writes.emplace_back(bytes, 0);
    }
    LoadStats stats;
    loadRankCheckpoint(
        checkpoint, plan, rank,
        [&](int variable, int64_t offset, const void *data, int64_t bytes) {
          ASSERT_GE(offset, 0);
          ASSERT_LE(offset + bytes,
                    static_cast<int64_t>(loaded[variable].size()));
          const auto *from = static_cast<const unsigned char *>(data);
          for (int64_t i = 0; i < bytes; ++i) {
            loaded[variable][offset + i] = from[i];
            ++writes[variable][offset + i];
          }
        },
        &stats);
    int64_t modelBytes = 0;
    for (size_t v = 0; v < plan.variables.size(); ++v) {
      const PlanVariable &variable = plan.variables[v];
      std::vector<unsigned char> expected = shardBytes(variable, rank, 0);
      EXPECT_EQ(loaded[v], expected)
          << variable.name << " on rank " << rank << " of " << plan.world;
      std::vector<int64_t> model =
          bruteForceModelIndices(layoutOf(variable), variable.shards[rank]);
      for (int64_t element : model)
        modelBytes += element >= 0 ? dtypeBytes(variable.dtype) : 0;
      // Every byte written, and each model byte from one piece only where
      // the checkpoint's pieces do not overlap.
      for (size_t i = 0; i < writes[v].size(); ++i)
        ASSERT_EQ(writes[v][i], 1)
            << variable.name << " byte " << i << " on rank " << rank;
    }
    EXPECT_EQ(stats.bytesRead, modelBytes) << "rank " << rank;
    EXPECT_GT(stats.bufferBytes, 0);
    EXPECT_LE(stats.bufferBytes, kCheckpointChunkBytes);
  }
}

TEST(Checkpoint, SavesAtomicallyAndNamesTheStep) {
  std::string directory = makeTestDirectory() + "/ckpt";
  Plan plan = planOnTwoRanks();
  EXPECT_EQ(checkpointName(20), "step-00000020");
  std::string saved = saveCheckpoint(plan, directory, 20, 0);
  EXPECT_EQ(saved, directory + "/step-00000020");
  EXPECT_EQ(readFile(directory + "/latest"), "step-00000020\n");
  EXPECT_EQ(listDirectory(directory),
            (std::vector<std::string>{"latest", "lock", "step-00000020"}));
  EXPECT_EQ(listDirectory(saved),
            (std::vector<std::string>{"manifest.json",
                                      "rank-00000-of-00002.safetensors",
                                      "rank-00001-of-00002.safetensors"}));
  OpenedCheckpoint opened = openCheckpoint(directory);
  EXPECT_EQ(opened.directory, saved);
  EXPECT_EQ(opened.manifestPath(), saved + "/manifest.json");
  EXPECT_EQ(opened.filePath(1), saved + "/rank-00001-of-00002.safetensors");
  EXPECT_EQ(opened.manifest.step, 20);
  EXPECT_EQ(opened.manifest.seed, 17u);
  // The manifest's sizes and CRCs are those of the files.
  for (int rank = 0; rank < 2; ++rank) {
    std::string file = readFile(opened.filePath(rank));
    EXPECT_EQ(opened.manifest.files[rank].bytes,
              static_cast<int64_t>(file.size()));
    EXPECT_EQ(opened.manifest.files[rank].crc32, bitwiseCrc32(file));
    EXPECT_NO_THROW(verifyCheckpointFile(opened, rank));
  }
  // The step directory opens directly too.
  EXPECT_EQ(openCheckpoint(saved).manifest.step, 20);
  // Rank 1 does not write the replicated "w" again.
  SafetensorsReader rank1(opened.filePath(1));
  EXPECT_EQ(rank1.header().find("w"), nullptr);
  ASSERT_NE(rank1.header().find("b"), nullptr);
  EXPECT_EQ(rank1.header().find("b")->shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(rank1.header().metadata.at("rank"), "1");
  EXPECT_EQ(rank1.header().metadata.at("world"), "2");
}

TEST(Checkpoint, LoadsIntoEveryLayout) {
  std::string directory = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOnTwoRanks(), directory, 3, 0);
  OpenedCheckpoint opened = openCheckpoint(directory);
  {
    SCOPED_TRACE("same layout");
    expectLoadsExactly(opened, planOnTwoRanks());
  }
  {
    SCOPED_TRACE("three ranks");
    expectLoadsExactly(opened, planOnThreeRanks());
  }
  {
    SCOPED_TRACE("one rank");
    expectLoadsExactly(opened, planOnOneRank());
  }
  // And back: saved from three ranks, loaded into two and one.
  std::string other = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOnThreeRanks(), other, 4, 0);
  OpenedCheckpoint fromThree = openCheckpoint(other);
  {
    SCOPED_TRACE("from three ranks to two");
    expectLoadsExactly(fromThree, planOnTwoRanks());
  }
  {
    SCOPED_TRACE("from three ranks to one");
    expectLoadsExactly(fromThree, planOnOneRank());
  }
}

// Tensor parallelism with ZeRO: a row per part of the model tensor,
// flattened and padded, its columns split over the data axis. Its
// checkpoints load into every other layout, and every layout's into it.
TEST(Checkpoint, ReshardsModelSplitPartitions) {
  std::vector<std::pair<std::string, Plan>> others = {
      {"four model parts", planOfFourModelParts()},
      {"flat partitions", planOfFlatPartitions()},
      {"whole tensors", planOfWholeTensors()},
      {"column boxes", planOfColumnBoxes()}};
  std::string directory = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOfModelSplits(), directory, 5, 0);
  OpenedCheckpoint opened = openCheckpoint(directory);
  const CheckpointTensor &w = *opened.manifest.findTensor("w");
  ASSERT_TRUE(w.layout.modelSplit);
  EXPECT_EQ(w.layout.modelSplit->dim, 1);
  EXPECT_EQ(w.layout.modelSplit->parts, 2);
  {
    SCOPED_TRACE("same layout");
    expectLoadsExactly(opened, planOfModelSplits());
  }
  for (const auto &[name, plan] : others) {
    SCOPED_TRACE("model splits to " + name);
    expectLoadsExactly(opened, plan);
  }
  for (const auto &[name, plan] : others) {
    SCOPED_TRACE(name + " to model splits");
    std::string other = makeTestDirectory() + "/ckpt";
    saveCheckpoint(plan, other, 6, 0);
    expectLoadsExactly(openCheckpoint(other), planOfModelSplits());
  }
}

TEST(Checkpoint, ReadsOnlyTheFilesARankNeeds) {
  std::string directory = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOnTwoRanks(), directory, 1, 0);
  OpenedCheckpoint opened = openCheckpoint(directory);
  Plan three = planOnThreeRanks();
  // Rank 0 of three: rows 0-1 of w (rank 0's file), elements 0..7 of
  // w.master (rank 0), 0..5 of w.exp_avg (rank 0), row 0 of b (both files:
  // split by columns), all of e (both).
  EXPECT_EQ(filesReadBy(opened, three, 0), (std::vector<int>{0, 1}));
  Plan one = planOnOneRank();
  EXPECT_EQ(filesReadBy(opened, one, 0), (std::vector<int>{0, 1}));
  // Brute force: a rank reads a file iff some piece in it holds a model
  // element of one of the rank's shards.
  for (int rank = 0; rank < three.world; ++rank) {
    std::vector<int> expected;
    for (int file = 0; file < 2; ++file) {
      bool reads = false;
      for (const PlanVariable &variable : three.variables) {
        std::vector<int64_t> wanted =
            bruteForceModelIndices(layoutOf(variable), variable.shards[rank]);
        const CheckpointTensor *tensor =
            opened.manifest.findTensor(variable.name);
        for (const CheckpointPiece &piece : tensor->pieces) {
          if (piece.rank != file)
            continue;
          std::vector<int64_t> held =
              bruteForceModelIndices(tensor->layout, piece.ranges);
          for (int64_t element : wanted)
            reads |= element >= 0 &&
                     std::find(held.begin(), held.end(), element) != held.end();
        }
      }
      if (reads)
        expected.push_back(file);
    }
    EXPECT_EQ(filesReadBy(opened, three, rank), expected) << "rank " << rank;
  }
}

TEST(CheckpointReader, ReadsEachOverlapInChunksOfTheLongest) {
  std::string directory = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOnTwoRanks(), directory, 1, 0);
  OpenedCheckpoint opened = openCheckpoint(directory);
  const CheckpointTensor &master = *opened.manifest.findTensor("w.master");
  // Model element 0, then 2..11: both from rank 0's piece [0, 12), the
  // short overlap first. Each overlap fits a chunk: one call each.
  std::vector<ShardRun> target = {{0, 0, 1}, {2, 1, 10}};
  std::vector<unsigned char> loaded(11 * 4, 0);
  std::vector<int64_t> calls;
  CheckpointReader reader(opened);
  reader.read(master, target,
              [&](int64_t element, const void *data, int64_t count) {
                calls.push_back(count);
                std::memcpy(loaded.data() + element * 4, data, count * 4);
              });
  EXPECT_EQ(calls, (std::vector<int64_t>{1, 10}));
  std::vector<unsigned char> expected;
  for (int64_t element : {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
    for (size_t k = 0; k < 4; ++k)
      expected.push_back(modelByte("w.master", element, k));
  EXPECT_EQ(loaded, expected);
  EXPECT_EQ(reader.stats().bytesRead, 44);
  EXPECT_EQ(reader.stats().bufferBytes, 40);
}

TEST(Checkpoint, VerifyCatchesCorruptAndTruncatedFiles) {
  std::string directory = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOnTwoRanks(), directory, 2, 0);
  OpenedCheckpoint opened = openCheckpoint(directory);
  std::string path = opened.filePath(1);
  std::string good = readFile(path);
  char expected[16];
  std::snprintf(expected, sizeof(expected), "%08x",
                opened.manifest.files[1].crc32);

  std::string flipped = good;
  flipped[flipped.size() - 1] ^= 0x01;
  writeFile(path, flipped);
  char actual[16];
  std::snprintf(actual, sizeof(actual), "%08x", bitwiseCrc32(flipped));
  EXPECT_EQ(errorOf([&] { verifyCheckpointFile(opened, 1); }),
            path + ": CRC-32 " + actual + ", but the manifest says " +
                expected + " (corrupt)");
  EXPECT_NO_THROW(verifyCheckpointFile(opened, 0));

  writeFile(path, good.substr(0, good.size() - 10));
  EXPECT_EQ(errorOf([&] { verifyCheckpointFile(opened, 1); }),
            path + ": " + std::to_string(good.size() - 10) +
                " bytes, but the manifest says " + std::to_string(good.size()) +
                " (truncated)");
  writeFile(path, good + "x");
  EXPECT_EQ(errorOf([&] { verifyCheckpointFile(opened, 1); }),
            path + ": " + std::to_string(good.size() + 1) +
                " bytes, but the manifest says " + std::to_string(good.size()));
  ::unlink(path.c_str());
  EXPECT_EQ(errorOf([&] { verifyCheckpointFile(opened, 1); }),
            path + ": cannot open (No such file or directory)");

  // A file whose size and CRC the manifest matches but whose tensors are
  // not the manifest's: rank 0's file under rank 1's name. w.master,
  // w.exp_avg and b have the same block shapes on both ranks; e does not.
  std::string rank0 = readFile(opened.filePath(0));
  writeFile(path, rank0);
  OpenedCheckpoint swapped = opened;
  swapped.manifest.files[1].bytes = swapped.manifest.files[0].bytes;
  swapped.manifest.files[1].crc32 = swapped.manifest.files[0].crc32;
  EXPECT_EQ(errorOf([&] { verifyCheckpointFile(swapped, 1); }),
            path + ": tensor 'e' is F64 (4,), the manifest says F64 (3,)");
  // A block the manifest places in a file that lacks it.
  writeFile(path, good);
  OpenedCheckpoint moved = opened;
  moved.manifest.tensors[0].pieces[0].rank = 1;
  EXPECT_EQ(errorOf([&] { verifyCheckpointFile(moved, 1); }),
            path + ": tensor 'w' is in the manifest but not in the file");
  EXPECT_NO_THROW(verifyCheckpointFile(opened, 1));
}

TEST(Checkpoint, OpenSaysWhyItIsNotACheckpoint) {
  std::string root = makeTestDirectory();
  EXPECT_EQ(errorOf([&] { openCheckpoint(root + "/none"); }),
            root + "/none: no such checkpoint directory");
  EXPECT_EQ(errorOf([&] { openCheckpoint(root); }),
            root + ": not a checkpoint (no manifest.json or latest in it)");
  writeFile(root + "/latest", "../../etc\n");
  EXPECT_EQ(errorOf([&] { openCheckpoint(root); }),
            root + "/latest: does not name a checkpoint ('../../etc')");
  writeFile(root + "/latest", "step-00000009\n");
  EXPECT_EQ(errorOf([&] { openCheckpoint(root); }),
            root + "/latest: names step-00000009, which has no manifest.json");
  ::mkdir((root + "/step-00000009").c_str(), 0755);
  writeFile(root + "/step-00000009/manifest.json", "{\"format\": ");
  EXPECT_EQ(errorOf([&] { openCheckpoint(root); }),
            root + "/step-00000009/manifest.json: not JSON (truncated or "
                   "corrupt)");
}

TEST(Checkpoint, CheckCompatibleNamesTheDifference) {
  std::string directory = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOnTwoRanks(), directory, 2, 0);
  OpenedCheckpoint opened = openCheckpoint(directory);
  std::string source = opened.manifestPath() + ": ";

  Plan plan = planOnThreeRanks();
  plan.variables[0].globalShape = {4, 7};
  EXPECT_EQ(errorOf([&] { checkCompatible(opened, plan); }),
            source + "tensor 'w': shape (4, 6) in the checkpoint but (4, 7) "
                     "in the plan");
  plan = planOnThreeRanks();
  plan.variables[4].globalShape = {8};
  EXPECT_EQ(errorOf([&] { checkCompatible(opened, plan); }),
            source + "tensor 'e': shape (7,) in the checkpoint but (8,) in "
                     "the plan");
  plan = planOnThreeRanks();
  plan.variables[3].dtype = DType::F32;
  EXPECT_EQ(errorOf([&] { checkCompatible(opened, plan); }),
            source + "tensor 'b': dtype bf16 in the checkpoint but f32 in the "
                     "plan");
  plan = planOnThreeRanks();
  plan.variables[2].role = Role::Master;
  EXPECT_EQ(errorOf([&] { checkCompatible(opened, plan); }),
            source + "tensor 'w.exp_avg': role opt_state in the checkpoint "
                     "but master in the plan");
  plan = planOnThreeRanks();
  plan.variables[2].name = "w.exp_avg_sq";
  EXPECT_EQ(errorOf([&] { checkCompatible(opened, plan); }),
            source + "tensor 'w.exp_avg_sq' of the plan is not in the "
                     "checkpoint (another model, optimizer or precision?)");
  plan = planOnThreeRanks();
  plan.variables.pop_back();
  EXPECT_EQ(errorOf([&] { checkCompatible(opened, plan); }),
            source + "tensor 'e' of the checkpoint is not in the plan "
                     "(another model, optimizer or precision?)");
  plan = planOnThreeRanks();
  plan.configJson = R"({"optimizer": {"type": "SGD"}})";
  EXPECT_EQ(errorOf([&] { checkCompatible(opened, plan); }),
            source + "config: optimizer.type is 'Adam' in the checkpoint but "
                     "'SGD' in the plan");
  // Without an optimizer type on either side, and another world and
  // stage: compatible.
  plan.configJson = "{}";
  EXPECT_NO_THROW(checkCompatible(opened, plan));
}

TEST(Checkpoint, KeepsTheNewestAndReplacesAStepSavedAgain) {
  std::string directory = makeTestDirectory() + "/ckpt";
  Plan plan = planOnTwoRanks();
  for (int64_t step : {1, 2, 3, 4})
    saveCheckpoint(plan, directory, step, 2);
  EXPECT_EQ(listDirectory(directory),
            (std::vector<std::string>{"latest", "lock", "step-00000003",
                                      "step-00000004"}));
  EXPECT_EQ(readFile(directory + "/latest"), "step-00000004\n");
  // A partial directory a killed save left is removed by the next save.
  ::mkdir((directory + "/.partial-step-00000005").c_str(), 0755);
  writeFile(directory + "/.partial-step-00000005/rank-00000-of-00002."
                        "safetensors",
            "half");
  // A run resumed from step 3 saves step 3 again, with another seed: it
  // replaces the old one and becomes latest, though step 4 is newer; keep
  // 2 then prunes nothing it just wrote.
  saveCheckpoint(plan, directory, 3, 2, 99);
  EXPECT_EQ(listDirectory(directory),
            (std::vector<std::string>{"latest", "lock", "step-00000003",
                                      "step-00000004"}));
  EXPECT_EQ(readFile(directory + "/latest"), "step-00000003\n");
  {
    OpenedCheckpoint opened = openCheckpoint(directory);
    EXPECT_EQ(opened.manifest.step, 3);
    EXPECT_EQ(opened.manifest.seed, 99u);
  }
  // Keep 1: only the one just saved.
  saveCheckpoint(plan, directory, 5, 1);
  EXPECT_EQ(listDirectory(directory),
            (std::vector<std::string>{"latest", "lock", "step-00000005"}));
}

TEST(Checkpoint, AbandonRemovesThePartialSave) {
  std::string directory = makeTestDirectory() + "/ckpt";
  std::string partial = beginCheckpoint(directory, 8);
  EXPECT_EQ(partial, directory + "/.partial-step-00000008");
  writeFile(partial + "/rank-00000-of-00002.safetensors", "x");
  abandonCheckpoint(partial);
  EXPECT_TRUE(listDirectory(directory).empty());
  // A checkpoint directory that cannot be made.
  writeFile(directory + "/file", "x");
  EXPECT_THAT(
      errorOf([&] { beginCheckpoint(directory + "/file", 8); }),
      ::testing::StartsWith(directory + "/file: cannot create directory ("));
}

TEST(Checkpoint, RefusesDevicesInPlaceOfItsFiles) {
  std::string directory = makeTestDirectory() + "/ckpt";
  std::string saved = saveCheckpoint(planOnTwoRanks(), directory, 2, 0);
  std::string rank1 = saved + "/rank-00001-of-00002.safetensors";
  // A rank file that reads without end.
  {
    OpenedCheckpoint opened = openCheckpoint(directory);
    ::unlink(rank1.c_str());
    ASSERT_EQ(::symlink("/dev/zero", rank1.c_str()), 0);
    EXPECT_EQ(errorOf([&] { verifyCheckpointFile(opened, 1); }),
              rank1 + ": is a character device, not a checkpoint file");
  }
  std::string manifest = saved + "/manifest.json";
  ::unlink(manifest.c_str());
  ASSERT_EQ(::symlink("/dev/zero", manifest.c_str()), 0);
  EXPECT_EQ(errorOf([&] { openCheckpoint(directory); }),
            manifest + ": is a character device, not the checkpoint manifest");
  std::string latest = directory + "/latest";
  ::unlink(latest.c_str());
  ASSERT_EQ(::symlink("/dev/zero", latest.c_str()), 0);
  EXPECT_EQ(errorOf([&] { openCheckpoint(directory); }),
            latest + ": is a character device, not the checkpoint's latest");
}

TEST(Checkpoint, RefusesAnEditedManifest) {
  std::string directory = makeTestDirectory() + "/ckpt";
  std::string saved = saveCheckpoint(planOnTwoRanks(), directory, 2, 0);
  std::string path = saved + "/manifest.json";
  std::string text = readFile(path);
  for (const char *key : {"\"step\": 2", "\"next_step\": 2"}) {
    size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    text.replace(at + std::strlen(key) - 1, 1, "400");
  }
  writeFile(path, text);
  size_t restAt = text.find('\n', 2) + 1;
  char actual[16];
  std::snprintf(actual, sizeof(actual), "%08x",
                bitwiseCrc32(text.substr(restAt)));
  EXPECT_EQ(errorOf([&] { openCheckpoint(directory); }),
            path + ": checksum: the manifest's CRC-32 is " + actual +
                ", not the " + text.substr(restAt - 11, 8) +
                " it was saved with (edited or corrupt)");
}

TEST(Checkpoint, OpensAVersion1ManifestWithOneWarning) {
  std::string directory = makeTestDirectory() + "/ckpt";
  std::string saved = saveCheckpoint(planOnTwoRanks(), directory, 2, 0);
  std::string path = saved + "/manifest.json";
  // As a build before the checksum wrote it.
  std::string text = readFile(path);
  std::string rest = text.substr(text.find('\n', 2) + 1);
  size_t version = rest.find("\"version\": 2");
  ASSERT_NE(version, std::string::npos);
  rest[version + 11] = '1';
  writeFile(path, "{\n" + rest);
  ::testing::internal::CaptureStderr();
  OpenedCheckpoint opened = openCheckpoint(directory);
  OpenedCheckpoint again = openCheckpoint(directory);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "warning: " + path +
                ": format version 1 has no checksum of the manifest, so an "
                "edit of it goes undetected\n");
  EXPECT_FALSE(opened.checksummed);
  EXPECT_EQ(opened.manifest.version, 1);
  expectLoadsExactly(opened, planOnThreeRanks());
  // Without its checksum line, a version 2 manifest is refused.
  writeFile(path, "{\n" + text.substr(text.find('\n', 2) + 1));
  EXPECT_EQ(errorOf([&] { openCheckpoint(directory); }),
            path + ": checksum: not on the manifest's second line (edited or "
                   "corrupt)");
}

TEST(Checkpoint, PruningLeavesTheCheckpointsReadersHold) {
  std::string directory = makeTestDirectory() + "/ckpt";
  Plan plan = planOnTwoRanks();
  saveCheckpoint(plan, directory, 1, 1);
  {
    OpenedCheckpoint reading = openCheckpoint(directory);
    ASSERT_EQ(reading.manifest.step, 1);
    saveCheckpoint(plan, directory, 2, 1);
    saveCheckpoint(plan, directory, 3, 1);
    // Step 1 is read: it stays, whole, and loads; step 2 goes.
    EXPECT_EQ(listDirectory(directory),
              (std::vector<std::string>{"latest", "lock", "step-00000001",
                                        "step-00000003"}));
    for (int rank = 0; rank < 2; ++rank)
      EXPECT_NO_THROW(verifyCheckpointFile(reading, rank));
    expectLoadsExactly(reading, planOnThreeRanks());
  }
  // Released: the next save prunes it.
  saveCheckpoint(plan, directory, 4, 1);
  EXPECT_EQ(listDirectory(directory),
            (std::vector<std::string>{"latest", "lock", "step-00000004"}));
}

TEST(Checkpoint, ASaveOfTheSameStepWaitsForItsReaders) {
  std::string directory = makeTestDirectory() + "/ckpt";
  Plan plan = planOnTwoRanks();
  saveCheckpoint(plan, directory, 3, 0, 1);
  std::atomic<bool> released{false};
  auto reading = std::make_unique<OpenedCheckpoint>(openCheckpoint(directory));
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    expectLoadsExactly(*reading, planOnOneRank());
    EXPECT_EQ(reading->manifest.seed, 1u);
    released = true;
    reading.reset();
  });
  // Step 3 again, with another seed: it replaces the one read once that
  // one is done.
  saveCheckpoint(plan, directory, 3, 0, 2);
  EXPECT_TRUE(released);
  reader.join();
  EXPECT_EQ(openCheckpoint(directory).manifest.seed, 2u);
  EXPECT_EQ(listDirectory(directory),
            (std::vector<std::string>{"latest", "lock", "step-00000003"}));
}

TEST(Checkpoint, ListsAndRemovesPartialDirectories) {
  std::string directory = makeTestDirectory() + "/ckpt";
  saveCheckpoint(planOnTwoRanks(), directory, 2, 0);
  EXPECT_TRUE(partialCheckpoints(directory).empty());
  EXPECT_EQ(removePartialCheckpoints(directory), "");
  for (const char *name : {".partial-step-00000004", ".partial-pruned-step-"
                                                     "00000001"}) {
    ::mkdir((directory + "/" + name).c_str(), 0755);
    writeFile(directory + "/" + name + "/rank-00000-of-00002.safetensors",
              std::string(std::strlen(name), 'x'));
  }
  using Partials = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(partialCheckpoints(directory),
            (Partials{{".partial-pruned-step-00000001", 29},
                      {".partial-step-00000004", 22}}));
  EXPECT_EQ(removePartialCheckpoints(directory),
            directory + ": removed what an interrupted save left: "
                        ".partial-pruned-step-00000001 (29 bytes), "
                        ".partial-step-00000004 (22 bytes)");
  EXPECT_EQ(listDirectory(directory),
            (std::vector<std::string>{"latest", "lock", "step-00000002"}));
}

} // namespace
