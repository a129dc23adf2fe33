//===- manifest_test.cc - the checkpoint manifest -------------------------===//
//
// manifestOfPlan and variablesOwnedBy on a plan built here, a round trip
// through manifestJson and parseManifest that keeps every field, and one
// mutation of a valid manifest per check the parser makes, each against its
// exact message. The manifest file's checksum: written as documented,
// refusing every edit of the file, and absent only from version 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Manifest.h"
#include "runtime/core/Error.h"

#include "test_files.h"
#include "test_plans.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace zerosbp::runtime;
using namespace zerosbp::testing;
using Json = nlohmann::json;

namespace {

CheckpointManifest sampleManifest() {
  CheckpointManifest manifest =
      manifestOfPlan(planOnTwoRanks(), 7, (uint64_t(1) << 63) + 5);
  manifest.files[0].bytes = 1234;
  manifest.files[0].crc32 = 0xdeadbeef;
  manifest.files[1].bytes = 0;
  manifest.files[1].crc32 = 0x0000000f;
  return manifest;
}

void expectSameManifest(const CheckpointManifest &a,
                        const CheckpointManifest &b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.world, b.world);
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.function, b.function);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.hierarchy, b.hierarchy);
  EXPECT_EQ(Json::parse(a.configJson), Json::parse(b.configJson));
  EXPECT_EQ(a.seed, b.seed);
  ASSERT_EQ(a.files.size(), b.files.size());
  for (size_t i = 0; i < a.files.size(); ++i) {
    EXPECT_EQ(a.files[i].name, b.files[i].name);
    EXPECT_EQ(a.files[i].rank, b.files[i].rank);
    EXPECT_EQ(a.files[i].bytes, b.files[i].bytes);
    EXPECT_EQ(a.files[i].crc32, b.files[i].crc32);
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const CheckpointTensor &x = a.tensors[i];
    const CheckpointTensor &y = b.tensors[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.role, y.role) << x.name;
    EXPECT_EQ(x.dtype, y.dtype) << x.name;
    EXPECT_EQ(x.layout.modelShape, y.layout.modelShape) << x.name;
    EXPECT_EQ(x.layout.globalShape, y.layout.globalShape) << x.name;
    EXPECT_EQ(x.layout.flat, y.layout.flat) << x.name;
    EXPECT_EQ(x.layout.modelSplit, y.layout.modelSplit) << x.name;
    EXPECT_EQ(x.sbp, y.sbp) << x.name;
    EXPECT_EQ(x.copyOf, y.copyOf) << x.name;
    ASSERT_EQ(x.pieces.size(), y.pieces.size()) << x.name;
    for (size_t p = 0; p < x.pieces.size(); ++p) {
      EXPECT_EQ(x.pieces[p].rank, y.pieces[p].rank) << x.name;
      EXPECT_EQ(x.pieces[p].ranges, y.pieces[p].ranges) << x.name;
    }
  }
}

