//===- ExportPlan.cpp - zero-export-plan ----------------------------------===//
//
// Writes a planned function as the JSON plan of docs/plan-format.md, which
// the runtime reads without MLIR. Everything the runtime needs is spelled
// out: value slots in the arena, one instruction per op that does work (views
// and in-place assignments need none), collectives with their group, bucket
// layout and stream, the buffers to release after each instruction, and the
// per-rank shard of every variable and input.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/LocalUtils.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"
#include "passes/inference/InferenceAttrs.h"
#include "passes/memory/PlanAttrs.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROEXPORTPLAN
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

/// The plan format this compiler writes (docs/plan-format.md).
static constexpr int64_t kPlanVersion = 2;

/// The checksum's digits as written, before sealPlan fills them in.
static constexpr llvm::StringLiteral kUnsealed = "00000000";

/// Fills in the checksum, the last member of the plan: the CRC-32 of the
/// text with its digits as "00000000" (docs/plan-format.md#checksum).
static void sealPlan(std::string &text) {
  size_t digits = text.rfind('"' + kUnsealed.str() + '"') + 1;
  uint32_t crc = llvm::crc32(llvm::arrayRefFromStringRef(text));
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(crc, 8);
  text.replace(digits, kUnsealed.size(), hex);
}

static std::string dtypeOf(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF64())
    return "f64";
  if (type.isInteger(64))
    return "i64";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(1))
    return "i1";
  if (type.isInteger(8))
    return "i8";
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// An attribute as JSON: numbers, booleans, strings and arrays as such; an
/// enum or anything else as its printed form.
static llvm::json::Value toJson(Attribute attr) {
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return boolean.getValue();
  if (auto integer = dyn_cast<IntegerAttr>(attr)) {
    if (integer.getType().isInteger(1))
      return integer.getValue().getBoolValue();
    return integer.getValue().getSExtValue();
  }
  if (auto number = dyn_cast<FloatAttr>(attr))
    return number.getValueAsDouble();
  if (isa<UnitAttr>(attr))
    return true;
  if (auto text = dyn_cast<StringAttr>(attr))
    return text.getValue().str();
  if (auto array = dyn_cast<DenseI64ArrayAttr>(attr))
    return llvm::json::Array(array.asArrayRef());
  if (auto array = dyn_cast<DenseI16ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (int16_t element : array.asArrayRef())
      values.push_back(static_cast<int64_t>(element));
    return values;
  }
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dict)
      object[entry.getName().getValue()] = toJson(entry.getValue());
    return object;
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (Attribute element : array)
      values.push_back(toJson(element));
    return values;
  }
  if (auto type = dyn_cast<TypeAttr>(attr))
    return dtypeOf(type.getValue());
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os, /*elideType=*/true);
  // `#nn<init normal>` and the like: keep the keyword.
  StringRef bare(text);
  if (bare.starts_with("#") && bare.ends_with(">") && bare.contains(' '))
    bare = bare.drop_back().rsplit(' ').second;
  return bare.str();
}

namespace {

class Exporter {
public:
  Exporter(func::FuncOp func, const llvm::json::Value *config,
           std::string nvmePath, bool pinMemory)
      : func(func), block(func.getBody().front()), positions(block),
        config(config), nvmePath(std::move(nvmePath)), pinMemory(pinMemory) {}

  LogicalResult run(llvm::raw_ostream &os);

private:
  LogicalResult numberValues();
  LogicalResult writeInstruction(llvm::json::OStream &json, Operation &op,
                                 ArrayRef<int64_t> frees);
  void writeTensorEntry(llvm::json::OStream &json, Operation *op, Value value,
                        StringRef name);
  void writeValueList(llvm::json::OStream &json, StringRef key,
                      ValueRange values);

