//===- PipelineStages.cpp - zero-pipeline-stages --------------------------===//
//
// Pipeline parallelism on the global view (docs/design.md#pipeline-
// parallelism). Each op gets a stage, each stage's values move to that
// stage's placement (the first stage's ranks shifted, the same grid), a
// value read on another stage crosses by a cast between the placements,
// and the ops are ordered as the micro-batch schedule runs them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/OpCost.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"
#include "passes/pipeline/PipelineSchedule.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <map>
#include <set>

namespace zerosbp {
#define GEN_PASS_DEF_ZEROPIPELINESTAGES
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using zerosbp::kGradSumAttr;
using zerosbp::kLoopCarriedAttr;
using zerosbp::kLoopChunkAttr;
using zerosbp::kLossSeedAttr;
using zerosbp::kPipelineAttr;
using zerosbp::pipeline::Chunk;
using zerosbp::pipeline::Phase;
using zerosbp::pipeline::Schedule;
using zerosbp::pipeline::scheduleOf;
using zerosbp::pipeline::StageChunk;

namespace {

/// An op without operands that each stage may compute for itself instead
/// of receiving it: a fill, the step counter. Variables and inputs hold
/// state or data and live on one stage.
bool isCopiedPerStage(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         !isa<nn::VariableOp, nn::InputOp>(op) && isMemoryEffectFree(op);
}

class StagePlanner {
public:
  StagePlanner(func::FuncOp func, const Schedule &schedule, bool loop)
      : func(func), body(func.getBody().front()), builder(func.getContext()),
        schedule(schedule), stages(schedule.stages), loop(loop) {}

  LogicalResult run();

private:
  LogicalResult makePlacements();
  LogicalResult assignStages();
  void movePlacements();
  void connectStages();
  Value crossTo(Value value, int64_t stage);
  LogicalResult order();
  LogicalResult orderLoop(const DenseMap<Operation *, Chunk> &chunkOfOp);
  LogicalResult recordPlan(ArrayRef<SmallVector<Operation *>> sequences,
                           const DenseMap<Operation *, Chunk> &chunkOfOp);
  LogicalResult
  recordStep(const std::map<StageChunk, double> &cost,
             const std::map<StageChunk, std::set<StageChunk>> &waitsFor,
             SmallVector<NamedAttribute> entries);

  int64_t stageOf(Operation *op) const { return stage.lookup(op); }
  /// Which of its stage's model chunks `op` belongs to.
  int64_t modelChunkOf(Operation *op) const {
    return virtualStage.lookup(op) / stages;
  }
  /// `type` on stage `s`'s placement, in its own memory kind; a type
  /// without a global encoding as it is.
  Type onStage(Type type, int64_t s);
  /// Puts `op` on virtual stage `v`: model chunk v / stages of stage
  /// v % stages. The mark it keeps is the stage, as later passes read it.
  void setStage(Operation *op, int64_t v) {
    virtualStage[op] = v;
    stage[op] = v % stages;
    op->setAttr(nn::kPipelineStageAttr, builder.getI64IntegerAttr(v % stages));
  }

