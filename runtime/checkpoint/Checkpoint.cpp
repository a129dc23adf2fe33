//===- Checkpoint.cpp - saving and loading the whole training state -------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/core/Error.h"
#include "runtime/exec/Distribution.h"
#include "runtime/io/InputFile.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace zerosbp::runtime {

namespace fs = std::filesystem;

namespace {

constexpr const char *kPartialPrefix = ".partial-";
constexpr const char *kStepPrefix = "step-";

/// Crash testing (tests/integration/checkpoint_faults.py): with
/// ZEROSBP_CHECKPOINT_KILL_AT=<point>:<n>, the process kills itself with
/// SIGKILL the n-th time it reaches that point of a save, as a preemption
/// would.
void killPoint(const char *point) {
  static std::atomic<int> reached[8];
  static const char *const kPoints[] = {
      "begin",   "rank-file", "files-written", "manifest",
      "renamed", "latest",    "prune"};
  const char *at = std::getenv("ZEROSBP_CHECKPOINT_KILL_AT");
  if (!at)
    return;
  std::string wanted = at;
  size_t colon = wanted.find(':');
  int count =
      colon == std::string::npos ? 1 : std::atoi(wanted.c_str() + colon + 1);
  wanted = wanted.substr(0, colon);
  for (int i = 0; i < 7; ++i)
    if (wanted == point && wanted == kPoints[i] && ++reached[i] == count)
      std::raise(SIGKILL);
}

/// `latest` holds one directory name.
constexpr int64_t kMaxLatestBytes = 4096;
/// How often openCheckpoint starts again when a save moves `latest` and
/// prunes what it named while it is being opened; each save that does so
/// takes far longer than an open.
constexpr int kOpenAttempts = 100;
/// How long a save of a step that exists waits for that step's readers.
constexpr std::chrono::seconds kReaderWait(60);

/// The directory name `<path>/latest` holds.
std::string readLatest(const std::string &path) {
  std::string name = readRegularFile(path + "/latest", kMaxLatestBytes,
                                     "the checkpoint's latest");
  while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
    name.pop_back();
  if (name.rfind(kStepPrefix, 0) != 0 || name.find('/') != std::string::npos)
    throw RuntimeError(path + "/latest: does not name a checkpoint ('" +
                       name.substr(0, 64) + "')");
  return name;
}

/// A manifest without a checksum is reported once per process and path.
void warnUnchecked(const std::string &manifestPath) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(manifestPath).second)
    std::cerr << "warning: " << manifestPath
              << ": format version 1 has no checksum of the manifest, so an "
                 "edit of it goes undetected"
              << std::endl;
}

int64_t treeBytes(const fs::path &root) {
  int64_t bytes = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(root, error), end;
       !error && it != end; it.increment(error))
    if (it->is_regular_file(error))
      bytes += static_cast<int64_t>(it->file_size(error));
  return bytes;
}

/// Steps of the complete checkpoints in `directory`, oldest first.
std::vector<std::pair<int64_t, std::string>>
completeCheckpoints(const std::string &directory) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  for (const fs::directory_entry &entry :
       fs::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kStepPrefix, 0) != 0 || !entry.is_directory())
      continue;
    std::string digits = name.substr(std::strlen(kStepPrefix));
    if (digits.empty() ||
        digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 18)
      continue;
    found.emplace_back(std::stoll(digits), name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<int64_t> extents(const std::vector<DimRange> &ranges) {
  std::vector<int64_t> shape;
  for (const DimRange &range : ranges)
    shape.push_back(range.second - range.first);
  return shape;
}

/// The optimizer's type in a compile configuration, or "" without one.
std::string optimizerType(const std::string &configJson) {
  nlohmann::json config =
      nlohmann::json::parse(configJson, nullptr, /*allow_exceptions=*/false);
  if (config.is_object() && config.contains("optimizer") &&
      config["optimizer"].is_object() && config["optimizer"].contains("type") &&
      config["optimizer"]["type"].is_string())
    return config["optimizer"]["type"].get<std::string>();
  return "";
}

} // namespace