  func::FuncOp func;
  Block &block;
  OpPositions positions;
  /// The ZeRO config to store in the plan; null when none was given.
  const llvm::json::Value *config;
  std::string nvmePath;
  bool pinMemory = false;
  /// The arena of each memory kind the buffers use, device first.
  llvm::StringMap<int64_t> arenaOf;
  SmallVector<std::string> arenaKinds;
  llvm::DenseMap<Operation *, int64_t> transferIds;
  std::vector<PlannedBuffer> buffers;
  /// Copies and the bytes between them of each buffer held once per
  /// micro-batch in flight (zero.micro_slots).
  std::map<int64_t, std::pair<int64_t, int64_t>> microSlots;
  llvm::DenseMap<Value, int64_t> ids;
  SmallVector<Value> values;
  /// The plan's ranks and grid: with pipeline stages, every stage's ranks
  /// as [stages, ...one stage's grid] (docs/plan-format.md).
  DeviceKind device = DeviceKind::cpu;
  SmallVector<int64_t> ranks, hierarchy;
  /// Pipeline stages (1: none); a stage's collectives run over the axes
  /// after the pipeline axis.
  int64_t stages = 1;
  int64_t firstHopBucket = 0;
  llvm::DenseMap<Operation *, int64_t> hopBuckets;

  LogicalResult readPlacement();
  /// An op attribute that names axes of a stage's grid (`grid_axis`,
  /// `grid_axes`) or holds one entry per axis (`split_dims`), on the plan's
  /// hierarchy, whose pipeline axis comes first; other attributes as they
  /// are.
  llvm::json::Value planAxes(StringRef name, llvm::json::Value value) const;
  /// The stages that run `op`, written as `stages` when pipelined.
  void writeStages(llvm::json::OStream &json, Operation &op);
};

} // namespace

LogicalResult Exporter::numberValues() {
  for (Operation &op : block)
    for (Value result : op.getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      if (!readSlot(result))
        return op.emitOpError("zero-export-plan: result #")
               << cast<OpResult>(result).getResultNumber()
               << " has no slot; run zero-memory-plan first";
      ids[result] = values.size();
      values.push_back(result);
    }
  return success();
}

void Exporter::writeValueList(llvm::json::OStream &json, StringRef key,
                              ValueRange list) {
  json.attributeArray(key, [&] {
    for (Value value : list)
      json.value(ids.lookup(value));
  });
}

/// A distributed tensor: its shapes and SBP. Which block each rank holds
/// follows from them (the reader computes it), so the plan does not grow
/// with the ranks.
void Exporter::writeTensorEntry(llvm::json::OStream &json, Operation *op,
                                Value value, StringRef name) {
  auto local = cast<RankedTensorType>(value.getType());
  auto globalAttr = op->getAttrOfType<TypeAttr>(kGlobalTypeAttr);
  auto global =
      globalAttr ? cast<RankedTensorType>(globalAttr.getValue()) : local;
  json.attribute("name", name);
  json.attribute("value", ids.lookup(value));
  json.attribute("dtype", dtypeOf(local.getElementType()));
  json.attribute("local_shape", llvm::json::Array(local.getShape()));
  json.attribute("global_shape", llvm::json::Array(global.getShape()));
  if (GlobalTensorAttr encoding = getGlobalEncoding(global))
    json.attributeArray("sbp", [&] {
      // Whole on the pipeline axis: the tensor's stage holds all of it.
      if (stages > 1)
        json.value("B");
      for (SbpAttr sbp : encoding.getSbp())
        json.value(sbp.str());
    });
  if (int64_t stage = pipelineStageOf(op); stages > 1 && stage >= 0)
    json.attribute("stage", stage);
}

void Exporter::writeStages(llvm::json::OStream &json, Operation &op) {
  if (stages <= 1)
    return;
  if (int64_t stage = pipelineStageOf(&op); stage >= 0)
    json.attribute("stages", llvm::json::Array({stage}));
}

llvm::json::Value Exporter::planAxes(StringRef name,
                                     llvm::json::Value value) const {
  if (stages <= 1)
    return value;
  if (name == "grid_axis")
    return *value.getAsInteger() + 1;
  if (name == "grid_axes" || name == "split_dims") {
    llvm::json::Array shifted;
    if (name == "split_dims")
      shifted.push_back(-1); // Whole on the pipeline axis.
    for (const llvm::json::Value &entry : *value.getAsArray())
      shifted.push_back(name == "grid_axes" ? *entry.getAsInteger() + 1
                                            : *entry.getAsInteger());
    return shifted;
  }
  return value;
}