  func::FuncOp func;
  Block &body;
  OpBuilder builder;
  Schedule schedule;
  int64_t stages;
  /// The graph is one micro-batch's, run as a loop (zero.micro_batch_loop).
  bool loop;
  SmallVector<PlacementAttr> placements; // Per stage, in device memory.
  llvm::DenseMap<Operation *, int64_t> stage, virtualStage;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> crossed;
  llvm::DenseMap<std::pair<Operation *, int64_t>, Operation *> copies;
  /// The casts between stages: their operand's stage is not theirs.
  llvm::DenseSet<Operation *> hops;
};

} // namespace

LogicalResult StagePlanner::makePlacements() {
  PlacementAttr first;
  auto check = [&](Type type, Operation *op) -> LogicalResult {
    auto encoding = getGlobalEncoding(type);
    if (!encoding)
      return success();
    PlacementAttr placement = encoding.getPlacement().onDevice();
    if (!first)
      first = placement;
    if (placement != first)
      return op->emitOpError("zero-pipeline-stages: the graph is placed on ")
             << first << " and " << placement
             << "; a pipelined graph is captured on one stage's placement";
    return success();
  };
  if (body.getNumArguments() != 0)
    return func.emitError("zero-pipeline-stages: @")
           << func.getSymName()
           << " takes arguments; a pipelined graph reads its data by "
              "nn.input";
  for (Operation &op : body)
    for (Type type : op.getResultTypes())
      if (failed(check(type, &op)))
        return failure();
  if (!first)
    return func.emitError("zero-pipeline-stages: @")
           << func.getSymName() << " has no placed tensor";
  int64_t size = first.getNumRanks();
  for (int64_t s = 0; s < stages; ++s) {
    SmallVector<int64_t> ranks;
    for (int64_t rank : first.getRanks())
      ranks.push_back(rank + s * size);
    placements.push_back(PlacementAttr::get(
        func.getContext(), first.getDevice(), ranks, first.getHierarchy()));
  }
  return success();
}

LogicalResult StagePlanner::assignStages() {
  SmallVector<Operation *> open;
  int64_t virtualStages = stages * schedule.modelChunks;
  for (Operation &op : body.without_terminator()) {
    int64_t mark = zerosbp::pipelineMark(&op, nn::kPipelineStageAttr);
    if (mark >= virtualStages) {
      if (schedule.modelChunks == 1)
        return op.emitOpError("zero-pipeline-stages: marked for stage ")
               << mark << " of " << stages;
      return op.emitOpError("zero-pipeline-stages: marked for virtual stage ")
             << mark << " of " << virtualStages << " (" << stages
             << " stages of " << schedule.modelChunks << " model chunks)";
    }
    if (mark >= 0)
      setStage(&op, mark);
    else
      open.push_back(&op);
  }
  // Virtual stages of the placed operands (or users) of `op`.
  auto stagesOf = [&](auto &&ops) {
    std::set<int64_t> found;
    for (Operation *other : ops)
      if (other && virtualStage.count(other))
        found.insert(virtualStage.lookup(other));
    return found;
  };
  // What each stage can compute for itself (the step a dropout's module
  // made on its stage) does not pull a reader to that stage.
  auto producers = [](Operation *op) {
    return llvm::map_to_vector(op->getOperands(), [](Value operand) {
      Operation *producer = operand.getDefiningOp();
      return producer && isCopiedPerStage(producer) ? nullptr : producer;
    });
  };
  auto users = [](Operation *op) {
    SmallVector<Operation *> found;
    for (Operation *user : op->getUsers())
      if (!isa<func::ReturnOp>(user))
        found.push_back(user);
    return found;
  };
  // Where its operands are, else where its users are; an op torn between
  // stages goes to the earliest.
  while (!open.empty()) {
    bool placed = false;
    auto settle = [&](auto &&rule) {
      for (Operation *&op : open)
        if (op && (rule)(op)) {
          op = nullptr;
          placed = true;
        }
      llvm::erase(open, nullptr);
    };
    settle([&](Operation *op) {
      std::set<int64_t> found = stagesOf(producers(op));
      if (found.size() != 1)
        return false;
      setStage(op, *found.begin());
      return true;
    });
    if (placed)
      continue;
    std::reverse(open.begin(), open.end());
    settle([&](Operation *op) {
      std::set<int64_t> found = stagesOf(users(op));
      if (found.size() != 1 || !stagesOf(producers(op)).empty())
        return false;
      setStage(op, *found.begin());
      return true;
    });
    std::reverse(open.begin(), open.end());
    if (placed)
      continue;
    settle([&](Operation *op) {
      std::set<int64_t> found = stagesOf(producers(op));
      if (found.empty())
        found = stagesOf(users(op));
      if (found.empty())
        return false;
      setStage(op, *found.begin());
      return true;
    });
    if (placed)
      continue;
    // Nothing reaches these ops from a placed one: they feed nothing.
    for (Operation *op : open)
      setStage(op, 0);
    open.clear();
  }
  return success();
}

Type StagePlanner::onStage(Type type, int64_t s) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  GlobalTensorAttr encoding = tensor ? getGlobalEncoding(tensor) : nullptr;
  if (!encoding)
    return type;
  return RankedTensorType::get(
      tensor.getShape(), tensor.getElementType(),
      GlobalTensorAttr::get(
          func.getContext(), encoding.getSbp(),
          placements[s].withMemory(encoding.getPlacement().getMemory()),
          encoding.getRole()));
}