TEST(Manifest, SpreadsReplicatedBlocksOverTheRanks) {
  // Stage 0 on 3 ranks: everything replicated. By hand: a (40 B) goes to
  // rank 0; b (40 B) to rank 1, the first with 0 B; c (8 B) to rank 2;
  // d (16 B) to rank 2 again (8 B < 40 B); e (4 B) to rank 2 (24 B < 40 B);
  // f (20 B) to rank 2 (28 B < 40 B); then g (4 B) to rank 0, the
  // lowest of the ranks with 40 B.
  Plan plan = emptyPlan(3, 0);
  auto replicated = [](const std::string &name, int64_t elements) {
    Shards shards(3, {{0, elements}});
    return boxVariable(name, Role::Param, DType::F32, {elements}, {"B"},
                       shards);
  };
  for (auto [name, elements] :
       std::vector<std::pair<std::string, int64_t>>{{"a", 10},
                                                    {"b", 10},
                                                    {"c", 2},
                                                    {"d", 4},
                                                    {"e", 1},
                                                    {"f", 5},
                                                    {"g", 1}})
    plan.variables.push_back(replicated(name, elements));
  EXPECT_EQ(blockWriters(plan),
            (std::vector<std::vector<int>>{{0}, {1}, {2}, {2}, {2}, {2}, {0}}));
  EXPECT_EQ(variablesOwnedBy(plan, 0), (std::vector<int>{0, 6}));
  EXPECT_EQ(variablesOwnedBy(plan, 1), (std::vector<int>{1}));
  EXPECT_EQ(variablesOwnedBy(plan, 2), (std::vector<int>{2, 3, 4, 5}));
  // A partitioned variable is written by every rank, and counts.
  plan.variables.insert(plan.variables.begin(),
                        flatVariable("s", Role::OptState, DType::F32, {30}, 30,
                                     3)); // 40 B a rank
  EXPECT_EQ(blockWriters(plan)[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(blockWriters(plan)[1], (std::vector<int>{0}));
  CheckpointManifest manifest = manifestOfPlan(plan, 1, 0);
  EXPECT_EQ(manifest.findTensor("b")->pieces.front().rank, 1);
}

TEST(Manifest, DescribesThePlansVariablesAndOwners) {
  Plan plan = planOnTwoRanks();
  // "w" is replicated: rank 1 holds the same block as rank 0.
  EXPECT_EQ(variablesOwnedBy(plan, 0), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(variablesOwnedBy(plan, 1), (std::vector<int>{1, 2, 3, 4}));
  Plan three = planOnThreeRanks();
  // "e" is replicated over all three.
  EXPECT_EQ(variablesOwnedBy(three, 2), (std::vector<int>{0, 1, 2, 3}));

  CheckpointManifest manifest = manifestOfPlan(plan, 7, 99);
  EXPECT_EQ(manifest.version, kCheckpointVersion);
  EXPECT_EQ(manifest.step, 7);
  EXPECT_EQ(manifest.seed, 99u);
  EXPECT_EQ(manifest.world, 2);
  EXPECT_EQ(manifest.stage, 3);
  EXPECT_EQ(manifest.function, "gpt");
  EXPECT_EQ(manifest.device, "cpu");
  EXPECT_EQ(manifest.hierarchy, (std::vector<int64_t>{2}));
  EXPECT_EQ(Json::parse(manifest.configJson), Json::parse(plan.configJson));
  ASSERT_EQ(manifest.files.size(), 2u);
  EXPECT_EQ(manifest.files[1].name, "rank-00001-of-00002.safetensors");
  EXPECT_EQ(manifest.files[1].rank, 1);
  EXPECT_EQ(rankFileName(12, 345), "rank-00012-of-00345.safetensors");

  ASSERT_EQ(manifest.tensors.size(), 5u);
  const CheckpointTensor *w = manifest.findTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->copyOf, std::optional<std::string>("w.master"));
  ASSERT_EQ(w->pieces.size(), 1u);
  EXPECT_EQ(w->pieces[0].rank, 0);
  EXPECT_EQ(w->pieces[0].ranges, (std::vector<DimRange>{{0, 4}, {0, 6}}));
  const CheckpointTensor *avg = manifest.findTensor("w.exp_avg");
  ASSERT_NE(avg, nullptr);
  EXPECT_TRUE(avg->layout.flat);
  EXPECT_EQ(avg->role, Role::OptState);
  EXPECT_EQ(avg->layout.modelShape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(avg->layout.globalShape, (std::vector<int64_t>{16}));
  ASSERT_EQ(avg->pieces.size(), 2u);
  EXPECT_EQ(avg->pieces[1].rank, 1);
  EXPECT_EQ(avg->pieces[1].ranges, (std::vector<DimRange>{{8, 16}}));
  const CheckpointTensor *b = manifest.findTensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::BF16);
  EXPECT_EQ(b->sbp, (std::vector<std::string>{"S(1)"}));
  EXPECT_EQ(manifest.findTensor("nope"), nullptr);
}

TEST(Manifest, RoundTripsEveryField) {
  CheckpointManifest manifest = sampleManifest();
  std::string text = manifestJson(manifest);
  CheckpointManifest parsed = parseManifest(text, "m.json");
  expectSameManifest(manifest, parsed);
  EXPECT_EQ(manifestJson(parsed), text);
  // The JSON itself, as docs/checkpoint.md describes it.
  Json json = Json::parse(text);
  EXPECT_EQ(json["format"], "zerosbp-checkpoint");
  EXPECT_EQ(json["version"], 2);
  EXPECT_EQ(json["files"][0]["crc32"], "deadbeef");
  EXPECT_EQ(json["files"][1]["crc32"], "0000000f");
  EXPECT_EQ(json["data"], Json({{"seed", (uint64_t(1) << 63) + 5},
                                {"next_step", 7},
                                {"micro_batch", 0}}));
  EXPECT_FALSE(json["tensors"][1].contains("copy_of"));

  // Without a stage, on one rank, with files listed out of order.
  CheckpointManifest single = manifestOfPlan(planOnOneRank(), 0, 0);
  single.stage.reset();
  parsed = parseManifest(manifestJson(single), "m.json");
  expectSameManifest(single, parsed);
  EXPECT_TRUE(Json::parse(manifestJson(single))["stage"].is_null());

  Json reordered = Json::parse(text);
  std::swap(reordered["files"][0], reordered["files"][1]);
  parsed = parseManifest(reordered.dump(), "m.json");
  expectSameManifest(manifest, parsed);
}

TEST(Manifest, RoundTripsAModelSplit) {
  CheckpointManifest manifest = manifestOfPlan(planOfModelSplits(), 3, 1);
  std::string text = manifestJson(manifest);
  CheckpointManifest parsed = parseManifest(text, "m.json");
  expectSameManifest(manifest, parsed);
  EXPECT_EQ(manifestJson(parsed), text);
  Json json = Json::parse(text);
  EXPECT_EQ(json["tensors"][2]["name"], "u");
  EXPECT_EQ(json["tensors"][2]["flat"], true);
  EXPECT_EQ(json["tensors"][2]["model_split"],
            Json({{"dim", 1}, {"parts", 2}}));
  EXPECT_EQ(json["tensors"][2]["global_shape"], Json({2, 14}));
  // u's rows are split on axis 0: rank 1 holds columns 7-13 of row 0.
  EXPECT_EQ(json["tensors"][2]["pieces"][1],
            Json({{"rank", 1}, {"ranges", {{0, 1}, {7, 14}}}}));
  // Only a model split has the key.
  EXPECT_FALSE(
      Json::parse(manifestJson(sampleManifest()))["tensors"][1].contains(
          "model_split"));
}

/// The message parseManifest gives for the model-split manifest after
/// `edit`.
std::string splitErrorAfter(const std::function<void(Json &)> &edit) {
  Json json =
      Json::parse(manifestJson(manifestOfPlan(planOfModelSplits(), 3, 1)));
  edit(json);
  try {
    parseManifest(json.dump(), "m.json");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ManifestParser, NamesTheBadModelSplit) {
  EXPECT_EQ(splitErrorAfter([](Json &j) {}), "(no error)");
  EXPECT_EQ(splitErrorAfter([](Json &j) { j["tensors"][0]["flat"] = false; }),
            "m.json: tensor 'w': model_split: needs flat true");
  EXPECT_EQ(
      splitErrorAfter([](Json &j) { j["tensors"][0]["model_split"] = 1; }),
      "m.json: tensor 'w': model_split.dim: missing");
  EXPECT_EQ(splitErrorAfter(
                [](Json &j) { j["tensors"][0]["model_split"]["dim"] = 2; }),
            "m.json: tensor 'w': model_split.dim: 2 is outside [0, 1]");
  EXPECT_EQ(splitErrorAfter(
                [](Json &j) { j["tensors"][0]["model_split"].erase("parts"); }),
            "m.json: tensor 'w': model_split.parts: missing");
  EXPECT_EQ(splitErrorAfter(
                [](Json &j) { j["tensors"][0]["model_split"]["parts"] = 0; }),
            "m.json: tensor 'w': model_split.parts: 0 is outside [1, "
            "281474976710656]");
  EXPECT_EQ(splitErrorAfter(
                [](Json &j) { j["tensors"][0]["model_split"]["parts"] = 3; }),
            "m.json: tensor 'w': model_split.parts: dimension 1 of shape "
            "(4, 8) does not split into 3 equal parts");
  EXPECT_EQ(splitErrorAfter(
                [](Json &j) { j["tensors"][0]["model_split"]["parts"] = 4; }),
            "m.json: tensor 'w': global_shape: a model split needs [4, N] "
            "with N at least a part's 8 elements");
  EXPECT_EQ(splitErrorAfter([](Json &j) {
              j["tensors"][0]["global_shape"] = {2, 15};
            }),
            "m.json: tensor 'w': global_shape: a model split needs [2, N] "
            "with N at least a part's 16 elements");
  EXPECT_EQ(
      splitErrorAfter([](Json &j) { j["tensors"][0]["global_shape"] = {36}; }),
      "m.json: tensor 'w': global_shape: a model split needs [2, N] "
      "with N at least a part's 16 elements");
  EXPECT_EQ(splitErrorAfter([](Json &j) {
              j["tensors"][0]["shape"] = Json::array();
              j["tensors"][0]["global_shape"] = Json::array();
            }),
            "m.json: tensor 'w': model_split: a 0-D tensor has no dim to "
            "split");
  // The pieces must still cover the model: without rank 3's (row 1 from
  // column 9: part 1's elements 9-15, the first model element 21), the
  // model from 21 on is not all there.
  EXPECT_EQ(
      splitErrorAfter([](Json &j) { j["tensors"][0]["pieces"].erase(3); }),
      "m.json: tensor 'w': pieces: model elements from 21 on are in no piece");
}

/// The message parseManifest gives for the sample manifest after `edit`.
std::string errorAfter(const std::function<void(Json &)> &edit) {
  Json json = Json::parse(manifestJson(sampleManifest()));
  edit(json);
  try {
    parseManifest(json.dump(), "m.json");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

std::string errorOfText(const std::string &text) {
  try {
    parseManifest(text, "m.json");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

Json &tensorNamed(Json &json, const std::string &name) {
  for (Json &tensor : json["tensors"])
    if (tensor["name"] == name)
      return tensor;
  ADD_FAILURE() << "no tensor " << name;
  return json;
}

TEST(ManifestParser, RejectsForeignAndBrokenText) {
  std::string text = manifestJson(sampleManifest());
  EXPECT_EQ(errorOfText(text.substr(0, text.size() / 2)),
            "m.json: not JSON (truncated or corrupt)");
  EXPECT_EQ(errorOfText(""), "m.json: not JSON (truncated or corrupt)");
  EXPECT_EQ(errorOfText("[]"),
            "m.json: format: not a ZeroSBP checkpoint manifest");
  EXPECT_EQ(errorAfter([](Json &j) { j["format"] = "zerosbp-plan"; }),
            "m.json: format: not a ZeroSBP checkpoint manifest");
  EXPECT_EQ(errorAfter([](Json &j) { j.erase("format"); }),
            "m.json: format: not a ZeroSBP checkpoint manifest");
  EXPECT_EQ(errorAfter([](Json &j) { j["version"] = 3; }),
            "m.json: version: format version 3 is newer than this build "
            "reads (2)");
  EXPECT_EQ(errorAfter([](Json &j) { j["version"] = 0; }),
            "m.json: version: 0 is outside [1, 2147483647]");
  EXPECT_EQ(errorAfter([](Json &j) { j["version"] = "1"; }),
            "m.json: version: expected an integer");
}

TEST(ManifestParser, NamesTheBadTopLevelField) {
  EXPECT_EQ(errorAfter([](Json &j) { j.erase("step"); }),
            "m.json: step: missing");
  EXPECT_EQ(errorAfter([](Json &j) { j["step"] = -1; }),
            "m.json: step: -1 is outside [0, 4611686018427387903]");
  EXPECT_EQ(errorAfter([](Json &j) { j["step"] = 1.5; }),
            "m.json: step: expected an integer");
  EXPECT_EQ(errorAfter([](Json &j) {
              j["step"] = std::numeric_limits<uint64_t>::max();
            }),
            "m.json: step: out of range");
  EXPECT_EQ(errorAfter([](Json &j) { j["world"] = 0; }),
            "m.json: world: 0 is outside [1, 16384]");
  EXPECT_EQ(errorAfter([](Json &j) { j["world"] = 20000; }),
            "m.json: world: 20000 is outside [1, 16384]");
  EXPECT_EQ(errorAfter([](Json &j) { j["stage"] = 4; }),
            "m.json: stage: 4 is outside [0, 3]");
  EXPECT_EQ(errorAfter([](Json &j) { j["stage"] = "3"; }),
            "m.json: stage: expected an integer");
  EXPECT_EQ(errorAfter([](Json &j) { j.erase("stage"); }),
            "m.json: stage: missing");
  EXPECT_EQ(errorAfter([](Json &j) { j["function"] = 3; }),
            "m.json: function: expected a string");
  EXPECT_EQ(errorAfter([](Json &j) { j.erase("device"); }),
            "m.json: device: missing");
  EXPECT_EQ(errorAfter([](Json &j) { j["hierarchy"] = {3}; }),
            "m.json: hierarchy: its product is not the world size");
  EXPECT_EQ(errorAfter([](Json &j) { j["hierarchy"] = Json::array(); }),
            "m.json: hierarchy: its product is not the world size");
  EXPECT_EQ(errorAfter([](Json &j) { j["hierarchy"] = {-2}; }),
            "m.json: hierarchy: a dimension is not an integer in [0, 2^48]");
  EXPECT_EQ(errorAfter([](Json &j) { j["hierarchy"] = "2"; }),
            "m.json: hierarchy: expected an array");
  EXPECT_EQ(errorAfter([](Json &j) { j["config"] = Json::array(); }),
            "m.json: config: expected an object");
  EXPECT_EQ(errorAfter([](Json &j) { j.erase("data"); }),
            "m.json: data: missing");
  EXPECT_EQ(errorAfter([](Json &j) { j["data"] = 1; }),
            "m.json: data.seed: missing");
  EXPECT_EQ(errorAfter([](Json &j) { j["data"]["seed"] = -1; }),
            "m.json: data.seed: expected a non-negative integer");
  EXPECT_EQ(errorAfter([](Json &j) { j["data"]["next_step"] = 6; }),
            "m.json: data.next_step: is less than step (every update read a "
            "row)");
  EXPECT_EQ(errorAfter([](Json &j) { j["data"]["next_step"] = "7"; }),
            "m.json: data.next_step: expected an integer");
}

TEST(ManifestParser, NamesTheBadFile) {
  EXPECT_EQ(errorAfter([](Json &j) { j["files"] = Json::object(); }),
            "m.json: files: expected an array");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"].erase(1); }),
            "m.json: files: expected one file per rank (2), got 1");
  EXPECT_EQ(errorAfter([](Json &j) {
              j["files"][1]["name"] = "rank-00001-of-00003.safetensors";
            }),
            "m.json: files[1].name: expected rank-00001-of-00002.safetensors");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"][1] = j["files"][0]; }),
            "m.json: files[1].rank: rank 0 twice");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"][0]["rank"] = 2; }),
            "m.json: files[0].rank: 2 is outside [0, 1]");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"][0].erase("rank"); }),
            "m.json: files[0].rank: missing");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"][0]["bytes"] = -1; }),
            "m.json: files[0].bytes: -1 is outside [0, "
            "9223372036854775807]");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"][0]["crc32"] = "DEADBEEF"; }),
            "m.json: files[0].crc32: expected 8 lower-case hex digits");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"][0]["crc32"] = "beef"; }),
            "m.json: files[0].crc32: expected 8 lower-case hex digits");
  EXPECT_EQ(errorAfter([](Json &j) { j["files"][0]["crc32"] = 3735928559; }),
            "m.json: files[0].crc32: expected a string");
}

