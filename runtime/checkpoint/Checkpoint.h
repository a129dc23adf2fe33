//===- Checkpoint.h - saving and loading training state ---------*- C++ -*-===//
//
// The steps of a checkpoint save and load that a training session runs on
// its ranks (docs/checkpoint.md):
//
// Save: rank 0 makes `<dir>/.partial-step-N`; every rank writes the blocks
// it owns into its own file there; rank 0 then writes the manifest with
// every file's size and CRC-32 and its own checksum, renames the directory
// to `<dir>/step-N`, points `<dir>/latest` at it (written atomically, last)
// and removes all but the newest `keep` checkpoints, except those a reader
// holds. A crash at any point leaves `latest` naming a complete checkpoint;
// partial directories are removed by the next save.
//
// Load: the step directory is locked against pruning (a shared flock), the
// manifest is read and checked against its checksum and the plan, every
// file a rank reads is checked against its size and CRC-32, and only then
// are the blocks copied, run by run, into the ranks' variables, through one
// chunk buffer: the layouts (world size, stage) of the checkpoint and the
// plan may differ.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define ZEROSBP_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "runtime/checkpoint/Manifest.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime {

/// The largest buffer a save or a load allocates per rank.
constexpr int64_t kCheckpointChunkBytes = int64_t(1) << 20;

/// Bytes of one rank's shard of a plan variable: read for a save, written
/// by a load (Executor::readVariableBytes / writeVariableBytes).
using ReadVariableBytes =
    std::function<void(int variable, int64_t offset, void *out, int64_t bytes)>;
using WriteVariableBytes = std::function<void(int variable, int64_t offset,
                                              const void *data, int64_t bytes)>;

/// `step-00000020`: the directory name of the checkpoint after 20 steps.
std::string checkpointName(int64_t step);

// -- Save --------------------------------------------------------------------

/// Rank 0: creates `directory` if needed, removes partial saves a killed
/// run left, and makes the partial directory of `step`; returns its path.
/// The caller holds the directory's lock (DirectoryLock).
std::string beginCheckpoint(const std::string &directory, int64_t step);
/// The partial directory beginCheckpoint makes, for the other ranks.
std::string partialCheckpointPath(const std::string &directory, int64_t step);

/// Every rank: writes the blocks it owns into its file in `partial`.
FileDigest writeRankCheckpoint(const Plan &plan, int rank,
                               const std::string &partial,
                               const ReadVariableBytes &read);

/// Rank 0, once every file is written (`manifest.files` filled in): the
/// manifest, the rename, `latest`, and pruning to the newest `keep`
/// checkpoints (0 keeps all). Returns the checkpoint's path.
std::string commitCheckpoint(const std::string &directory,
                             const std::string &partial,
                             const CheckpointManifest &manifest, int keep);

/// Removes a partial directory after a failed save (best effort).
void abandonCheckpoint(const std::string &partial);

/// The partial directories in `directory` (`.partial-*`: a save under way,
/// or one that was interrupted), sorted, with their sizes in bytes.
std::vector<std::pair<std::string, int64_t>>
partialCheckpoints(const std::string &directory);

/// A writer holding `directory`'s lock: removes the partial directories an
/// interrupted save left. Returns one line naming them, or "" if none.
std::string removePartialCheckpoints(const std::string &directory);

// -- Load --------------------------------------------------------------------

/// A flock on a step directory: shared while a checkpoint is read, so that
/// a writer's pruning skips it and a save of the same step waits; the files
/// checked are then the files loaded.
class StepDirectoryLock;

struct OpenedCheckpoint {
  std::string directory; // The step directory.
  CheckpointManifest manifest;
  /// False for a format version 1 manifest, which has no checksum.
  bool checksummed = true;
  /// Held until the last copy of this checkpoint goes.
  std::shared_ptr<StepDirectoryLock> readLock;
  std::string manifestPath() const { return directory + "/manifest.json"; }
  std::string filePath(int rank) const;
};

/// Opens `path`: a checkpoint directory (with manifest.json) or a directory
/// of them (with `latest`), and takes its read lock. Throws naming the file
/// and the field. A version 1 manifest loads with a warning on stderr.
OpenedCheckpoint openCheckpoint(const std::string &path);

/// Throws unless the checkpoint holds exactly the plan's variables, with
/// the same model shapes, dtypes and roles, and an optimizer of the same
/// type; its world size and stage may differ. An inference plan needs its
/// parameters only: the checkpoint's other tensors are left.
void checkCompatible(const OpenedCheckpoint &checkpoint, const Plan &plan);

/// The ranks whose files rank `rank` of `plan` reads (for the variables
/// it holds).
std::vector<int> filesReadBy(const OpenedCheckpoint &checkpoint,
                             const Plan &plan, int rank);

/// Checks file `fileRank` against the manifest: its size, its CRC-32, and
/// that it holds each of its blocks with the right dtype and shape.
void verifyCheckpointFile(const OpenedCheckpoint &checkpoint, int fileRank);

struct LoadStats {
  int64_t bytesRead = 0;
  /// The largest buffer the load held (its extra memory beyond the arena).
  int64_t bufferBytes = 0;
};

/// Reads tensors of a checkpoint into any runs of their model elements,
/// a chunk at a time, keeping each file open once.
class CheckpointReader {
public:
  explicit CheckpointReader(const OpenedCheckpoint &checkpoint);
  ~CheckpointReader();
  /// Calls `write(element, data, count)` with the stored bytes (the
  /// tensor's dtype) of `count` elements going to element `element` of the
  /// runs' target, until every element `target` holds is written.
  using ElementSink =
      std::function<void(int64_t element, const void *data, int64_t count)>;
  void read(const CheckpointTensor &tensor, const std::vector<ShardRun> &target,
            const ElementSink &write);
  const LoadStats &stats() const { return totals; }

private:
  const OpenedCheckpoint &checkpoint;
  std::map<int, std::unique_ptr<SafetensorsReader>> readers;
  std::vector<unsigned char> chunk;
  LoadStats totals;
};

/// Copies rank `rank`'s shard of every plan variable it holds out of the
/// checkpoint (another pipeline stage's variable is not its to write);
/// padding of flat partitions is zeroed.
void loadRankCheckpoint(const OpenedCheckpoint &checkpoint, const Plan &plan,
                        int rank, const WriteVariableBytes &write,
                        LoadStats *stats = nullptr);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CHECKPOINT_CHECKPOINT_H