LogicalResult Exporter::readPlacement() {
  // One grid per pipeline stage, each the first's ranks shifted by its
  // size; without stages, the one grid of the module.
  auto module = func->getParentOfType<ModuleOp>();
  SmallVector<PlacementAttr> grids;
  for (auto grid : module.getOps<shard::GridOp>())
    if (auto attr = grid->getAttrOfType<PlacementAttr>(kPlacementAttr))
      if (!llvm::is_contained(grids, attr))
        grids.push_back(attr);
  if (grids.empty())
    return func.emitError("zero-export-plan: no shard.grid with a ")
           << kPlacementAttr << "; run zero-partition first";
  auto pipeline = func->getAttrOfType<DictionaryAttr>(kPipelineAttr);
  if (!pipeline) {
    if (grids.size() > 1)
      return func.emitError("zero-export-plan: a plan holds one placement, "
                            "found ")
             << grids[0] << " and " << grids[1];
    device = grids.front().getDevice();
    ranks = llvm::to_vector(grids.front().getRanks());
    hierarchy = llvm::to_vector(grids.front().getHierarchyShape());
    return success();
  }
  stages = cast<IntegerAttr>(pipeline.get("stages")).getInt();
  llvm::sort(grids, [](PlacementAttr a, PlacementAttr b) {
    return a.getRanks().front() < b.getRanks().front();
  });
  PlacementAttr first = grids.front();
  for (int64_t s = 0; s < stages; ++s) {
    bool found = s < static_cast<int64_t>(grids.size());
    if (found) {
      PlacementAttr grid = grids[s];
      found = grid.getDevice() == first.getDevice() &&
              grid.getHierarchyShape() == first.getHierarchyShape();
      for (auto [index, rank] : llvm::enumerate(first.getRanks()))
        found =
            found && grid.getRanks()[index] == rank + s * first.getNumRanks();
    }
    if (!found)
      return func.emitError("zero-export-plan: pipeline stage ")
             << s << " has no placement of the first stage's grid shifted "
             << "by its ranks";
    llvm::append_range(ranks, grids[s].getRanks());
  }
  if (static_cast<int64_t>(grids.size()) != stages)
    return func.emitError("zero-export-plan: ")
           << grids.size() << " placements for " << stages
           << " pipeline stages";
  device = first.getDevice();
  hierarchy = {stages};
  llvm::append_range(hierarchy, first.getHierarchyShape());
  return success();
}