class StepDirectoryLock {
public:
  /// Opens the step directory `path` and takes its flock (`operation`:
  /// LOCK_SH, or LOCK_EX | LOCK_NB). Null if the directory is gone, was
  /// renamed away (pruned or replaced) before the lock was taken, or,
  /// with LOCK_NB, is locked.
  static std::unique_ptr<StepDirectoryLock> take(const std::string &path,
                                                 int operation) {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT)
        return nullptr;
      throw RuntimeError(path + ": cannot open (" + std::strerror(errno) + ")");
    }
    std::unique_ptr<StepDirectoryLock> lock(new StepDirectoryLock(fd));
    int result;
    do
      result = ::flock(fd, operation);
    while (result != 0 && errno == EINTR);
    if (result != 0) {
      if (errno == EWOULDBLOCK)
        return nullptr;
      throw RuntimeError(path + ": cannot lock (" + std::strerror(errno) + ")");
    }
    struct stat held, named;
    if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0 ||
        held.st_dev != named.st_dev || held.st_ino != named.st_ino)
      return nullptr;
    return lock;
  }
  ~StepDirectoryLock() { ::close(fd); }
  StepDirectoryLock(const StepDirectoryLock &) = delete;
  StepDirectoryLock &operator=(const StepDirectoryLock &) = delete;

private:
  explicit StepDirectoryLock(int fd) : fd(fd) {}
  int fd;
};

std::string checkpointName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "%s%08lld", kStepPrefix,
                static_cast<long long>(step));
  return name;
}

std::string partialCheckpointPath(const std::string &directory, int64_t step) {
  return directory + "/" + kPartialPrefix + checkpointName(step);
}

std::vector<std::pair<std::string, int64_t>>
partialCheckpoints(const std::string &directory) {
  std::vector<std::pair<std::string, int64_t>> found;
  std::error_code error;
  for (const fs::directory_entry &entry :
       fs::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kPartialPrefix, 0) == 0)
      found.emplace_back(name, treeBytes(entry.path()));
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string removePartialCheckpoints(const std::string &directory) {
  // Left by a save that was killed; the lock says no one is writing them.
  std::string removed;
  for (const auto &[name, bytes] : partialCheckpoints(directory)) {
    std::error_code error;
    fs::remove_all(directory + "/" + name, error);
    removed += (removed.empty() ? "" : ", ") + name + " (" +
               std::to_string(bytes) + " bytes)";
  }
  if (removed.empty())
    return "";
  return directory + ": removed what an interrupted save left: " + removed;
}

std::string beginCheckpoint(const std::string &directory, int64_t step) {
  createDirectories(directory);
  removePartialCheckpoints(directory);
  std::error_code error;
  std::string partial = partialCheckpointPath(directory, step);
  if (!fs::create_directory(partial, error) || error)
    throw RuntimeError(partial + ": cannot create directory (" +
                       (error ? error.message() : "it exists") + ")");
  killPoint("begin");
  return partial;
}

FileDigest writeRankCheckpoint(const Plan &plan, int rank,
                               const std::string &partial,
                               const ReadVariableBytes &read) {
  std::vector<SafetensorsTensor> tensors;
  std::vector<int> owned = variablesOwnedBy(plan, rank);
  for (size_t n = 0; n < owned.size(); ++n) {
    int index = owned[n];
    const PlanVariable &variable = plan.variables[index];
    SafetensorsTensor tensor;
    tensor.name = variable.name;
    tensor.dtype = variable.dtype;
    tensor.shape = extents(variable.shard(rank));
    int64_t bytes = numElements(tensor.shape) *
                    static_cast<int64_t>(dtypeBytes(tensor.dtype));
    bool halfway = n == owned.size() / 2;
    tensor.produce = [&read, index, bytes,
                      halfway](const SafetensorsTensor::Sink &sink) {
      std::vector<unsigned char> chunk(
          static_cast<size_t>(std::min(bytes, kCheckpointChunkBytes)));
      for (int64_t offset = 0; offset < bytes;
           offset += static_cast<int64_t>(chunk.size())) {
        int64_t size =
            std::min(bytes - offset, static_cast<int64_t>(chunk.size()));
        read(index, offset, chunk.data(), size);
        sink(chunk.data(), size);
      }
      if (halfway)
        killPoint("rank-file");
    };
    tensors.push_back(std::move(tensor));
  }
  std::map<std::string, std::string> metadata = {
      {"format", "zerosbp-checkpoint-shard"},
      {"rank", std::to_string(rank)},
      {"world", std::to_string(plan.world)}};
  return writeSafetensors(partial + "/" + rankFileName(rank, plan.world),
                          tensors, metadata);
}

