//===- Manifest.cpp - what a checkpoint holds and where -------------------===//

#include "runtime/checkpoint/Manifest.h"

#include "runtime/core/Error.h"
#include "runtime/core/Limits.h"
#include "runtime/exec/Distribution.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/Npy.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace zerosbp::runtime {

namespace {

using Json = nlohmann::json;

constexpr const char *kFormat = "zerosbp-checkpoint";
/// The first version whose manifests carry their checksum.
constexpr int kChecksummedVersion = 2;
/// manifest.json's first line and the start of its second, up to the
/// checksum's hex digits: the checksum is checked on the bytes as saved,
/// without printing the JSON again.
constexpr const char *kChecksumStart = "{\n \"checksum\": \"crc32:";
constexpr const char *kChecksumEnd = "\",\n";
/// The reader's bounds (with kMaxRanks for the world): far above any real
/// model, low enough that no product of them overflows and no check loops
/// for long.
constexpr int64_t kMaxElements = int64_t(1) << 48;
/// Runs of all pieces of all tensors together: the coverage check holds
/// and sorts a tensor's runs, so a bound per piece alone would let a short
/// manifest repeat a fragmented piece into gigabytes and minutes. 2^22 runs
/// (100 MB, under 2 s with AddressSanitizer) is far more than a checkpoint
/// of this runtime makes: its partitions are one run per piece.
constexpr int64_t kMaxRuns = int64_t(1) << 22;

std::string crcText(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", crc);
  return text;
}

Json rangesJson(const std::vector<DimRange> &ranges) {
  Json json = Json::array();
  for (const DimRange &range : ranges)
    json.push_back({range.first, range.second});
  return json;
}

/// Reads fields of one JSON object, naming the field in every error.
class FieldReader {
public:
  FieldReader(const std::string &source, std::string path)
      : source(source), path(std::move(path)) {}

