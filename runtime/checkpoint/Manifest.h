//===- Manifest.h - what a checkpoint holds and where -----------*- C++ -*-===//
//
// A checkpoint is one directory: a safetensors file per rank with the shards
// that rank owns, and manifest.json, which describes every tensor (global
// name, model shape, dtype, role, SBP, the ranks whose files hold it and the
// ranges they hold), the run it came from (world size, stage, compile
// configuration), the training position (step, data seed) and every file's
// size and CRC-32; its own checksum covers it. docs/checkpoint.md is the
// format's reference.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CHECKPOINT_MANIFEST_H
#define ZEROSBP_RUNTIME_CHECKPOINT_MANIFEST_H

#include "runtime/core/DType.h"
#include "runtime/exec/ShardRuns.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zerosbp::runtime {

/// Version 2 added the manifest's own checksum. Version 1 manifests, which
/// have none, still load, with a warning.
constexpr int kCheckpointVersion = 2;

/// One rank's block of a tensor, stored in that rank's file.
struct CheckpointPiece {
  int rank = 0;
  std::vector<DimRange> ranges;
};

struct CheckpointTensor {
  std::string name;
  Role role = Role::Param;
  DType dtype = DType::F32;
  ShardLayout layout;
  std::vector<std::string> sbp;
  std::optional<std::string> copyOf;
  /// Each distinct block once, from the rank that wrote it.
  std::vector<CheckpointPiece> pieces;
};

struct CheckpointFile {
  std::string name;
  int rank = 0;
  int64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct CheckpointManifest {
  int version = kCheckpointVersion;
  /// Steps completed: a resumed run's next step is step + 1.
  int64_t step = 0;
  int world = 1;
  std::optional<int> stage;
  std::string function;
  std::string device;
  std::vector<int64_t> hierarchy;
  /// The compile configuration (the plan's `config`), JSON text.
  std::string configJson = "{}";
  /// Synthetic data and initial values are counter-based functions of the
  /// seed and the step, so the seed and `step` are the whole random state.
  uint64_t seed = 0;
  /// Data rows read (`data.next_step`): `step` plus the steps skipped for a
  /// loss that was not finite, which read a row but made no update.
  int64_t dataNextStep = 0;
  std::vector<CheckpointTensor> tensors;
  std::vector<CheckpointFile> files;

  const CheckpointTensor *findTensor(const std::string &name) const;
};

/// The file rank `rank` of `world` writes: rank-00001-of-00004.safetensors.
std::string rankFileName(int rank, int world);

/// The manifest of a plan's variables at `step` (files are filled in by
/// the caller once the ranks have written them).
CheckpointManifest manifestOfPlan(const Plan &plan, int64_t step,
                                  uint64_t seed);

/// Who writes each variable's blocks (indices into plan.variables, then
/// one rank per distinct block, in the order of the lowest rank holding
/// it): of the ranks holding the same block (a replicated tensor), the one
/// with the fewest bytes to write so far, the lowest on a tie. Replicated
/// state is so spread over the ranks instead of all falling to rank 0.
/// With pipeline stages only the ranks of a variable's stage hold it.
std::vector<std::vector<int>> blockWriters(const Plan &plan);

/// The variables (indices into plan.variables) rank `rank` writes.
std::vector<int> variablesOwnedBy(const Plan &plan, int rank);

std::string manifestJson(const CheckpointManifest &manifest);
/// Parses and checks a manifest; throws RuntimeError("<source>: <field>:
/// ...") on anything malformed, inconsistent or from a newer version.
CheckpointManifest parseManifest(const std::string &text,
                                 const std::string &source);

/// manifest.json as saved: manifestJson with, on its second line,
/// `"checksum": "crc32:XXXXXXXX",`, the CRC-32 of every byte after that
/// line, so that any edit of the file is detected.
std::string manifestFileText(const CheckpointManifest &manifest);

/// Checks the checksum of manifest.json's `text`, then parses it. Throws
/// "<source>: checksum: ..." if the checksum does not match, or if a
/// manifest of version 2 on has none. `checksummed` is set false for a
/// version 1 manifest, which has none.
CheckpointManifest parseManifestFile(const std::string &text,
                                     const std::string &source,
                                     bool &checksummed);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CHECKPOINT_MANIFEST_H