void StagePlanner::movePlacements() {
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults())
      result.setType(onStage(result.getType(), stageOf(&op)));
}

Value StagePlanner::crossTo(Value value, int64_t target) {
  Operation *producer = value.getDefiningOp();
  if (isCopiedPerStage(producer)) {
    Operation *&copy = copies[{producer, target}];
    if (!copy) {
      builder.setInsertionPointAfter(producer);
      copy = builder.clone(*producer);
      setStage(copy, target);
      for (OpResult result : copy->getResults())
        result.setType(onStage(result.getType(), target));
    }
    return copy->getResult(cast<OpResult>(value).getResultNumber());
  }
  Value &hop = crossed[{value, target}];
  if (hop)
    return hop;
  builder.setInsertionPointAfter(producer);
  auto cast = CastOp::create(builder, value.getLoc(),
                             onStage(value.getType(), target), value);
  // It runs with its producer; the receiving stage takes it from there.
  setStage(cast, virtualStage.lookup(producer));
  // A running total crosses after the loop, once.
  if (Attribute micro = producer->getAttr(nn::kMicroBatchAttr);
      micro && !producer->hasAttr(kLoopCarriedAttr))
    cast->setAttr(nn::kMicroBatchAttr, micro);
  hops.insert(cast);
  hop = cast.getResult();
  return hop;
}

void StagePlanner::connectStages() {
  SmallVector<Operation *> ops = llvm::map_to_vector(
      body.without_terminator(), [](Operation &op) { return &op; });
  for (Operation *op : ops)
    for (OpOperand &operand : op->getOpOperands()) {
      Operation *producer = operand.get().getDefiningOp();
      if (producer && stageOf(producer) != stageOf(op))
        operand.set(crossTo(operand.get(), stageOf(op)));
    }
  // The loss goes to the first stage, whose rank 0 reports it.
  Operation *ret = body.getTerminator();
  for (OpOperand &operand : ret->getOpOperands()) {
    Operation *producer = operand.get().getDefiningOp();
    if (producer && stageOf(producer) != 0 &&
        getGlobalEncoding(operand.get().getType()))
      operand.set(crossTo(operand.get(), 0));
  }
  func.setFunctionType(builder.getFunctionType({}, ret->getOperandTypes()));
}