LogicalResult Exporter::writeInstruction(llvm::json::OStream &json,
                                         Operation &op,
                                         ArrayRef<int64_t> frees) {
  auto common = [&] {
    writeValueList(json, "operands", op.getOperands());
    if (!frees.empty())
      json.attribute("free", llvm::json::Array(frees));
  };
  if (auto start = dyn_cast<CollectiveStartOp>(op)) {
    CollectiveWaitOp wait = waitOf(start);
    json.object([&] {
      json.attribute("op", "collective_start");
      json.attribute("kind", stringifyCollectiveKind(start.getKind()));
      json.attribute("stream", "comm");
      json.attribute("bucket", start.getBucket().value_or(0));
      int64_t axis = start.getHierarchyAxis() + (stages > 1 ? 1 : 0);
      json.attribute("group_axis", axis);
      json.attribute("group_size", hierarchy[axis]);
      writeStages(json, op);
      json.attribute("reduce", stringifyReduceKind(start.getReduce()));
      if (start.getGatherAxis())
        json.attribute("gather_axis", *start.getGatherAxis());
      if (start.getScatterAxis())
        json.attribute("scatter_axis", *start.getScatterAxis());
      writeValueList(json, "results", wait.getResults());
      // The bucket as one flat buffer: each segment's full-size extent.
      json.attributeArray("segments", [&] {
        int64_t offset = 0;
        for (auto [input, result] :
             llvm::zip(start.getInputs(), wait.getResults())) {
          int64_t numel = std::max(numElements(input.getType()),
                                   numElements(result.getType()));
          json.object([&] {
            json.attribute("offset", offset);
            json.attribute("numel", numel);
          });
          offset += numel;
        }
      });
      if (auto staging = start->getAttrOfType<IntegerAttr>(kStagingAttr))
        json.attribute("staging", staging.getInt());
      common();
    });
    return success();
  }
  if (auto wait = dyn_cast<CollectiveWaitOp>(op)) {
    auto start = cast<CollectiveStartOp>(wait.getFuture().getDefiningOp());
    json.object([&] {
      json.attribute("op", "collective_wait");
      json.attribute("bucket", start.getBucket().value_or(0));
      writeStages(json, op);
      if (!frees.empty())
        json.attribute("free", llvm::json::Array(frees));
    });
    return success();
  }
  if (isa<SendOp, RecvOp>(op)) {
    // Each half is a send_recv of its own over the pipeline axis, run by
    // its stage alone: the send where the value is made, the receive where
    // it is first read (docs/plan-format.md).
    auto send = dyn_cast<SendOp>(op);
    RecvOp recv = send ? RecvOp() : cast<RecvOp>(op);
    if (send)
      for (Operation *user : send.getMessage().getUsers())
        recv = dyn_cast<RecvOp>(user);
    else
      send = recv.getSend();
    if (!send || !recv)
      return op.emitOpError("zero-export-plan: a send without its receive");
    int64_t bucket = hopBuckets.lookup(&op);
    json.object([&] {
      json.attribute("op", "collective_start");
      json.attribute("kind", "send_recv");
      json.attribute("stream", "comm");
      json.attribute("bucket", bucket);
      json.attribute("group_axis", 0);
      json.attribute("group_size", stages);
      json.attribute("source_stage", send.getSourceStage());
      json.attribute("target_stage", send.getTargetStage());
      writeStages(json, op);
      writeValueList(json, "operands", send.getInput());
      writeValueList(json, "results", recv.getResult());
      json.attributeArray("segments", [&] {
        json.object([&] {
          json.attribute("offset", 0);
          json.attribute("numel", numElements(send.getInput().getType()));
        });
      });
      if (!frees.empty())
        json.attribute("free", llvm::json::Array(frees));
    });
    json.object([&] {
      json.attribute("op", "collective_wait");
      json.attribute("bucket", bucket);
      writeStages(json, op);
    });
    return success();
  }
  if (auto start = dyn_cast<TransferStartOp>(op)) {
    json.object([&] {
      json.attribute("op", "transfer_start");
      writeStages(json, op);
      json.attribute("transfer", transferIds.lookup(&op));
      json.attribute("from", stringifyMemoryKind(start.getFrom()));
      json.attribute("to", stringifyMemoryKind(start.getTo()));
      json.attribute("stream", "copy");
      auto wait = cast<TransferWaitOp>(*start.getFuture().getUsers().begin());
      writeValueList(json, "results", wait->getResults());
      common();
    });
    return success();
  }
  if (auto wait = dyn_cast<TransferWaitOp>(op)) {
    json.object([&] {
      json.attribute("op", "transfer_wait");
      writeStages(json, op);
      json.attribute("transfer", transferIds.lookup(wait.getStart()));
      if (!frees.empty())
        json.attribute("free", llvm::json::Array(frees));
    });
    return success();
  }
  if (auto assign = dyn_cast<nn::AssignOp>(op)) {
    json.object([&] {
      json.attribute("op", "copy");
      writeStages(json, op);
      json.attribute("variable", assign.getName());
      common();
    });
    return success();
  }
  bool known = isa<shard::AllSliceOp, ToPartialOp>(op) ||
               (op.getDialect() && isa<nn::NNDialect>(op.getDialect()));
  if (!known)
    return op.emitOpError("zero-export-plan: the runtime has no instruction "
                          "for this op");
  json.object([&] {
    json.attribute("op", op.getName().getStringRef());
    writeStages(json, op);
    if (auto memory = op.getAttrOfType<MemoryKindAttr>(kMemoryKindAttr))
      json.attribute("memory", stringifyMemoryKind(memory.getValue()));
    writeValueList(json, "results", op.getResults());
    json.attributeObject("attrs", [&] {
      for (NamedAttribute attr : op.getAttrs()) {
        StringRef name = attr.getName().getValue();
        if (name.starts_with(kZeroAttrPrefix))
          continue;
        if (name == "grid") {
          // shard.all_slice: the grid is the plan's placement.
          continue;
        }
        json.attribute(name, planAxes(name, toJson(attr.getValue())));
      }
      if (op.hasAttr(kLossSeedAttr))
        json.attribute("loss_seed", true);
      if (auto dim = op.getAttrOfType<IntegerAttr>(kMicroBatchDimAttr))
        json.attribute("micro_batch_dim", dim.getInt());
    });
    common();
  });
  return success();
}