TEST(ManifestParser, NamesTheBadTensorField) {
  EXPECT_EQ(errorAfter([](Json &j) { j["tensors"] = 5; }),
            "m.json: tensors: expected an array");
  EXPECT_EQ(errorAfter([](Json &j) { j["tensors"][0]["name"] = ""; }),
            "m.json: tensors[0].name: empty");
  EXPECT_EQ(errorAfter([](Json &j) { j["tensors"][2].erase("name"); }),
            "m.json: tensors[2].name: missing");
  EXPECT_EQ(errorAfter([](Json &j) { j["tensors"][0] = 1; }),
            "m.json: tensors[0].name: missing");
  EXPECT_EQ(
      errorAfter([](Json &j) { tensorNamed(j, "w")["role"] = "activation"; }),
      "m.json: tensor 'w': role: expected param, master, opt_state or grad");
  EXPECT_EQ(
      errorAfter([](Json &j) { tensorNamed(j, "w")["role"] = "x"; }),
      "m.json: tensor 'w': role: expected param, master, opt_state or grad");
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "b")["dtype"] = "BF16"; }),
            "m.json: tensor 'b': dtype: unknown dtype");
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "e").erase("dtype"); }),
            "m.json: tensor 'e': dtype: missing");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "e")["shape"] = {(uint64_t(1) << 48) + 1};
            }),
            "m.json: tensor 'e': shape: a dimension is not an integer in "
            "[0, 2^48]");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "e")["shape"] = {1 << 24, 1 << 24, 2};
            }),
            "m.json: tensor 'e': shape: more than 2^48 elements");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "e")["shape"] = std::vector<int>(17, 1);
            }),
            "m.json: tensor 'e': shape: more than 16 dimensions");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "e")["global_shape"] = {7, 1};
            }),
            "m.json: tensor 'e': global_shape: differs from shape, but flat "
            "is false");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w.master")["global_shape"] = {23};
            }),
            "m.json: tensor 'w.master': global_shape: a flat partition is one "
            "dimension at least the model's size");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w.master")["global_shape"] = {4, 6};
            }),
            "m.json: tensor 'w.master': global_shape: a flat partition is one "
            "dimension at least the model's size");
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "w")["flat"] = 0; }),
            "m.json: tensor 'w': flat: expected true or false");
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "w")["sbp"] = {1}; }),
            "m.json: tensor 'w': sbp: expected strings");
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "w")["sbp"] = "B"; }),
            "m.json: tensor 'w': sbp: expected an array");
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "w")["copy_of"] = 1; }),
            "m.json: tensor 'w': copy_of: expected a string");
  EXPECT_EQ(
      errorAfter([](Json &j) { tensorNamed(j, "w")["copy_of"] = "nope"; }),
      "m.json: tensor 'w': copy_of: no tensor 'nope'");
  EXPECT_EQ(errorAfter([](Json &j) { j["tensors"][1]["name"] = "w"; }),
            "m.json: tensor 'w' appears twice");
}