  [[noreturn]] void fail(const std::string &field,
                         const std::string &what) const {
    throw RuntimeError(source + ": " + path + field + ": " + what);
  }
  const Json &get(const Json &object, const std::string &field) const {
    if (!object.is_object() || !object.contains(field))
      fail(field, "missing");
    return object[field];
  }
  int64_t integer(const Json &object, const std::string &field, int64_t min,
                  int64_t max) const {
    const Json &value = get(object, field);
    if (!value.is_number_integer())
      fail(field, "expected an integer");
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(field, "out of range");
    int64_t number = value.get<int64_t>();
    if (number < min || number > max)
      fail(field, std::to_string(number) + " is outside [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
    return number;
  }
  std::string string(const Json &object, const std::string &field) const {
    const Json &value = get(object, field);
    if (!value.is_string())
      fail(field, "expected a string");
    return value.get<std::string>();
  }
  const Json &array(const Json &object, const std::string &field) const {
    const Json &value = get(object, field);
    if (!value.is_array())
      fail(field, "expected an array");
    return value;
  }
  std::vector<int64_t> shape(const Json &object,
                             const std::string &field) const {
    std::vector<int64_t> dims;
    int64_t count = 1;
    for (const Json &dim : array(object, field)) {
      if (!dim.is_number_unsigned() ||
          dim.get<uint64_t>() > static_cast<uint64_t>(kMaxElements))
        fail(field, "a dimension is not an integer in [0, 2^48]");
      dims.push_back(dim.get<int64_t>());
      if (dims.back() != 0 && count > kMaxElements / dims.back())
        fail(field, "more than 2^48 elements");
      count *= dims.back();
    }
    if (dims.size() > 16)
      fail(field, "more than 16 dimensions");
    return dims;
  }

  const std::string &source;
  std::string path;
};

/// A flat layout split along a model dim first: `"model_split": {"dim": k,
/// "parts": P}`, the global shape [P, N] with N at least a part.
SplitParts parseModelSplit(const Json &json, const ShardLayout &layout,
                           const FieldReader &in) {
  const std::vector<int64_t> &model = layout.modelShape;
  const std::vector<int64_t> &global = layout.globalShape;
  if (!layout.flat)
    in.fail("model_split", "needs flat true");
  if (model.empty())
    in.fail("model_split", "a 0-D tensor has no dim to split");
  FieldReader splitIn(in.source, in.path + "model_split.");
  const Json &split = in.get(json, "model_split");
  SplitParts parts;
  parts.dim = static_cast<int>(
      splitIn.integer(split, "dim", 0, static_cast<int64_t>(model.size()) - 1));
  parts.parts = splitIn.integer(split, "parts", 1, kMaxElements);
  if (model[parts.dim] % parts.parts != 0)
    splitIn.fail("parts", "dimension " + std::to_string(parts.dim) +
                              " of shape " + npyShapeText(model) +
                              " does not split into " +
                              std::to_string(parts.parts) + " equal parts");
  if (global.size() != 2 || global[0] != parts.parts ||
      global[1] < numElements(model) / parts.parts)
    in.fail("global_shape",
            "a model split needs [" + std::to_string(parts.parts) +
                ", N] with N at least a part's " +
                std::to_string(numElements(model) / parts.parts) + " elements");
  return parts;
}

CheckpointTensor parseTensor(const Json &json, const FieldReader &top,
                             int index, int world, int64_t &runsLeft) {
  FieldReader in(top.source, "tensors[" + std::to_string(index) + "].");
  CheckpointTensor tensor;
  tensor.name = in.string(json, "name");
  if (tensor.name.empty())
    in.fail("name", "empty");
  in.path = "tensor '" + tensor.name + "': ";
  std::optional<Role> role = parseRole(in.string(json, "role"));
  if (!role || (*role != Role::Param && *role != Role::Master &&
                *role != Role::OptState && *role != Role::Grad))
    in.fail("role", "expected param, master, opt_state or grad");
  tensor.role = *role;
  std::optional<DType> dtype = parseDType(in.string(json, "dtype"));
  if (!dtype)
    in.fail("dtype", "unknown dtype");
  tensor.dtype = *dtype;
  tensor.layout.modelShape = in.shape(json, "shape");
  tensor.layout.globalShape = in.shape(json, "global_shape");
  const Json &flat = in.get(json, "flat");
  if (!flat.is_boolean())
    in.fail("flat", "expected true or false");
  tensor.layout.flat = flat.get<bool>();
  int64_t modelCount = numElements(tensor.layout.modelShape);
  if (json.contains("model_split")) {
    tensor.layout.modelSplit = parseModelSplit(json, tensor.layout, in);
  } else if (tensor.layout.flat) {
    if (tensor.layout.globalShape.size() != 1 ||
        tensor.layout.globalShape[0] < modelCount)
      in.fail("global_shape",
              "a flat partition is one dimension at least the model's size");
  } else if (tensor.layout.globalShape != tensor.layout.modelShape) {
    in.fail("global_shape", "differs from shape, but flat is false");
  }
  for (const Json &sbp : in.array(json, "sbp")) {
    if (!sbp.is_string())
      in.fail("sbp", "expected strings");
    tensor.sbp.push_back(sbp.get<std::string>());
  }
  if (json.contains("copy_of") && !json["copy_of"].is_null())
    tensor.copyOf = in.string(json, "copy_of");

  // Pieces: blocks of the global tensor that together cover the model.
  std::vector<ShardRun> covered;
  size_t dims = tensor.layout.globalShape.size();
  for (const Json &pieceJson : in.array(json, "pieces")) {
    CheckpointPiece piece;
    piece.rank = static_cast<int>(in.integer(pieceJson, "rank", 0, world - 1));
    const Json &ranges = in.array(pieceJson, "ranges");
    if (ranges.size() != dims)
      in.fail("ranges", "rank " + std::to_string(piece.rank) + " has " +
                            std::to_string(ranges.size()) +
                            " ranges for a tensor of " + std::to_string(dims) +
                            " dimensions");
    for (size_t d = 0; d < dims; ++d) {
      const Json &range = ranges[d];
      if (!range.is_array() || range.size() != 2 ||
          !range[0].is_number_unsigned() || !range[1].is_number_unsigned() ||
          range[0].get<uint64_t>() > range[1].get<uint64_t>() ||
          range[1].get<uint64_t>() >
              static_cast<uint64_t>(tensor.layout.globalShape[d]))
        in.fail("ranges", "rank " + std::to_string(piece.rank) +
                              ": dimension " + std::to_string(d) +
                              " is not [begin, end] inside the global shape");
      piece.ranges.emplace_back(range[0].get<int64_t>(),
                                range[1].get<int64_t>());
    }
    runsLeft -= shardRunCount(tensor.layout, piece.ranges);
    if (runsLeft < 0)
      in.fail("ranges", "rank " + std::to_string(piece.rank) +
                            ": too fragmented: the manifest's blocks "
                            "make more than 2^22 runs");
    for (const ShardRun &run : shardRuns(tensor.layout, piece.ranges))
      covered.push_back(run);
    tensor.pieces.push_back(std::move(piece));
  }
  std::sort(
      covered.begin(), covered.end(),
      [](const ShardRun &a, const ShardRun &b) { return a.model < b.model; });
  int64_t reached = 0;
  for (const ShardRun &run : covered) {
    if (run.model > reached)
      break;
    reached = std::max(reached, run.model + run.length);
  }
  if (reached < modelCount)
    in.fail("pieces", "model elements from " + std::to_string(reached) +
                          " on are in no piece");
  return tensor;
}

} // namespace

const CheckpointTensor *
CheckpointManifest::findTensor(const std::string &name) const {
  for (const CheckpointTensor &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

std::string rankFileName(int rank, int world) {
  char name[64];
  std::snprintf(name, sizeof(name), "rank-%05d-of-%05d.safetensors", rank,
                world);
  return name;
}

std::vector<std::vector<int>> blockWriters(const Plan &plan) {
  std::vector<std::vector<int>> writers(plan.variables.size());
  std::vector<int64_t> assigned(plan.world, 0);
  for (size_t i = 0; i < plan.variables.size(); ++i) {
    const PlanVariable &variable = plan.variables[i];
    int64_t bytes = shardElements(variable.shard(0)) *
                    static_cast<int64_t>(dtypeBytes(variable.dtype));
    // The ranks holding each distinct block, in the order of the first.
    std::map<std::vector<DimRange>, int> groupOf;
    std::vector<std::vector<int>> groups;
    for (int r = 0; r < plan.world; ++r) {
      if (!plan.holds(variable, r))
        continue;
      auto [it, added] =
          groupOf.emplace(variable.shard(r), static_cast<int>(groups.size()));
      if (added)
        groups.emplace_back();
      groups[it->second].push_back(r);
    }
    // The least loaded rank of a group writes its block.
    for (const std::vector<int> &group : groups) {
      int writer = group.front();
      for (int r : group)
        if (assigned[r] < assigned[writer])
          writer = r;
      assigned[writer] += bytes;
      writers[i].push_back(writer);
    }
  }
  return writers;
}

std::vector<int> variablesOwnedBy(const Plan &plan, int rank) {
  std::vector<int> owned;
  std::vector<std::vector<int>> writers = blockWriters(plan);
  for (size_t i = 0; i < writers.size(); ++i)
    if (std::find(writers[i].begin(), writers[i].end(), rank) !=
        writers[i].end())
      owned.push_back(static_cast<int>(i));
  return owned;
}

CheckpointManifest manifestOfPlan(const Plan &plan, int64_t step,
                                  uint64_t seed) {
  CheckpointManifest manifest;
  manifest.step = step;
  manifest.world = plan.world;
  manifest.stage = plan.stage;
  manifest.function = plan.function;
  manifest.device = plan.device;
  manifest.hierarchy = plan.hierarchy;
  manifest.configJson = plan.configJson.empty() ? "{}" : plan.configJson;
  manifest.seed = seed;
  manifest.dataNextStep = step;
  for (const PlanVariable &variable : plan.variables) {
    CheckpointTensor tensor;
    tensor.name = variable.name;
    tensor.role = variable.role;
    tensor.dtype = variable.dtype;
    tensor.layout = layoutOf(variable);
    tensor.sbp = variable.sbp;
    tensor.copyOf = variable.copyOf;
    manifest.tensors.push_back(std::move(tensor));
  }
  std::vector<std::vector<int>> writers = blockWriters(plan);
  for (size_t index = 0; index < writers.size(); ++index)
    for (int rank : writers[index])
      manifest.tensors[index].pieces.push_back(
          {rank, plan.variables[index].shard(rank)});
  for (int rank = 0; rank < plan.world; ++rank)
    manifest.files.push_back({rankFileName(rank, plan.world), rank, 0, 0});
  return manifest;
}

std::string manifestJson(const CheckpointManifest &manifest) {
  Json json;
  json["format"] = kFormat;
  json["version"] = manifest.version;
  json["step"] = manifest.step;
  json["world"] = manifest.world;
  json["stage"] = manifest.stage ? Json(*manifest.stage) : Json(nullptr);
  json["function"] = manifest.function;
  json["device"] = manifest.device;
  json["hierarchy"] = manifest.hierarchy;
  json["config"] = Json::parse(manifest.configJson);
  // Counter-based generators: the seed and the step are the random state
  // and the data position. Accumulation happens inside a step, so a
  // checkpoint is always at a micro-batch boundary.
  json["data"] = {{"seed", manifest.seed},
                  {"next_step", manifest.dataNextStep},
                  {"micro_batch", 0}};
  Json files = Json::array();
  for (const CheckpointFile &file : manifest.files)
    files.push_back({{"name", file.name},
                     {"rank", file.rank},
                     {"bytes", file.bytes},
                     {"crc32", crcText(file.crc32)}});
  json["files"] = files;
  Json tensors = Json::array();
  for (const CheckpointTensor &tensor : manifest.tensors) {
    Json pieces = Json::array();
    for (const CheckpointPiece &piece : tensor.pieces)
      pieces.push_back(
          {{"rank", piece.rank}, {"ranges", rangesJson(piece.ranges)}});
    Json entry = {{"name", tensor.name},
                  {"role", roleName(tensor.role)},
                  {"dtype", dtypeName(tensor.dtype)},
                  {"shape", tensor.layout.modelShape},
                  {"global_shape", tensor.layout.globalShape},
                  {"flat", tensor.layout.flat},
                  {"sbp", tensor.sbp},
                  {"pieces", pieces}};
    if (tensor.layout.modelSplit)
      entry["model_split"] = {{"dim", tensor.layout.modelSplit->dim},
                              {"parts", tensor.layout.modelSplit->parts}};
    if (tensor.copyOf)
      entry["copy_of"] = *tensor.copyOf;
    tensors.push_back(entry);
  }
  json["tensors"] = tensors;
  return json.dump(1);
}

CheckpointManifest parseManifest(const std::string &text,
                                 const std::string &source) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    throw RuntimeError(source + ": not JSON (truncated or corrupt)");
  FieldReader in(source, "");
  if (!json.is_object() || !json.contains("format") ||
      json["format"] != kFormat)
    throw RuntimeError(source + ": format: not a ZeroSBP checkpoint manifest");
  CheckpointManifest manifest;
  int64_t version = in.integer(json, "version", 1, INT32_MAX);
  if (version > kCheckpointVersion)
    in.fail("version", "format version " + std::to_string(version) +
                           " is newer than this build reads (" +
                           std::to_string(kCheckpointVersion) + ")");
  manifest.version = static_cast<int>(version);
  manifest.step = in.integer(json, "step", 0, INT64_MAX / 2);
  manifest.world = static_cast<int>(in.integer(json, "world", 1, kMaxRanks));
  const Json &stage = in.get(json, "stage");
  if (!stage.is_null())
    manifest.stage = static_cast<int>(in.integer(json, "stage", 0, 3));
  manifest.function = in.string(json, "function");
  manifest.device = in.string(json, "device");
  manifest.hierarchy = in.shape(json, "hierarchy");
  if (numElements(manifest.hierarchy) != manifest.world ||
      manifest.hierarchy.empty())
    in.fail("hierarchy", "its product is not the world size");
  const Json &config = in.get(json, "config");
  if (!config.is_object())
    in.fail("config", "expected an object");
  manifest.configJson = config.dump();
  const Json &data = in.get(json, "data");
  FieldReader dataIn(source, "data.");
  const Json &seed = dataIn.get(data, "seed");
  if (!seed.is_number_unsigned())
    dataIn.fail("seed", "expected a non-negative integer");
  manifest.seed = seed.get<uint64_t>();
  manifest.dataNextStep = dataIn.integer(data, "next_step", 0, INT64_MAX);
  if (manifest.dataNextStep < manifest.step)
    dataIn.fail("next_step", "is less than step (every update read a row)");

  std::set<int> fileRanks;
  const Json &files = in.array(json, "files");
  for (size_t i = 0; i < files.size(); ++i) {
    FieldReader fileIn(source, "files[" + std::to_string(i) + "].");
    CheckpointFile file;
    file.name = fileIn.string(files[i], "name");
    file.rank = static_cast<int>(
        fileIn.integer(files[i], "rank", 0, manifest.world - 1));
    if (file.name != rankFileName(file.rank, manifest.world))
      fileIn.fail("name",
                  "expected " + rankFileName(file.rank, manifest.world));
    if (!fileRanks.insert(file.rank).second)
      fileIn.fail("rank", "rank " + std::to_string(file.rank) + " twice");
    file.bytes = fileIn.integer(files[i], "bytes", 0, INT64_MAX);
    std::string crc = fileIn.string(files[i], "crc32");
    if (crc.size() != 8 ||
        crc.find_first_not_of("0123456789abcdef") != std::string::npos)
      fileIn.fail("crc32", "expected 8 lower-case hex digits");
    file.crc32 = static_cast<uint32_t>(std::stoul(crc, nullptr, 16));
    manifest.files.push_back(std::move(file));
  }
  if (static_cast<int>(fileRanks.size()) != manifest.world)
    in.fail("files", "expected one file per rank (" +
                         std::to_string(manifest.world) + "), got " +
                         std::to_string(fileRanks.size()));
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const CheckpointFile &a, const CheckpointFile &b) {
              return a.rank < b.rank;
            });