LogicalResult StagePlanner::order() {
  // The backward starts at its seed; without one (an eval graph) every
  // micro-batch op is a forward.
  DenseMap<Operation *, int64_t> index;
  int64_t seedAt = INT64_MAX;
  for (Operation &op : body) {
    index[&op] = index.size();
    if (op.hasAttr(kLossSeedAttr))
      seedAt = std::min<int64_t>(seedAt, index[&op]);
  }
  SmallVector<std::map<Chunk, int64_t>> slotOfChunk(stages);
  for (int64_t s = 0; s < stages; ++s)
    for (auto [at, chunk] : llvm::enumerate(scheduleOf(s, schedule)))
      slotOfChunk[s][chunk] = at;
  // The slot of each op in its stage's run: its chunk's, or for an op of
  // no micro-batch the latest slot of what it reads (-1: before any).
  // Each op's chunk, read before the ops move.
  DenseMap<Operation *, Chunk> chunkOfOp;
  for (Operation &op : body.without_terminator())
    if (int64_t micro = zerosbp::pipelineMark(&op, nn::kMicroBatchAttr);
        micro >= 0)
      chunkOfOp[&op] = {index.lookup(&op) < seedAt ? Phase::Forward
                                                   : Phase::Backward,
                        micro, modelChunkOf(&op)};
  if (loop)
    return orderLoop(chunkOfOp);
  auto chunkOf = [&](Operation *op) -> std::optional<Chunk> {
    auto it = chunkOfOp.find(op);
    return it == chunkOfOp.end() ? std::nullopt
                                 : std::optional<Chunk>(it->second);
  };
  DenseMap<Operation *, int64_t> slot;
  for (Operation &op : body.without_terminator()) {
    int64_t s = stageOf(&op);
    if (std::optional<Chunk> chunk = chunkOf(&op)) {
      auto it = slotOfChunk[s].find(*chunk);
      if (it == slotOfChunk[s].end())
        return op.emitOpError("zero-pipeline-stages: micro-batch ")
               << chunk->micro << " is not one of the " << schedule.microBatches
               << " micro-batches";
      slot[&op] = it->second;
      continue;
    }
    int64_t latest = -1;
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer)
        continue;
      if (stageOf(producer) == s && !hops.contains(producer)) {
        latest = std::max(latest, slot.lookup(producer));
        continue;
      }
      // Received from another stage: no earlier than this stage's chunk
      // of the same micro-batch and direction in the op's model chunk.
      if (std::optional<Chunk> chunk = chunkOf(producer)) {
        chunk->model = modelChunkOf(&op);
        auto it = slotOfChunk[s].find(*chunk);
        latest = std::max(latest, it == slotOfChunk[s].end() ? 0 : it->second);
      } else
        latest = std::max(latest, slot.lookup(producer));
    }
    slot[&op] = latest;
  }
  // Each stage's run: by slot, then as the graph had them, except that a
  // gradient's running total takes each contribution right after it is
  // made (zero-autodiff builds the sums after the whole backward), so that
  // one micro-batch's contributions are not all held at once.
  DenseMap<Operation *, double> place;
  for (Operation &op : body.without_terminator()) {
    double at = index.lookup(&op);
    if (op.hasAttr(kGradSumAttr)) {
      // After what it reads in its own slot; the earlier slots run first.
      at = -1;
      for (Value operand : op.getOperands())
        if (Operation *producer = operand.getDefiningOp();
            producer && stageOf(producer) == stageOf(&op) &&
            slot.lookup(producer) == slot.lookup(&op))
          at = std::max(at, place.lookup(producer) + 0.5);
    }
    place[&op] = at;
  }
  SmallVector<SmallVector<Operation *>> sequences(stages);
  for (Operation &op : body.without_terminator())
    sequences[stageOf(&op)].push_back(&op);
  for (SmallVector<Operation *> &sequence : sequences)
    llvm::stable_sort(sequence, [&](Operation *a, Operation *b) {
      return std::make_pair(slot.lookup(a), place.lookup(a)) <
             std::make_pair(slot.lookup(b), place.lookup(b));
    });
  // One program: the stages' runs merged in an order that respects every
  // value, as the ranks meet at each send and receive.
  SmallVector<size_t> next(stages, 0);
  DenseSet<Operation *> done;
  SmallVector<Operation *> program;
  auto ready = [&](Operation *op) {
    return llvm::all_of(op->getOperands(), [&](Value operand) {
      Operation *producer = operand.getDefiningOp();
      return !producer || done.contains(producer);
    });
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s)
      while (next[s] < sequences[s].size() && ready(sequences[s][next[s]])) {
        Operation *op = sequences[s][next[s]++];
        done.insert(op);
        program.push_back(op);
        progress = true;
      }
  }
  for (int64_t s = 0; s < stages; ++s)
    if (next[s] < sequences[s].size())
      return sequences[s][next[s]]->emitOpError(
                 "zero-pipeline-stages: the schedule cannot run this op on "
                 "stage ")
             << s << ": what it reads comes later in the schedule";
  Operation *terminator = body.getTerminator();
  for (Operation *op : program)
    body.getOperations().splice(terminator->getIterator(), body.getOperations(),
                                op->getIterator());
  // The schedule's chunks and what each waits for, for the bubble.
  return recordPlan(sequences, chunkOfOp);
}