/// `zero.pipeline`'s loop: the chunks with their instruction ranges and
/// each stage's [chunk, micro-batch] order.
static void
writeLoop(llvm::json::OStream &json, DictionaryAttr loop,
          const std::map<int64_t, std::pair<int64_t, int64_t>> &ranges) {
  json.attributeArray("chunks", [&] {
    for (auto [index, entry] :
         llvm::enumerate(loop.getAs<ArrayAttr>("chunks"))) {
      auto chunk = cast<DictionaryAttr>(entry);
      json.object([&] {
        json.attribute("stage", cast<IntegerAttr>(chunk.get("stage")).getInt());
        json.attribute("phase",
                       cast<StringAttr>(chunk.get("phase")).getValue());
        json.attribute("model", cast<IntegerAttr>(chunk.get("model")).getInt());
        auto range = ranges.find(index);
        std::pair<int64_t, int64_t> at = range == ranges.end()
                                             ? std::pair<int64_t, int64_t>{0, 0}
                                             : range->second;
        json.attribute("instructions",
                       llvm::json::Array({at.first, at.second}));
      });
    }
  });
  json.attributeArray("order", [&] {
    for (Attribute stage : loop.getAs<ArrayAttr>("order")) {
      ArrayRef<int64_t> pairs = cast<DenseI64ArrayAttr>(stage).asArrayRef();
      json.array([&] {
        for (size_t i = 0; i + 1 < pairs.size(); i += 2)
          json.value(llvm::json::Array({pairs[i], pairs[i + 1]}));
      });
    }
  });
}