  const Json &tensors = in.array(json, "tensors");
  std::set<std::string> names;
  int64_t runsLeft = kMaxRuns;
  for (size_t i = 0; i < tensors.size(); ++i) {
    manifest.tensors.push_back(parseTensor(tensors[i], in, static_cast<int>(i),
                                           manifest.world, runsLeft));
    if (!names.insert(manifest.tensors.back().name).second)
      throw RuntimeError(source + ": tensor '" + manifest.tensors.back().name +
                         "' appears twice");
  }
  for (const CheckpointTensor &tensor : manifest.tensors)
    if (tensor.copyOf && !names.count(*tensor.copyOf))
      throw RuntimeError(source + ": tensor '" + tensor.name +
                         "': copy_of: no tensor '" + *tensor.copyOf + "'");
  return manifest;
}

std::string manifestFileText(const CheckpointManifest &manifest) {
  // manifestJson opens with "{\n" and has keys: the checksum goes first.
  std::string rest = manifestJson(manifest).substr(2) + "\n";
  return kChecksumStart +
         crcText(
             updateCrc32(0, rest.data(), static_cast<int64_t>(rest.size()))) +
         kChecksumEnd + rest;
}

CheckpointManifest parseManifestFile(const std::string &text,
                                     const std::string &source,
                                     bool &checksummed) {
  std::string start = kChecksumStart;
  size_t restAt = start.size() + 8 + std::strlen(kChecksumEnd);
  checksummed = text.compare(0, start.size(), start) == 0;
  if (checksummed) {
    std::string saved = text.substr(start.size(), 8);
    if (text.size() < restAt ||
        saved.find_first_not_of("0123456789abcdef") != std::string::npos ||
        text.compare(start.size() + 8, std::strlen(kChecksumEnd),
                     kChecksumEnd) != 0)
      throw RuntimeError(source + ": checksum: expected crc32: and 8 "
                                  "lower-case hex digits (edited or corrupt)");
    std::string actual = crcText(updateCrc32(
        0, text.data() + restAt, static_cast<int64_t>(text.size() - restAt)));
    if (actual != saved)
      throw RuntimeError(source + ": checksum: the manifest's CRC-32 is " +
                         actual + ", not the " + saved +
                         " it was saved with (edited or corrupt)");
  }
  CheckpointManifest manifest = parseManifest(text, source);
  if (!checksummed && manifest.version >= kChecksummedVersion)
    throw RuntimeError(source + ": checksum: not on the manifest's second "
                                "line (edited or corrupt)");
  return manifest;
}

} // namespace zerosbp::runtime