/// Under a micro-batch loop the graph holds micro-batch 0 only. Its ops
/// fall in three parts: those that run once before the loop (what reads
/// no micro-batch: variables, parameter casts, the fills that zero the
/// running totals), the chunks (one stage's forward or backward of one
/// model chunk), run once per micro-batch in the schedule's order, and
/// those that run once after it (what reads the totals: the optimizer).
/// The program is the part before, the chunks in an order that runs one
/// micro-batch through the pipeline, and the part after; `zero.pipeline`'s
/// `loop` names the chunks and each stage's order of chunks and
/// micro-batches (docs/design.md#the-micro-batch-loop).
LogicalResult
StagePlanner::orderLoop(const DenseMap<Operation *, Chunk> &chunkOfOp) {
  using Key = std::tuple<int64_t, Phase, int64_t>; // Stage, phase, model.
  // One micro-batch through the pipeline: forwards by virtual stage, then
  // backwards in reverse.
  auto rankOf = [&](const Key &key) {
    auto [s, phase, model] = key;
    int64_t v = model * stages + s;
    return phase == Phase::Forward ? std::make_pair(0, v)
                                   : std::make_pair(1, -v);
  };
  enum class Part { Before, Chunk, After };
  DenseMap<Operation *, Part> partOf;
  DenseMap<Operation *, Key> keyOf;
  for (Operation &op : body.without_terminator()) {
    auto chunk = chunkOfOp.find(&op);
    if (chunk != chunkOfOp.end()) {
      partOf[&op] = Part::Chunk;
      keyOf[&op] = {stageOf(&op), chunk->second.phase, chunk->second.model};
      continue;
    }
    std::optional<Key> latest;
    bool after = false;
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || partOf.lookup(producer) == Part::Before)
        continue;
      if (partOf.lookup(producer) == Part::After ||
          producer->hasAttr(kLoopCarriedAttr)) {
        after = true;
        continue;
      }
      Key key = keyOf.lookup(producer);
      // Received from another stage: this stage's chunk of the same
      // direction in the op's model chunk.
      if (stageOf(producer) != stageOf(&op) || hops.contains(producer))
        key = {stageOf(&op), std::get<1>(key), modelChunkOf(&op)};
      if (!latest || rankOf(*latest) < rankOf(key))
        latest = key;
    }
    if (latest && after)
      return op.emitOpError(
          "zero-pipeline-stages: reads both a micro-batch's value and a "
          "value of the whole loop; the micro-batch loop cannot run it");
    partOf[&op] = latest ? Part::Chunk : after ? Part::After : Part::Before;
    if (latest)
      keyOf[&op] = *latest;
  }
  // A micro-batch op may not read what the loop's end makes.
  for (Operation &op : body.without_terminator())
    if (partOf.lookup(&op) == Part::Chunk)
      for (Value operand : op.getOperands())
        if (Operation *producer = operand.getDefiningOp();
            producer && partOf.lookup(producer) == Part::After)
          return op.emitOpError(
              "zero-pipeline-stages: a micro-batch op reads a value made "
              "after the micro-batch loop");

  // The chunks, in the order of one micro-batch's run.
  std::map<Key, int64_t> chunkIds;
  for (auto &[op, key] : keyOf)
    chunkIds[key] = 0;
  SmallVector<Key> keys = llvm::map_to_vector(
      chunkIds, [](const auto &entry) { return entry.first; });
  llvm::stable_sort(
      keys, [&](const Key &a, const Key &b) { return rankOf(a) < rankOf(b); });
  for (auto [id, key] : llvm::enumerate(keys))
    chunkIds[key] = id;

  // Within a chunk, as the graph had them, except that a running total
  // takes each contribution right after it is made.
  DenseMap<Operation *, int64_t> index;
  for (Operation &op : body)
    index[&op] = index.size();
  DenseMap<Operation *, double> place;
  for (Operation &op : body.without_terminator()) {
    double at = index.lookup(&op);
    if (op.hasAttr(kGradSumAttr) && partOf.lookup(&op) == Part::Chunk) {
      at = -1;
      for (Value operand : op.getOperands())
        if (Operation *producer = operand.getDefiningOp();
            producer && partOf.lookup(producer) == Part::Chunk &&
            keyOf.lookup(producer) == keyOf.lookup(&op))
          at = std::max(at, place.lookup(producer) + 0.5);
    }
    place[&op] = at;
  }
  SmallVector<Operation *> program = llvm::map_to_vector(
      body.without_terminator(), [](Operation &op) { return &op; });
  auto sectionOf = [&](Operation *op) -> int64_t {
    switch (partOf.lookup(op)) {
    case Part::Before:
      return -1;
    case Part::Chunk:
      return chunkIds.at(keyOf.lookup(op));
    case Part::After:
      return static_cast<int64_t>(keys.size());
    }
    llvm_unreachable("a part");
  };
  llvm::stable_sort(program, [&](Operation *a, Operation *b) {
    return std::make_pair(sectionOf(a), place.lookup(a)) <
           std::make_pair(sectionOf(b), place.lookup(b));
  });
  DenseSet<Operation *> done;
  for (Operation *op : program) {
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp();
          producer && !done.contains(producer))
        return op->emitOpError("zero-pipeline-stages: the micro-batch loop "
                               "cannot run this op on stage ")
               << stageOf(op) << ": what it reads comes later in the loop";
    done.insert(op);
  }
  Operation *terminator = body.getTerminator();
  for (Operation *op : program) {
    body.getOperations().splice(terminator->getIterator(), body.getOperations(),
                                op->getIterator());
    if (partOf.lookup(op) == Part::Chunk)
      op->setAttr(kLoopChunkAttr, builder.getI64IntegerAttr(sectionOf(op)));
  }
  // A hop's receive runs in the first chunk that reads it on the other
  // stage (zero-partition puts it there). Messages between two stages
  // pair in the order sent, so what one chunk sends to a stage is received
  // in one chunk there: the first that reads any of it.
  std::map<std::pair<int64_t, int64_t>, int64_t> receiveChunk;
  auto channelOf = [&](Operation *hop) {
    return std::make_pair(sectionOf(hop), stageOf(*hop->getUsers().begin()));
  };
  for (Operation *hop : hops) {
    if (partOf.lookup(hop) != Part::Chunk || hop->use_empty())
      continue;
    for (Operation *user : hop->getUsers())
      if (partOf.lookup(user) == Part::Chunk) {
        auto [it, inserted] =
            receiveChunk.try_emplace(channelOf(hop), sectionOf(user));
        it->second = std::min(it->second, sectionOf(user));
      }
  }
  for (Operation *hop : hops)
    if (partOf.lookup(hop) == Part::Chunk && !hop->use_empty())
      if (auto it = receiveChunk.find(channelOf(hop)); it != receiveChunk.end())
        hop->setAttr(zerosbp::kLoopReceiveChunkAttr,
                     builder.getI64IntegerAttr(it->second));

  // Each chunk's planned time and the chunks it receives from, the same
  // for every micro-batch.
  std::map<Key, double> chunkCost;
  std::map<Key, std::set<Key>> chunkWaits;
  for (Operation *op : program) {
    if (partOf.lookup(op) != Part::Chunk)
      continue;
    Key key = keyOf.lookup(op);
    chunkCost[key] += zerosbp::matmulFlops(op);
    for (Value operand : op->getOperands()) {
      Operation *hop = operand.getDefiningOp();
      if (!hop || !hops.contains(hop) || partOf.lookup(hop) != Part::Chunk)
        continue;
      chunkWaits[key].insert(keyOf.lookup(hop));
    }
  }
  auto stageChunk = [](const Key &key, int64_t micro) {
    auto [s, phase, model] = key;
    return StageChunk{s, Chunk{phase, micro, model}};
  };
  std::map<StageChunk, double> cost;
  std::map<StageChunk, std::set<StageChunk>> waitsFor;
  for (int64_t m = 0; m < schedule.microBatches; ++m) {
    for (auto &[key, flops] : chunkCost)
      cost[stageChunk(key, m)] = flops;
    for (auto &[key, from] : chunkWaits)
      for (const Key &source : from)
        waitsFor[stageChunk(key, m)].insert(stageChunk(source, m));
  }
  SmallVector<Attribute> chunkAttrs =
      llvm::map_to_vector(keys, [&](const Key &key) -> Attribute {
        auto [s, phase, model] = key;
        return builder.getDictionaryAttr({
            builder.getNamedAttr("stage", builder.getI64IntegerAttr(s)),
            builder.getNamedAttr(
                "phase", builder.getStringAttr(
                             phase == Phase::Forward ? "forward" : "backward")),
            builder.getNamedAttr("model", builder.getI64IntegerAttr(model)),
        });
      });
  SmallVector<Attribute> orders;
  for (int64_t s = 0; s < stages; ++s) {
    SmallVector<int64_t> order;
    for (const Chunk &chunk : scheduleOf(s, schedule)) {
      auto it = chunkIds.find(Key{s, chunk.phase, chunk.model});
      if (it == chunkIds.end())
        continue;
      order.push_back(it->second);
      order.push_back(chunk.micro);
    }
    orders.push_back(builder.getDenseI64ArrayAttr(order));
  }
  NamedAttribute loopEntry = builder.getNamedAttr(
      "loop",
      builder.getDictionaryAttr({
          builder.getNamedAttr("chunks", builder.getArrayAttr(chunkAttrs)),
          builder.getNamedAttr("order", builder.getArrayAttr(orders)),
      }));
  return recordStep(cost, waitsFor, {loopEntry});
}