TEST(ManifestParser, NamesTheBadPiece) {
  EXPECT_EQ(
      errorAfter([](Json &j) { tensorNamed(j, "e")["pieces"][1]["rank"] = 5; }),
      "m.json: tensor 'e': rank: 5 is outside [0, 1]");
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "e")["pieces"] = 1; }),
            "m.json: tensor 'e': pieces: expected an array");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w")["pieces"][0]["ranges"] = {{0, 4}};
            }),
            "m.json: tensor 'w': ranges: rank 0 has 1 ranges for a tensor of "
            "2 dimensions");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w")["pieces"][0]["ranges"][1] = {0, 7};
            }),
            "m.json: tensor 'w': ranges: rank 0: dimension 1 is not [begin, "
            "end] inside the global shape");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w")["pieces"][0]["ranges"][0] = {3, 2};
            }),
            "m.json: tensor 'w': ranges: rank 0: dimension 0 is not [begin, "
            "end] inside the global shape");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w")["pieces"][0]["ranges"][0] = {-1, 2};
            }),
            "m.json: tensor 'w': ranges: rank 0: dimension 0 is not [begin, "
            "end] inside the global shape");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w")["pieces"][0]["ranges"][0] = 4;
            }),
            "m.json: tensor 'w': ranges: rank 0: dimension 0 is not [begin, "
            "end] inside the global shape");
  // Pieces that leave model elements out.
  EXPECT_EQ(errorAfter(
                [](Json &j) { tensorNamed(j, "w.master")["pieces"].erase(1); }),
            "m.json: tensor 'w.master': pieces: model elements from 12 on are "
            "in no piece");
  EXPECT_EQ(errorAfter(
                [](Json &j) { tensorNamed(j, "w.master")["pieces"].erase(0); }),
            "m.json: tensor 'w.master': pieces: model elements from 0 on are "
            "in no piece");
  // Columns 0..2 of "b" (3x4) only: row 0 stops at element 2.
  EXPECT_EQ(errorAfter([](Json &j) { tensorNamed(j, "b")["pieces"].erase(1); }),
            "m.json: tensor 'b': pieces: model elements from 2 on are in no "
            "piece");
  // Only the padding of a flat partition may be missing: 15 model
  // elements of 16, and rank 1 holds 8..15 of them.
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w.exp_avg")["pieces"][1]["ranges"][0] = {8, 15};
            }),
            "(no error)");
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "w.exp_avg")["pieces"][1]["ranges"][0] = {8, 14};
            }),
            "m.json: tensor 'w.exp_avg': pieces: model elements from 14 on "
            "are in no piece");
  // Overlapping pieces that cover the model are accepted.
  EXPECT_EQ(errorAfter([](Json &j) {
              tensorNamed(j, "e")["pieces"][1]["ranges"][0] = {2, 7};
            }),
            "(no error)");
}