LogicalResult Exporter::run(llvm::raw_ostream &os) {
  FailureOr<std::vector<PlannedBuffer>> planned = readPlannedBuffers(func);
  if (failed(planned))
    return failure();
  buffers = std::move(*planned);
  auto memory = func->getAttrOfType<DictionaryAttr>(kMemoryAttr);
  if (!memory)
    return func.emitError("zero-export-plan: no ")
           << kMemoryAttr << "; run zero-memory-plan first";
  if (failed(numberValues()))
    return failure();
  // Arenas: device memory always, then host memory and NVMe files when
  // some buffer is there.
  for (const char *kind : kMemoryKinds) {
    bool used = StringRef(kind) == "device" ||
                llvm::any_of(buffers, [&](const PlannedBuffer &buffer) {
                  return stringifyMemoryKind(buffer.memory) == kind;
                });
    if (!used)
      continue;
    if (StringRef(kind) != "device" &&
        !isa_and_nonnull<DictionaryAttr>(memory.get(kind)))
      return func.emitError("zero-export-plan: buffers in ")
             << kind << " memory but no " << kind << " entry in "
             << kMemoryAttr;
    if (StringRef(kind) == "nvme" && nvmePath.empty())
      return func.emitError("zero-export-plan: the plan has NVMe buffers "
                            "but no nvme-path (offload_optimizer.nvme_path)");
    arenaOf[kind] = arenaKinds.size();
    arenaKinds.push_back(kind);
  }
  for (Operation &op : block)
    if (isa<TransferStartOp>(op))
      transferIds[&op] = transferIds.size();
  if (failed(readPlacement()))
    return failure();
  // The hops' buckets follow the collectives'.
  for (auto start : block.getOps<CollectiveStartOp>())
    firstHopBucket =
        std::max<int64_t>(firstHopBucket, start.getBucket().value_or(0) + 1);
  for (Operation &op : block)
    if (isa<SendOp, RecvOp>(op))
      hopBuckets[&op] = firstHopBucket + hopBuckets.size();

  // The micro-batch loop's chunks: each a contiguous range of
  // instructions (docs/plan-format.md#micro-batch-loop).
  std::map<int64_t, std::pair<int64_t, int64_t>> chunkRanges;
  {
    int64_t index = 0, current = -1;
    bool after = false;
    for (Operation &op : block) {
      if (!hasInstruction(op))
        continue;
      // A send or a receive is two instructions: its half and its wait.
      int64_t count = isa<SendOp, RecvOp>(op) ? 2 : 1;
      int64_t chunk = pipelineMark(&op, kLoopChunkAttr);
      if (chunk < 0) {
        after = after || current >= 0;
      } else if (after || chunk < current ||
                 (chunk != current && chunkRanges.count(chunk))) {
        return op.emitOpError("zero-export-plan: the micro-batch loop's "
                              "chunk ")
               << chunk << " is not one contiguous range of the program";
      } else {
        auto &range =
            chunkRanges.try_emplace(chunk, index, index).first->second;
        range.second = index + count;
        current = chunk;
      }
      index += count;
    }
  }
  // Buffers held once per micro-batch in flight.
  if (auto slotted = func->getAttrOfType<DenseI64ArrayAttr>(kMicroSlotsAttr))
    for (size_t i = 0; i + 2 < static_cast<size_t>(slotted.size()) + 0; i += 3)
      microSlots[slotted[i]] = {slotted[i + 1], slotted[i + 2]};

  // Buffers released after each op: those whose last read is there.
  llvm::DenseMap<int64_t, SmallVector<int64_t>> freesAt;
  int64_t end = positions[block.getTerminator()];
  for (auto [index, buffer] : llvm::enumerate(buffers))
    if (buffer.last < end)
      freesAt[buffer.last].push_back(index);
  // Ops without an instruction pass their releases on to the next one.
  SmallVector<int64_t> pending;

  llvm::json::OStream json(os, /*IndentSize=*/1);
  LogicalResult result = success();
  json.object([&] {
    json.attribute("format", "zerosbp-plan");
    json.attribute("version", kPlanVersion);
    json.attribute("function", func.getName());
    // Inference plans say so; a training plan has no `mode`, as before.
    if (func->hasAttr(kInferenceAttr))
      json.attribute("mode", "eval");
    if (auto stage = func->getAttrOfType<IntegerAttr>(kStageAttr))
      json.attribute("stage", stage.getInt());
    json.attribute("world", static_cast<int64_t>(ranks.size()));
    json.attributeObject("placement", [&] {
      json.attribute("device", stringifyDeviceKind(device));
      json.attribute("ranks", llvm::json::Array(ranks));
      json.attribute("hierarchy", llvm::json::Array(hierarchy));
    });
    if (auto pipeline = func->getAttrOfType<DictionaryAttr>(kPipelineAttr))
      json.attributeObject("pipeline", [&] {
        for (StringRef key : {"stages", "micro_batches", "schedule", "bubble"})
          json.attribute(key, toJson(pipeline.get(key)));
        // Only an interleaved schedule says how many chunks a stage holds.
        if (auto chunks = pipeline.getAs<IntegerAttr>("model_chunks");
            chunks && chunks.getInt() > 1)
          json.attribute("model_chunks", chunks.getInt());
        if (auto loop = pipeline.getAs<DictionaryAttr>("loop"))
          json.attributeObject("loop",
                               [&] { writeLoop(json, loop, chunkRanges); });
      });
    if (config)
      json.attribute("config", *config);
    json.attributeObject("memory", [&] {
      for (NamedAttribute entry : memory)
        json.attribute(entry.getName().getValue(), toJson(entry.getValue()));
    });
    json.attribute("arena_bytes", toJson(memory.get("arena")));
    // One arena per memory kind in use (docs/plan-format.md#arenas).
    json.attributeArray("arenas", [&] {
      for (const std::string &kind : arenaKinds)
        json.object([&] {
          json.attribute("memory", kind);
          llvm::json::Value bytes = toJson(memory.get("arena"));
          if (kind != "device")
            bytes = toJson(cast<DictionaryAttr>(memory.get(kind)).get("arena"));
          json.attribute("bytes", std::move(bytes));
          if (kind == "host")
            json.attribute("pinned", pinMemory);
          if (kind == "nvme")
            json.attribute("path", nvmePath);
        });
    });
    json.attributeArray("buffers", [&] {
      for (auto [index, buffer] : llvm::enumerate(buffers))
        json.object([&] {
          json.attribute("offset", buffer.offset);
          // zero-memory-plan's buffer spans every copy of a slotted one.
          auto slots = microSlots.find(index);
          if (slots != microSlots.end()) {
            auto [copies, stride] = slots->second;
            json.attribute("bytes", buffer.bytes - (copies - 1) * stride);
            json.attribute("micro_slots", copies);
            json.attribute("slot_bytes", stride);
          } else {
            json.attribute("bytes", buffer.bytes);
          }
          json.attribute("live",
                         llvm::json::Array({buffer.first, buffer.last}));
          json.attribute("role", stringifyBufferRole(buffer.role));
          json.attribute("arena",
                         arenaOf.lookup(stringifyMemoryKind(buffer.memory)));
          if (buffer.stage >= 0)
            json.attribute("stage", buffer.stage);
        });
    });
    json.attributeArray("values", [&] {
      for (Value value : values) {
        auto type = cast<RankedTensorType>(value.getType());
        Slot slot = *readSlot(value);
        json.object([&] {
          json.attribute("buffer", slot.buffer);
          json.attribute("offset", slot.offset);
          json.attribute("dtype", dtypeOf(type.getElementType()));
          json.attribute("shape", llvm::json::Array(type.getShape()));
        });
      }
    });
    json.attributeArray("variables", [&] {
      for (auto variable : block.getOps<nn::VariableOp>())
        json.object([&] {
          writeTensorEntry(json, variable, variable.getResult(),
                           variable.getName());
          json.attribute("role", stringifyRole(variable.getRole()));
          json.attribute("init", stringifyInitializer(variable.getInit()));
          json.attribute("init_scale",
                         variable.getInitScale().convertToDouble());
          json.attribute("frozen", variable.getFrozen());
          if (std::optional<ArrayRef<int64_t>> logical =
                  variable.getLogicalShape())
            json.attribute("logical_shape", llvm::json::Array(*logical));
          if (std::optional<ArrayRef<int64_t>> split = variable.getModelSplit())
            json.attributeObject("model_split", [&] {
              json.attribute("axis", (*split)[0] + (stages > 1 ? 1 : 0));
              json.attribute("dim", (*split)[1]);
            });
          if (auto copyOf = variable->getAttrOfType<StringAttr>(kCopyOfAttr))
            json.attribute("copy_of", copyOf.getValue());
        });
    });
    json.attributeArray("inputs", [&] {
      for (auto input : block.getOps<nn::InputOp>())
        json.object([&] {
          writeTensorEntry(json, input, input.getResult(), input.getName());
        });
    });
    json.attributeArray("steps", [&] {
      for (auto step : block.getOps<nn::StepOp>())
        json.value(ids.lookup(step.getResult()));
    });
    writeValueList(json, "outputs", block.getTerminator()->getOperands());
    json.attributeArray("instructions", [&] {
      for (Operation &op : block) {
        llvm::append_range(pending, freesAt.lookup(positions[&op]));
        if (!hasInstruction(op))
          continue;
        if (failed(writeInstruction(json, op, pending))) {
          result = failure();
          return;
        }
        pending.clear();
      }
    });
    // Last, so that the reader finds its digits from the end.
    json.attribute("checksum", kUnsealed);
  });
  os << "\n";
  return result;
}