LogicalResult
StagePlanner::recordPlan(ArrayRef<SmallVector<Operation *>> sequences,
                         const DenseMap<Operation *, Chunk> &chunkOfOp) {
  // Each chunk's planned time is its matmul FLOPs; a chunk waits for the
  // chunks whose values it receives.
  std::map<StageChunk, double> cost;
  std::map<StageChunk, std::set<StageChunk>> waitsFor;
  auto keyOf = [&](Operation *op) -> std::optional<StageChunk> {
    auto it = chunkOfOp.find(op);
    if (it == chunkOfOp.end())
      return std::nullopt;
    return StageChunk{stageOf(op), it->second};
  };
  for (const SmallVector<Operation *> &sequence : sequences)
    for (Operation *op : sequence) {
      std::optional<StageChunk> key = keyOf(op);
      if (!key)
        continue;
      cost[*key] += zerosbp::matmulFlops(op);
      for (Value operand : op->getOperands()) {
        Operation *hop = operand.getDefiningOp();
        if (!hop || !hops.contains(hop))
          continue;
        Operation *source = hop->getOperand(0).getDefiningOp();
        if (std::optional<StageChunk> from =
                source ? keyOf(source) : std::nullopt)
          waitsFor[*key].insert(*from);
      }
    }
  return recordStep(cost, waitsFor, {});
}

