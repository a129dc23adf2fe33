//===- Plan.h - a compiled training step, as the runtime sees it -*- C++
//-*-===//
//
// The in-memory form of a `.zplan` file (docs/plan-format.md, version 2).
// Every id in it has been checked by the reader: value, buffer, bucket and
// transfer ids are in range, values lie inside their buffers and buffers
// inside their arenas, and only transfers touch an NVMe arena, so the
// executor indexes without checking again.
//
// A pipeline-parallel plan (docs/plan-format.md#pipeline) gives
// buffers, variables, inputs and instructions a stage: a rank runs the
// instructions of its stage only and touches only its stage's buffers (and
// those of every stage), which may share bytes with other stages' buffers.
// A file that holds one micro-batch's instructions per chunk of a loop
// (docs/plan-format.md#micro-batch-loop) is held unrolled, as a file of
// the whole program would be.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_PLAN_PLAN_H
#define ZEROSBP_RUNTIME_PLAN_PLAN_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/AttrMap.h"
#include "runtime/core/DType.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::runtime {

/// What a buffer holds; the runtime reports its peak bytes by role.
enum class Role {
  Param,
  Grad,
  Master,
  OptState,
  Activation,
  Input,
  CommBuffer
};
constexpr int kNumRoles = 7;
const char *roleName(Role role);
std::optional<Role> parseRole(const std::string &name);

/// Where an arena's bytes are: the device's memory, host memory (ZeRO-Offload)
/// or a file on NVMe (ZeRO-Infinity) (docs/plan-format.md#arenas).
enum class MemoryKind { Device, Host, Nvme };
const char *memoryKindName(MemoryKind kind);
std::optional<MemoryKind> parseMemoryKind(const std::string &name);

struct PlanArena {
  MemoryKind memory = MemoryKind::Device;
  int64_t bytes = 0;
  /// Host arenas: page-locked (CUDA).
  bool pinned = false;
  /// NVMe arenas: the directory that holds the rank's file.
  std::string path;
};

struct PlanBuffer {
  int64_t offset = 0; // Bytes within its arena.
  int64_t bytes = 0;
  int64_t liveFirst = 0;
  int64_t liveLast = 0;
  Role role = Role::Activation;
  int arena = 0;
  /// The pipeline stage whose ranks use it; -1: every rank.
  int stage = -1;
};

struct PlanValue {
  int buffer = 0;
  int64_t offset = 0; // Bytes within the buffer.
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numel() const;
  int64_t bytes() const { return numel() * dtypeBytes(dtype); }
};

/// [begin, end) of one dim of the global tensor.
using DimRange = std::pair<int64_t, int64_t>;

/// A tensor distributed over the ranks: a variable or an input.
struct DistributedTensor {
  std::string name;
  int value = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> localShape;
  std::vector<int64_t> globalShape;
  std::vector<std::string> sbp;
  /// The pipeline stage whose ranks hold it (its value's buffer's); -1:
  /// every rank.
  int stage = -1;
  /// The dim each hierarchy axis splits, -1 where it does not (from `sbp`),
  /// and the plan's hierarchy: what shard() computes a rank's block from.
  std::vector<int> splitDims;
  std::vector<int64_t> hierarchy;
  /// shards[rank][dim], where given explicitly (hand-built plans, tests);
  /// empty for a plan read from a file, whose size so does not grow with
  /// the ranks (docs/plan-format.md#variables-and-inputs).
  std::vector<std::vector<DimRange>> shards;

  /// Rank `rank`'s block of the global tensor, [begin, end) per dim: its
  /// balanced part of each split dim (the compiler's rule), or shards[rank].
  std::vector<DimRange> shard(int rank) const;
};

/// Where a flat ZeRO partition of a variable that tensor parallelism splits
/// comes from (docs/plan-format.md#variables-and-inputs): its global tensor
/// is [P, N] with P = hierarchy[axis], and row t is part t of the model
/// tensor along dim `dim`, flattened and zero-padded to N.
struct ModelSplit {
  int axis = 0; // The hierarchy axis (the model axis).
  int dim = 0;  // The model tensor's dim it splits.
  bool operator==(const ModelSplit &other) const {
    return axis == other.axis && dim == other.dim;
  }
  bool operator!=(const ModelSplit &other) const { return !(*this == other); }
};