namespace {
struct ZeroExportPlanPass
    : zerosbp::impl::ZeroExportPlanBase<ZeroExportPlanPass> {
  using ZeroExportPlanBase::ZeroExportPlanBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        funcs.push_back(func);
    if (funcs.size() != 1) {
      module.emitError("zero-export-plan: expected one training function, "
                       "found ")
          << funcs.size();
      return signalPassFailure();
    }
    // A plan comes only from IR that verifies, whether or not the pass
    // manager verified after each pass.
    if (failed(mlir::verify(module)))
      return signalPassFailure();
    std::optional<llvm::json::Value> parsedConfig;
    if (!config.empty()) {
      llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(config);
      if (!parsed) {
        module.emitError("zero-export-plan: config is not JSON: ")
            << llvm::toString(parsed.takeError());
        return signalPassFailure();
      }
      parsedConfig = std::move(*parsed);
    }
    // Write to a string first: a failed export leaves no partial file.
    std::string text;
    llvm::raw_string_ostream os(text);
    Exporter exporter(funcs.front(), parsedConfig ? &*parsedConfig : nullptr,
                      nvmePath, pinMemory);
    if (failed(exporter.run(os)))
      return signalPassFailure();
    os.flush();
    sealPlan(text);
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(file, &error);
    if (!out) {
      module.emitError("zero-export-plan: cannot write '")
          << file << "': " << error;
      return signalPassFailure();
    }
    out->os() << text;
    // A full disk shows only at the flush; reported here, it names the
    // file instead of ending the process in raw_fd_ostream's destructor.
    out->os().flush();
    if (out->os().has_error()) {
      std::string reason = out->os().error().message();
      out->os().clear_error();
      module.emitError("zero-export-plan: cannot write '")
          << file << "': " << reason;
      return signalPassFailure();
    }
    out->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