/// A 2^22 x 2 tensor whose pieces are columns: one run per row.
Json fragmentedTensor(const std::vector<int> &pieceColumns) {
  int64_t rows = int64_t(1) << 22;
  Json pieces = Json::array();
  for (int column : pieceColumns)
    pieces.push_back(
        {{"rank", 0},
         {"ranges",
          {{0, column < 0 ? 1 : rows},
           {column < 0 ? 0 : column, column < 0 ? 2 : column + 1}}}});
  return {{"name", "big"},      {"role", "param"},           {"dtype", "f32"},
          {"shape", {rows, 2}}, {"global_shape", {rows, 2}}, {"flat", false},
          {"sbp", {"B"}},       {"pieces", pieces}};
}

TEST(ManifestParser, BoundsTheRunsOfAllPieces) {
  // A column of 2^22 + 1 rows is refused before its runs are made.
  EXPECT_EQ(errorAfter([](Json &j) {
              Json big = fragmentedTensor({0});
              big["shape"][0] = (1 << 22) + 1;
              big["global_shape"][0] = (1 << 22) + 1;
              big["pieces"][0]["ranges"][0][1] = (1 << 22) + 1;
              j["tensors"].push_back(big);
            }),
            "m.json: tensor 'big': ranges: rank 0: too fragmented: the "
            "manifest's blocks make more than 2^22 runs");
  // So is a column of 2^22 rows after a few runs elsewhere: the bound is on
  // all pieces together, so repeating a fragmented piece cannot make a
  // short manifest take gigabytes to check. (-1: row 0, both columns.)
  EXPECT_EQ(errorAfter([](Json &j) {
              j["tensors"].push_back(fragmentedTensor({-1, 0}));
            }),
            "m.json: tensor 'big': ranges: rank 0: too fragmented: the "
            "manifest's blocks make more than 2^22 runs");
}