std::string commitCheckpoint(const std::string &directory,
                             const std::string &partial,
                             const CheckpointManifest &manifest, int keep) {
  killPoint("files-written");
  {
    FileWriter writer(partial + "/manifest.json");
    std::string text = manifestFileText(manifest);
    writer.write(text.data(), static_cast<int64_t>(text.size()));
    writer.finish();
  }
  syncDirectory(partial);
  killPoint("manifest");
  std::string name = checkpointName(manifest.step);
  std::string final = directory + "/" + name;
  std::error_code error;
  if (fs::exists(final, error)) {
    // The same step saved again (a run resumed from an earlier one). Its
    // readers open its files by name, so they finish first.
    std::unique_ptr<StepDirectoryLock> held;
    auto deadline = std::chrono::steady_clock::now() + kReaderWait;
    while (!(held = StepDirectoryLock::take(final, LOCK_EX | LOCK_NB))) {
      if (std::chrono::steady_clock::now() > deadline)
        throw RuntimeError(final + ": still read by another process after " +
                           std::to_string(kReaderWait.count()) +
                           " s; not replacing it");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::string old = directory + "/" + kPartialPrefix + "old-" + name;
    renamePath(final, old);
    renamePath(partial, final);
    fs::remove_all(old, error);
  } else {
    renamePath(partial, final);
  }
  syncDirectory(directory);
  killPoint("renamed");
  writeFileAtomically(directory + "/latest", name + "\n");
  killPoint("latest");
  if (keep > 0) {
    auto complete = completeCheckpoints(directory);
    for (size_t i = 0; i + keep < complete.size(); ++i) {
      if (complete[i].second == name)
        continue;
      // One a reader holds is left to a later save.
      std::string path = directory + "/" + complete[i].second;
      std::unique_ptr<StepDirectoryLock> held =
          StepDirectoryLock::take(path, LOCK_EX | LOCK_NB);
      if (!held)
        continue;
      // Renamed first, so a kill halfway through never leaves a
      // half-removed directory under a checkpoint's name.
      std::string doomed =
          directory + "/" + kPartialPrefix + "pruned-" + complete[i].second;
      renamePath(path, doomed);
      killPoint("prune");
      fs::remove_all(doomed, error);
    }
    syncDirectory(directory);
  }
  return final;
}

void abandonCheckpoint(const std::string &partial) {
  std::error_code error;
  fs::remove_all(partial, error);
}

std::string OpenedCheckpoint::filePath(int rank) const {
  return directory + "/" + rankFileName(rank, manifest.world);
}

OpenedCheckpoint openCheckpoint(const std::string &path) {
  OpenedCheckpoint opened;
  for (int attempt = 1;; ++attempt) {
    bool last = attempt == kOpenAttempts;
    std::error_code error;
    if (fs::exists(path + "/manifest.json", error)) {
      opened.directory = path;
    } else if (fs::exists(path + "/latest", error)) {
      std::string name = readLatest(path);
      opened.directory = path + "/" + name;
      if (!fs::exists(opened.manifestPath(), error)) {
        // Pruned by a save that moved `latest` on meanwhile.
        if (!last && readLatest(path) != name)
          continue;
        throw RuntimeError(path + "/latest: names " + name +
                           ", which has no manifest.json");
      }
    } else if (!fs::is_directory(path, error)) {
      throw RuntimeError(path + ": no such checkpoint directory");
    } else {
      throw RuntimeError(path + ": not a checkpoint (no manifest.json or "
                                "latest in it)");
    }
    opened.readLock = StepDirectoryLock::take(opened.directory, LOCK_SH);
    if (opened.readLock)
      break;
    if (last)
      throw RuntimeError(opened.directory + ": removed while it was opened, " +
                         std::to_string(kOpenAttempts) + " times");
  }
  opened.manifest = parseManifestFile(
      readRegularFile(opened.manifestPath(), kMaxManifestBytes,
                      "the checkpoint manifest"),
      opened.manifestPath(), opened.checksummed);
  if (!opened.checksummed)
    warnUnchecked(opened.manifestPath());
  return opened;
}

void checkCompatible(const OpenedCheckpoint &checkpoint, const Plan &plan) {
  const CheckpointManifest &manifest = checkpoint.manifest;
  std::string source = checkpoint.manifestPath() + ": ";
  std::string saved = optimizerType(manifest.configJson);
  std::string wanted = optimizerType(plan.configJson);
  // An inference plan takes the parameters of a training checkpoint and
  // leaves its optimizer state (docs/checkpoint.md#inference-plans).
  if (!plan.inference && !saved.empty() && !wanted.empty() && saved != wanted)
    throw RuntimeError(source + "config: optimizer.type is '" + saved +
                       "' in the checkpoint but '" + wanted + "' in the plan");
  for (const PlanVariable &variable : plan.variables) {
    const CheckpointTensor *tensor = manifest.findTensor(variable.name);
    std::string where = source + "tensor '" + variable.name + "': ";
    if (!tensor)
      throw RuntimeError(source + "tensor '" + variable.name +
                         "' of the plan is not in the checkpoint (another "
                         "model, optimizer or precision?)");
    if (tensor->layout.modelShape != variable.modelShape())
      throw RuntimeError(where + "shape " +
                         npyShapeText(tensor->layout.modelShape) +
                         " in the checkpoint but " +
                         npyShapeText(variable.modelShape()) + " in the plan");
    if (tensor->dtype != variable.dtype)
      throw RuntimeError(where + "dtype " + dtypeName(tensor->dtype) +
                         " in the checkpoint but " + dtypeName(variable.dtype) +
                         " in the plan");
    if (tensor->role != variable.role)
      throw RuntimeError(where + "role " + roleName(tensor->role) +
                         " in the checkpoint but " + roleName(variable.role) +
                         " in the plan");
  }
  if (plan.inference)
    return;
  for (const CheckpointTensor &tensor : manifest.tensors)
    if (!plan.findVariable(tensor.name))
      throw RuntimeError(source + "tensor '" + tensor.name +
                         "' of the checkpoint is not in the plan (another "
                         "model, optimizer or precision?)");
}

std::vector<int> filesReadBy(const OpenedCheckpoint &checkpoint,
                             const Plan &plan, int rank) {
  std::vector<bool> reads(checkpoint.manifest.world, false);
  for (const PlanVariable &variable : plan.variables) {
    if (!plan.holds(variable, rank))
      continue;
    const CheckpointTensor *tensor =
        checkpoint.manifest.findTensor(variable.name);
    std::vector<ShardRun> target =
        shardRuns(layoutOf(variable), variable.shard(rank));
    for (const CheckpointPiece &piece : tensor->pieces)
      if (!reads[piece.rank] &&
          !runOverlaps(shardRuns(tensor->layout, piece.ranges), target).empty())
        reads[piece.rank] = true;
  }
  std::vector<int> ranks;
  for (int r = 0; r < checkpoint.manifest.world; ++r)
    if (reads[r])
      ranks.push_back(r);
  return ranks;
}

void verifyCheckpointFile(const OpenedCheckpoint &checkpoint, int fileRank) {
  const CheckpointFile &file = checkpoint.manifest.files[fileRank];
  std::string path = checkpoint.filePath(fileRank);
  // A device or a FIFO would be read without end.
  if (std::string kind = describeNonRegularFile(path); !kind.empty())
    throw RuntimeError(path + ": is " + kind + ", not a checkpoint file");
  FileDigest digest = digestFile(path);
  if (digest.bytes != file.bytes)
    throw RuntimeError(path + ": " + std::to_string(digest.bytes) +
                       " bytes, but the manifest says " +
                       std::to_string(file.bytes) +
                       (digest.bytes < file.bytes ? " (truncated)" : ""));
  if (digest.crc32 != file.crc32) {
    char text[96];
    std::snprintf(text, sizeof(text),
                  ": CRC-32 %08x, but the manifest says %08x (corrupt)",
                  digest.crc32, file.crc32);
    throw RuntimeError(path + text);
  }
  SafetensorsReader reader(path);
  for (const CheckpointTensor &tensor : checkpoint.manifest.tensors)
    for (const CheckpointPiece &piece : tensor.pieces) {
      if (piece.rank != fileRank)
        continue;
      const SafetensorsEntry *entry = reader.header().find(tensor.name);
      if (!entry)
        throw RuntimeError(path + ": tensor '" + tensor.name +
                           "' is in the manifest but not in the file");
      if (entry->dtype != tensor.dtype || entry->shape != extents(piece.ranges))
        throw RuntimeError(path + ": tensor '" + tensor.name + "' is " +
                           safetensorsDTypeName(entry->dtype) + " " +
                           npyShapeText(entry->shape) + ", the manifest says " +
                           safetensorsDTypeName(tensor.dtype) + " " +
                           npyShapeText(extents(piece.ranges)));
    }
}

CheckpointReader::CheckpointReader(const OpenedCheckpoint &checkpoint)
    : checkpoint(checkpoint) {}

CheckpointReader::~CheckpointReader() = default;

void CheckpointReader::read(const CheckpointTensor &tensor,
                            const std::vector<ShardRun> &target,
                            const ElementSink &write) {
  int64_t elementBytes = static_cast<int64_t>(dtypeBytes(tensor.dtype));
  for (const CheckpointPiece &piece : tensor.pieces) {
    std::vector<RunOverlap> overlaps =
        runOverlaps(shardRuns(tensor.layout, piece.ranges), target);
    if (overlaps.empty())
      continue;
    std::unique_ptr<SafetensorsReader> &reader = readers[piece.rank];
    if (!reader)
      reader =
          std::make_unique<SafetensorsReader>(checkpoint.filePath(piece.rank));
    const SafetensorsEntry *entry = reader->header().find(tensor.name);
    if (!entry)
      throw RuntimeError(reader->path() + ": no tensor '" + tensor.name + "'");
    // Whole elements per chunk, so that every call converts cleanly; no
    // larger than the longest overlap needs.
    int64_t longest = 0;
    for (const RunOverlap &overlap : overlaps)
      longest = std::max(longest, overlap.length);
    int64_t chunkElements = std::max<int64_t>(
        1, std::min(kCheckpointChunkBytes / elementBytes, longest));
    for (const RunOverlap &overlap : overlaps)
      for (int64_t done = 0; done < overlap.length;) {
        int64_t count = std::min(overlap.length - done, chunkElements);
        int64_t bytes = count * elementBytes;
        if (static_cast<int64_t>(chunk.size()) < bytes)
          chunk.resize(static_cast<size_t>(bytes));
        reader->read(*entry, (overlap.source + done) * elementBytes,
                     chunk.data(), bytes);
        write(overlap.target + done, chunk.data(), count);
        totals.bytesRead += bytes;
        done += count;
      }
  }
  totals.bufferBytes =
      std::max(totals.bufferBytes, static_cast<int64_t>(chunk.size()));
}

void loadRankCheckpoint(const OpenedCheckpoint &checkpoint, const Plan &plan,
                        int rank, const WriteVariableBytes &write,
                        LoadStats *stats) {
  CheckpointReader reader(checkpoint);
  std::vector<unsigned char> zeros;
  for (size_t index = 0; index < plan.variables.size(); ++index) {
    const PlanVariable &variable = plan.variables[index];
    if (!plan.holds(variable, rank))
      continue;
    int variableIndex = static_cast<int>(index);
    int64_t elementBytes = static_cast<int64_t>(dtypeBytes(variable.dtype));
    std::vector<ShardRun> target =
        shardRuns(layoutOf(variable), variable.shard(rank));
    // What no run fills is padding (the tail of a flat partition, of each
    // row of a model-split one): it reads as zero.
    std::vector<std::pair<int64_t, int64_t>> filled; // Local [begin, end).
    for (const ShardRun &run : target)
      filled.emplace_back(run.local, run.local + run.length);
    std::sort(filled.begin(), filled.end());
    filled.emplace_back(shardElements(variable.shard(rank)), 0);
    int64_t at = 0;
    for (const auto &range : filled) {
      int64_t bytes = (range.first - at) * elementBytes;
      if (bytes > 0) {
        int64_t size = std::min(bytes, kCheckpointChunkBytes);
        if (static_cast<int64_t>(zeros.size()) < size)
          zeros.resize(static_cast<size_t>(size), 0);
        for (int64_t done = 0; done < bytes; done += size)
          write(variableIndex, at * elementBytes + done, zeros.data(),
                std::min(bytes - done, size));
      }
      at = std::max(at, range.second);
    }
    reader.read(*checkpoint.manifest.findTensor(variable.name), target,
                [&](int64_t element, const void *data, int64_t count) {
                  write(variableIndex, element * elementBytes, data,
                        count * elementBytes);
                });
  }
  if (stats) {
    stats->bytesRead += reader.stats().bytesRead;
    stats->bufferBytes = std::max(stats->bufferBytes,
                                  std::max(static_cast<int64_t>(zeros.size()),
                                           reader.stats().bufferBytes));
  }
}

} // namespace zerosbp::runtime