LogicalResult StagePlanner::recordStep(
    const std::map<StageChunk, double> &cost,
    const std::map<StageChunk, std::set<StageChunk>> &waitsFor,
    SmallVector<NamedAttribute> extra) {
  auto [planned, stalled] =
      zerosbp::pipeline::planStep(schedule, cost, waitsFor);
  if (!planned) {
    InFlightDiagnostic error =
        func.emitError("zero-pipeline-stages: the planned schedule stalls on "
                       "stage ")
        << stalled.first << " at the "
        << (stalled.second.phase == Phase::Forward ? "forward" : "backward")
        << " of micro-batch " << stalled.second.micro;
    if (schedule.modelChunks > 1)
      error << " in model chunk " << stalled.second.model;
    return error;
  }
  SmallVector<Attribute> stageFlops =
      llvm::map_to_vector(planned->busy, [&](double busy) -> Attribute {
        return builder.getF64FloatAttr(busy);
      });
  SmallVector<NamedAttribute> entries = {
      builder.getNamedAttr("stages", builder.getI64IntegerAttr(stages)),
      builder.getNamedAttr("micro_batches",
                           builder.getI64IntegerAttr(schedule.microBatches)),
      builder.getNamedAttr(
          "schedule", builder.getStringAttr(schedule.gpipe ? "gpipe" : "1f1b")),
      builder.getNamedAttr("bubble",
                           builder.getF64FloatAttr(planned->bubble())),
      builder.getNamedAttr("stage_flops", builder.getArrayAttr(stageFlops)),
  };
  if (schedule.modelChunks > 1)
    entries.push_back(builder.getNamedAttr(
        "model_chunks", builder.getI64IntegerAttr(schedule.modelChunks)));
  entries.append(extra.begin(), extra.end());
  func->setAttr(kPipelineAttr, builder.getDictionaryAttr(entries));
  return success();
}