struct PlanVariable : DistributedTensor {
  Role role = Role::Param;
  std::string init = "zeros";
  double initScale = 0;
  bool frozen = false;
  /// The model tensor's shape when the variable is a flat, padded ZeRO
  /// partition of it.
  std::optional<std::vector<int64_t>> logicalShape;
  /// With logicalShape: the partition is split along a model dim first.
  std::optional<ModelSplit> modelSplit;
  std::optional<std::string> copyOf;
  /// The model tensor's shape: logicalShape, else globalShape.
  const std::vector<int64_t> &modelShape() const {
    return logicalShape ? *logicalShape : globalShape;
  }
};

using PlanInput = DistributedTensor;

struct Segment {
  int64_t offset = 0; // Elements, in the full-size flat bucket.
  int64_t numel = 0;
};

enum class InstructionKind {
  Kernel,
  AllSlice,
  ToPartial,
  CollectiveStart,
  CollectiveWait,
  Copy,
  TransferStart,
  TransferWait
};

struct Instruction {
  InstructionKind kind = InstructionKind::Kernel;
  std::string op; // "nn.matmul", "shard.all_slice", "collective_start", ...
  AttrMap attrs;
  std::vector<int> operands;
  std::vector<int> results;
  std::vector<int> free; // Buffer ids released after this instruction.
  /// The pipeline stages whose ranks run it, increasing; empty: every rank.
  std::vector<int> stages;
  // Collectives.
  CollectiveKind collective = CollectiveKind::AllReduce;
  int bucket = -1;
  int groupAxis = 0;
  int groupSize = 1;
  ReduceOp reduce = ReduceOp::Sum;
  std::optional<int> gatherAxis;
  std::optional<int> scatterAxis;
  std::vector<Segment> segments;
  std::optional<int> staging;
  /// send_recv: the stage that sends operand 0 and the one that receives
  /// it into result 0 (group indices on the pipeline axis).
  int sourceStage = -1;
  int targetStage = -1;
  // Copies.
  std::string variable;
  int variableIndex = -1;
  // Kernels: the memory they compute in, host for an offloaded update.
  MemoryKind memory = MemoryKind::Device;
  // Transfers between arenas: operand 0 goes to result 0.
  int transfer = -1;
  MemoryKind from = MemoryKind::Device;
  MemoryKind to = MemoryKind::Device;
};

struct PlanMemory {
  int64_t arena = 0;
  int64_t lowerBound = 0;
  int64_t modelStates = 0;
  int64_t peak[kNumRoles] = {};
};

/// One chunk of a plan's micro-batch loop: the file's instructions [first,
/// end), which one stage runs for each micro-batch of one phase of one model
/// chunk (docs/plan-format.md#micro-batch-loop).
struct PlanLoopChunk {
  int stage = 0;
  bool backward = false;
  int model = 0;
  int first = 0;
  int end = 0;
};

/// The micro-batch loop of a plan file (`pipeline.loop`), kept for reports:
/// the file held one micro-batch's instructions per chunk, and the reader
/// unrolled them by `order` into Plan::instructions.
struct PlanLoop {
  /// The file's instructions: before the chunks, the chunks, after them.
  int templateInstructions = 0;
  std::vector<PlanLoopChunk> chunks;
  /// order[s]: the (chunk, micro-batch) pairs stage s runs, in order.
  std::vector<std::vector<std::pair<int, int>>> order;
};

/// How a plan runs its pipeline stages (docs/plan-format.md#pipeline).
/// The stages are hierarchy axis 0; the schedule and micro-batches are
/// already in the instruction order, and are kept for reports.
struct PlanPipeline {
  int stages = 1;
  int microBatches = 1;
  std::string schedule = "1f1b";
  /// The compiler's estimate of the step's idle fraction, in [0, 1).
  double bubble = 0;
  /// Model chunks (virtual stages) per stage: more than one interleaves
  /// 1F1B over them.
  int modelChunks = 1;
  /// Where the file held one micro-batch's instructions: the loop it
  /// unrolled.
  std::optional<PlanLoop> loop;
};