/// The message parseManifestFile gives for `text`, or "(no error)".
std::string fileErrorOf(const std::string &text) {
  bool checksummed = false;
  try {
    parseManifestFile(text, "m.json", checksummed);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

std::string crcHex(const std::string &bytes) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", bitwiseCrc32(bytes));
  return text;
}

TEST(ManifestFile, CarriesTheChecksumOfEveryByteAfterItsLine) {
  CheckpointManifest manifest = sampleManifest();
  std::string text = manifestFileText(manifest);
  // docs/checkpoint.md: the second line, over the bytes after it.
  std::string rest = manifestJson(manifest).substr(2) + "\n";
  EXPECT_EQ(text, "{\n \"checksum\": \"crc32:" + crcHex(rest) + "\",\n" + rest);
  EXPECT_EQ(Json::parse(text)["checksum"], "crc32:" + crcHex(rest));
  bool checksummed = false;
  expectSameManifest(manifest, parseManifestFile(text, "m.json", checksummed));
  EXPECT_TRUE(checksummed);
}

TEST(ManifestFile, RefusesAnyEdit) {
  std::string text = manifestFileText(sampleManifest());
  std::string saved =
      Json::parse(text)["checksum"].get<std::string>().substr(6);
  size_t restAt = text.find('\n', 2) + 1;
  auto mismatch = [&](const std::string &edited) {
    return "m.json: checksum: the manifest's CRC-32 is " +
           crcHex(edited.substr(restAt)) + ", not the " + saved +
           " it was saved with (edited or corrupt)";
  };
  // The edits of the issue: the step with the data position, the seed.
  std::string step = text;
  for (const char *key : {"\"step\": 7", "\"next_step\": 7"}) {
    size_t at = step.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    step.replace(at + std::strlen(key) - 1, 1, "400");
  }
  EXPECT_EQ(fileErrorOf(step), mismatch(step));
  std::string seed = text;
  size_t at = seed.find("9223372036854775813");
  ASSERT_NE(at, std::string::npos);
  seed.replace(at, 19, "9223372036854775814");
  EXPECT_EQ(fileErrorOf(seed), mismatch(seed));
  // Every single-byte change after the checksum line, and a cut anywhere.
  for (size_t i = restAt; i < text.size(); i += 7) {
    std::string flipped = text;
    flipped[i] ^= 0x20;
    EXPECT_EQ(fileErrorOf(flipped), mismatch(flipped)) << "byte " << i;
  }
  for (size_t length = restAt; length < text.size(); length += 53)
    EXPECT_EQ(fileErrorOf(text.substr(0, length)),
              mismatch(text.substr(0, length)))
        << "cut at " << length;
  // The checksum line itself.
  std::string digits = text;
  digits[restAt - 4] = digits[restAt - 4] == '0' ? '1' : '0';
  EXPECT_THAT(fileErrorOf(digits),
              ::testing::StartsWith("m.json: checksum: the manifest's CRC-32 "
                                    "is "));
  std::string upper = text;
  upper.replace(restAt - 11, 8, "DEADBEEF");
  EXPECT_EQ(fileErrorOf(upper), "m.json: checksum: expected crc32: and 8 "
                                "lower-case hex digits (edited or corrupt)");
  // Removed, or moved off its line as a JSON tool rewriting the file does.
  EXPECT_EQ(fileErrorOf(manifestJson(sampleManifest())),
            "m.json: checksum: not on the manifest's second line (edited or "
            "corrupt)");
  EXPECT_EQ(fileErrorOf(Json::parse(text).dump(2)),
            "m.json: checksum: not on the manifest's second line (edited or "
            "corrupt)");
  // A cut inside the checksum line.
  EXPECT_EQ(fileErrorOf(text.substr(0, restAt - 6)),
            "m.json: checksum: expected crc32: and 8 lower-case hex digits "
            "(edited or corrupt)");
}

TEST(ManifestFile, Version1HasNoChecksumAndStillParses) {
  Json old = Json::parse(manifestJson(sampleManifest()));
  old["version"] = 1;
  bool checksummed = true;
  CheckpointManifest parsed =
      parseManifestFile(old.dump(1) + "\n", "m.json", checksummed);
  EXPECT_FALSE(checksummed);
  EXPECT_EQ(parsed.version, 1);
  EXPECT_EQ(parsed.step, 7);
  // Other errors come first where there is no checksum to check.
  EXPECT_EQ(fileErrorOf("{\"format\": "),
            "m.json: not JSON (truncated or corrupt)");
}

} // namespace