LogicalResult StagePlanner::run() {
  if (failed(makePlacements()) || failed(assignStages()))
    return failure();
  movePlacements();
  connectStages();
  return order();
}

namespace {
struct ZeroPipelineStagesPass
    : public zerosbp::impl::ZeroPipelineStagesBase<ZeroPipelineStagesPass> {
  using ZeroPipelineStagesBase::ZeroPipelineStagesBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || stages <= 1)
      return;
    if (microBatches < 1) {
      func.emitError("zero-pipeline-stages: micro-batches must be at least "
                     "1, got ")
          << microBatches.getValue();
      return signalPassFailure();
    }
    if (schedule != "1f1b" && schedule != "gpipe") {
      func.emitError("zero-pipeline-stages: schedule must be 1f1b or gpipe, "
                     "got '")
          << schedule.getValue() << "'";
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("zero-pipeline-stages: @")
          << func.getSymName() << " must have a single block";
      return signalPassFailure();
    }
    if (virtualStages < 1) {
      func.emitError("zero-pipeline-stages: virtual stages must be at least "
                     "1, got ")
          << virtualStages.getValue();
      return signalPassFailure();
    }
    if (virtualStages > 1 && schedule == "gpipe") {
      func.emitError("zero-pipeline-stages: virtual stages interleave the "
                     "1f1b schedule; gpipe runs one model chunk per stage");
      return signalPassFailure();
    }
    // Megatron's interleaved order takes the micro-batches in groups of P.
    if (virtualStages > 1 && microBatches % stages != 0) {
      func.emitError("zero-pipeline-stages: ")
          << virtualStages.getValue()
          << " virtual stages need the micro-batches in groups of the "
          << stages.getValue() << " stages; " << microBatches.getValue()
          << " is not a multiple";
      return signalPassFailure();
    }
    Schedule plan{stages, microBatches, virtualStages, schedule == "gpipe"};
    bool loop = func->hasAttr(zerosbp::kMicroBatchLoopAttr);
    if (loop &&
        zerosbp::pipelineMark(func.getOperation(),
                              zerosbp::kMicroBatchLoopAttr) != microBatches) {
      func.emitError("zero-pipeline-stages: the graph is a loop of ")
          << zerosbp::pipelineMark(func.getOperation(),
                                   zerosbp::kMicroBatchLoopAttr)
          << " micro-batches, but micro-batches=" << microBatches.getValue();
      return signalPassFailure();
    }
    if (failed(StagePlanner(func, plan, loop).run()))
      signalPassFailure();
  }
};
} // namespace