struct Plan {
  std::string source; // The file it was read from, for messages.
  std::string function;
  /// An inference plan (`"mode": "eval"`): the forward's outputs, no
  /// gradients or updates (docs/plan-format.md).
  bool inference = false;
  std::optional<int> stage;
  int world = 1;
  std::string device = "cpu";
  std::vector<int> ranks;
  std::vector<int64_t> hierarchy;
  /// Pipeline parallelism; absent for a plan of one stage.
  std::optional<PlanPipeline> pipeline;
  std::string configJson; // The compile configuration, as JSON text.
  PlanMemory memory;
  /// The device arena's bytes: arenas[0].bytes.
  int64_t arenaBytes = 0;
  /// Device first, then host memory and NVMe when the plan offloads.
  std::vector<PlanArena> arenas;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanValue> values;
  std::vector<PlanVariable> variables;
  std::vector<PlanInput> inputs;
  std::vector<int> steps;
  std::vector<int> outputs;
  std::vector<Instruction> instructions;
  int numBuckets = 0;
  int numTransfers = 0;

  /// The memory of the arena buffer `buffer` is in.
  MemoryKind memoryOf(int buffer) const {
    return arenas[buffers[buffer].arena].memory;
  }
  /// The byte offset of value `id` in its arena: an NVMe file's offset.
  int64_t arenaOffset(int id) const {
    return buffers[values[id].buffer].offset + values[id].offset;
  }
  /// Whether variable `index` lives in the NVMe arena.
  bool variableInNvme(int index) const {
    return memoryOf(values[variables[index].value].buffer) == MemoryKind::Nvme;
  }

  /// Rank `rank`'s pipeline stage: its coordinate on hierarchy axis 0; 0
  /// without a pipeline.
  int stageOf(int rank) const;
  /// Whether the ranks of `stage` run `instruction`.
  bool runsOn(const Instruction &instruction, int stage) const;
  /// Whether the ranks of `stage` use buffer `buffer`, value `value`.
  bool bufferOnStage(int buffer, int stage) const {
    return buffers[buffer].stage < 0 || buffers[buffer].stage == stage;
  }
  bool valueOnStage(int value, int stage) const {
    return bufferOnStage(values[value].buffer, stage);
  }
  /// Whether rank `rank` holds `tensor`, a variable or an input: only the
  /// ranks of its stage touch its bytes.
  bool holds(const DistributedTensor &tensor, int rank) const {
    return tensor.stage < 0 || tensor.stage == stageOf(rank);
  }

  /// Coordinates of `rank` in the hierarchy, row-major.
  std::vector<int64_t> coordinates(int rank) const;
  /// The ranks that share `rank`'s coordinates on every axis but `axis`,
  /// ordered by their coordinate on `axis`.
  std::vector<int> groupOf(int rank, int axis) const;
  const PlanVariable *findVariable(const std::string &name) const;
  /// The plan scales the loss dynamically (fp16): it has the variable
  /// `amp.loss_scale`, and a step whose gradients overflow skips its
  /// updates, so a non-finite loss there is expected.
  bool scalesLossDynamically() const;
};

/// How a plan is read.
struct PlanReadOptions {
  /// Refuse a plan whose `checksum` is missing or differs from its text
  /// (docs/plan-format.md#checksum). Off only where plans are written by
  /// hand (unit tests) and in the fuzzer, which must get past it.
  bool verifyChecksum = true;
};

/// Reads and checks a plan; throws RuntimeError ("<file>: <what>") on a file
/// that cannot be read, is not JSON, is truncated, is not a ZeroSBP plan, has
/// another version, fails its checksum, or is inconsistent.
Plan readPlan(const std::string &path, const PlanReadOptions &options = {});
Plan parsePlan(const std::string &text, const std::string &source,
               const PlanReadOptions &options = {});

/// The CRC-32 (zlib's) of a plan's `text` with the 8 hex digits of its
/// checksum, at `digits`, read as "00000000" (docs/plan-format.md#checksum).
uint32_t planChecksum(const std::string &text, size_t digits);

/// Throws unless a run on `ranks` ranks can execute the plan.
void checkRankCount(const Plan &plan, int ranks);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_PLAN_PLAN_H
