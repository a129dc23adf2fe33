//===- MemoryPlan.cpp - zero-memory-plan ----------------------------------===//
//
// Gives every tensor value of the final schedule a place in an arena of its
// rank: device memory, and host memory or NVMe files for what zero-offload
// placed there (docs/design.md#offload). Values share a buffer where the
// program needs no copy (views, in place updates and reductions, values
// computed straight into the variable they are assigned to, gradients written
// into their bucket); each buffer is live from its first write to its last
// read; buffers are packed best fit, largest first.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/LocalUtils.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"
#include "passes/memory/PlanAttrs.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"

#include <map>
#include <set>

namespace zerosbp {
#define GEN_PASS_DEF_ZEROMEMORYPLAN
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

struct BufferInfo {
  int64_t bytes = 0;
  BufferRole role = BufferRole::activation;
  MemoryKind memory = MemoryKind::device;
  bool persistent = false;
  /// Made for one op result and still holding only it and its views, so it
  /// may be merged into a variable or a bucket.
  bool mergeable = false;
  bool merged = false;
  SmallVector<Value> values;
  int64_t first = 0, last = 0, offset = 0;
  /// The pipeline stage whose ranks hold it; -1: every rank.
  int64_t stage = -1;
  /// Copies of it, one per micro-batch in flight, for a value of the
  /// micro-batch loop that one chunk makes and another reads.
  int64_t microSlots = 1;
};

class Planner {
public:
  Planner(func::FuncOp func, bool contiguous, int64_t alignment)
      : func(func), block(func.getBody().front()), positions(block),
        contiguous(contiguous), alignment(alignment) {}

  LogicalResult run();

private:
  int64_t newBuffer(int64_t bytes, BufferRole role, bool persistent = false,
                    bool mergeable = false,
                    MemoryKind memory = MemoryKind::device) {
    BufferInfo info;
    info.bytes = bytes;
    info.role = role;
    info.memory = memory;
    info.persistent = persistent;
    info.mergeable = mergeable;
    buffers.push_back(std::move(info));
    return buffers.size() - 1;
  }
  void place(Value value, Slot slot) {
    slots[value] = slot;
    buffers[slot.buffer].values.push_back(value);
  }
  void placeFresh(Value value, BufferRole role) {
    place(value, {newBuffer(valueBytes(value), role, false, /*mergeable=*/true,
                            memoryOf(value)),
                  0});
  }
  /// Whether `value` may share `slot`'s buffer: they are in one memory.
  bool sameMemory(Value value, Slot slot) const {
    return memoryOf(value) == buffers[slot.buffer].memory;
  }
  /// Where zero-partition put `value`: a transfer's destination, its op's
  /// `zero.memory_kind`, a variable's placement; device memory otherwise.
  static MemoryKind memoryOf(Value value);
  static int64_t valueBytes(Value value) {
    return tensorBytes(cast<RankedTensorType>(value.getType()));
  }
  /// `total + bytes`, held just past kMaxPlanBytes so that sums of many
  /// large buffers cannot wrap; pack() refuses what lies past the limit.
  static int64_t addBytes(int64_t total, int64_t bytes) {
    return std::min(total + bytes, kMaxPlanBytes + 1);
  }
  /// True when no value of `buffer` is read after `position` (reads by
  /// `ignore` do not count).
  bool readsEndBy(int64_t buffer, int64_t position,
                  Operation *ignore = nullptr) const;
  void moveBuffer(int64_t from, int64_t to, int64_t delta);
  /// Places `result`, the new running total, over `total` when nothing
  /// reads the total after `at` and none of `others` (what the op also
  /// reads) shares its buffer; returns whether it did.
  bool placeOverTotal(Value total, ValueRange others, Value result, int64_t at);

  void assignSlots();
  void layOutBuckets();
  LogicalResult retargetAssignments();
  void computeLiveness();
  /// Each buffer's pipeline stage, read off its values' ops.
  LogicalResult assignStages();
  /// Under a micro-batch loop: what the loop reads from outside it, and
  /// the running totals, live through the whole loop; what one chunk makes
  /// and a later one reads gets a copy per micro-batch in flight
  /// (docs/design.md#the-micro-batch-loop).
  LogicalResult planLoop();
  /// `bytes` rounded up to the alignment: where the next buffer may start.
  int64_t aligned(int64_t bytes) const {
    return (bytes + alignment - 1) / alignment * alignment;
  }
  /// Bytes of `info` with all its copies, each an aligned slot apart.
  int64_t extentOf(const BufferInfo &info) const {
    return info.microSlots > 1
               ? (info.microSlots - 1) * aligned(info.bytes) + info.bytes
               : info.bytes;
  }
  /// Offsets in each memory's arena, for each pipeline stage apart: the
  /// ranks of one stage never hold another's buffers.
  LogicalResult pack();
  LogicalResult pack(MemoryKind memory, int64_t stage);
  void writeAttributes();

  func::FuncOp func;
  Block &block;
  OpPositions positions;
  bool contiguous;
  int64_t alignment;
  std::vector<BufferInfo> buffers;
  llvm::DenseMap<Value, Slot> slots;
  llvm::StringMap<Value> variables;
  llvm::DenseMap<Operation *, int64_t> staging;
  llvm::DenseSet<Operation *> copies;
  SmallVector<Operation *> carriedOutOfPlace;
};

} // namespace

MemoryKind Planner::memoryOf(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return MemoryKind::device;
  if (auto wait = dyn_cast<TransferWaitOp>(op))
    if (TransferStartOp start = wait.getStart())
      return start.getTo();
  if (auto kind = op->getAttrOfType<MemoryKindAttr>(kMemoryKindAttr))
    return kind.getValue();
  if (auto global = op->getAttrOfType<TypeAttr>(kGlobalTypeAttr))
    if (GlobalTensorAttr encoding = getGlobalEncoding(global.getValue()))
      return encoding.getPlacement().getMemory();
  return MemoryKind::device;
}

/// A variable's buffer holds what the variable is: every Role is a BufferRole
/// of the same name.
static BufferRole bufferRoleOf(Role role) {
  return *symbolizeBufferRole(stringifyRole(role));
}

bool Planner::readsEndBy(int64_t buffer, int64_t position,
                         Operation *ignore) const {
  return llvm::all_of(buffers[buffer].values, [&](Value value) {
    return positions.readEnd(value, ignore) <= position;
  });
}

void Planner::moveBuffer(int64_t from, int64_t to, int64_t delta) {
  for (Value value : buffers[from].values) {
    Slot &slot = slots[value];
    slot = {to, slot.offset + delta};
    buffers[to].values.push_back(value);
  }
  buffers[from].values.clear();
  buffers[from].merged = true;
}

/// Where a view's result starts in its operand's bytes; none where the op
/// is no view here (ViewOpInterface).
static std::optional<int64_t> viewOffset(nn::ViewOpInterface view) {
  std::optional<int64_t> elements = view.getViewElementOffset();
  if (!elements)
    return std::nullopt;
  auto input = cast<RankedTensorType>(view->getOperand(0).getType());
  int64_t count = input.getNumElements();
  return count == 0 ? 0 : *elements * (tensorBytes(input) / count);
}

bool Planner::placeOverTotal(Value total, ValueRange others, Value result,
                             int64_t at) {
  auto slot = slots.find(total);
  if (slot == slots.end() || total.getType() != result.getType() ||
      buffers[slot->second.buffer].persistent ||
      !readsEndBy(slot->second.buffer, at))
    return false;
  for (Value other : others)
    if (auto it = slots.find(other);
        it != slots.end() && it->second.buffer == slot->second.buffer)
      return false;
  place(result, slot->second);
  return true;
}

void Planner::assignSlots() {
  for (Operation &op : block) {
    int64_t at = positions[&op];
    if (auto variable = dyn_cast<nn::VariableOp>(op)) {
      Value value = variable.getResult();
      place(value,
            {newBuffer(valueBytes(value), bufferRoleOf(variable.getRole()),
                       true, /*mergeable=*/false, memoryOf(value)),
             0});
      variables[variable.getName()] = value;
      continue;
    }
    if (isa<nn::InputOp>(op)) {
      placeFresh(op.getResult(0), BufferRole::input);
      buffers[slots[op.getResult(0)].buffer].mergeable = false;
      continue;
    }
    if (auto view = dyn_cast<nn::ViewOpInterface>(op)) {
      if (std::optional<int64_t> offset = viewOffset(view)) {
        Slot input = slots.lookup(op.getOperand(0));
        place(op.getResult(0), {input.buffer, input.offset + *offset});
        continue;
      }
    }
    if (auto update = dyn_cast<nn::OptimizerUpdateOpInterface>(op)) {
      // In place: each new value overwrites the one it replaces once
      // nothing reads the old one any more.
      for (OpResult result : op.getResults()) {
        Value old = update.getUpdatedOperand(result).get();
        auto it = slots.find(old);
        if (it != slots.end() && old.getType() == result.getType() &&
            sameMemory(result, it->second) && readsEndBy(it->second.buffer, at))
          place(result, it->second);
        else
          placeFresh(result, BufferRole::activation);
      }
      continue;
    }
    if (auto wait = dyn_cast<TransferWaitOp>(op)) {
      // A copy in another memory is what its source is: an optimizer
      // state read off NVMe counts as optimizer state in host memory.
      auto source = slots.find(wait.getStart().getInput());
      placeFresh(wait.getResult(), source == slots.end()
                                       ? BufferRole::activation
                                       : buffers[source->second.buffer].role);
      continue;
    }
    if (auto wait = dyn_cast<CollectiveWaitOp>(op)) {
      auto start = cast<CollectiveStartOp>(wait.getFuture().getDefiningOp());
      bool gather = isParameterGather(start);
      for (auto [index, result] : llvm::enumerate(wait.getResults())) {
        Value input = start.getInputs()[index];
        auto it = slots.find(input);
        if (start.getKind() == CollectiveKind::all_reduce &&
            it != slots.end() && !buffers[it->second.buffer].persistent &&
            readsEndBy(it->second.buffer, positions[start], start)) {
          place(result, it->second); // an all-reduce works in place
          continue;
        }
        placeFresh(result,
                   gather ? BufferRole::comm_buffer : BufferRole::activation);
      }
      continue;
    }
    // Accumulating a gradient (a sum, or a product added by its GEMM): the
    // sum goes over the running total once nothing else reads it, so the
    // total stays one buffer.
    Value total, result;
    SmallVector<Value, 2> others;
    if (auto add = dyn_cast<nn::AddOp>(op);
        add && (add->hasAttr(zerosbp::kGradSumAttr) ||
                add->hasAttr(kLoopCarriedAttr))) {
      total = add.getLhs();
      result = add.getResult();
      others = {add.getRhs()};
    } else if (auto fused = dyn_cast<nn::MatmulAddOp>(op)) {
      total = fused.getAddend();
      result = fused.getResult();
      others = {fused.getLhs(), fused.getRhs()};
    }
    if (total && placeOverTotal(total, others, result, at))
      continue;
    if (op.hasAttr(kLoopCarriedAttr))
      carriedOutOfPlace.push_back(&op);
    if (isa<nn::CrossEntropyGradOp, nn::CrossEntropySplitGradOp>(op)) {
      // The gradient goes over the logits when nothing reads them after: an
      // LM head's two largest activations (tokens x vocabulary each) are
      // then one buffer. The kernels read a row before writing it.
      Value lossLogits = op.getOperand(1), lossGrad = op.getResult(0);
      auto logits = slots.find(lossLogits);
      if (logits != slots.end() && lossLogits.getType() == lossGrad.getType() &&
          !buffers[logits->second.buffer].persistent &&
          buffers[logits->second.buffer].role == BufferRole::activation &&
          readsEndBy(logits->second.buffer, at)) {
        place(lossGrad, logits->second);
        continue;
      }
    }
    for (Value result : op.getResults())
      if (isa<RankedTensorType>(result.getType()))
        placeFresh(result, BufferRole::activation);
  }
  // A buffer that feeds an update's gradient holds a gradient, and so does
  // a micro-batch loop's running total of a gradient.
  for (auto update : block.getOps<nn::OptimizerUpdateOpInterface>()) {
    BufferInfo &grad = buffers[slots.lookup(update.getGradient()).buffer];
    if (grad.role == BufferRole::activation)
      grad.role = BufferRole::grad;
  }
  for (Operation &op : block)
    if (op.hasAttr(kLoopCarriedAttr) && op.hasAttr(kGradSumAttr))
      if (auto it = slots.find(op.getResult(0));
          it != slots.end() &&
          buffers[it->second.buffer].role == BufferRole::activation)
        buffers[it->second.buffer].role = BufferRole::grad;
}

void Planner::layOutBuckets() {
  for (Operation &op : block) {
    auto start = dyn_cast<CollectiveStartOp>(op);
    if (!start || start.getInputs().size() < 2)
      continue;
    bool reduction = start.getKind() == CollectiveKind::all_reduce ||
                     start.getKind() == CollectiveKind::reduce_scatter;
    // contiguous_gradients: each input is a buffer of its own, laid end to
    // end in the bucket, so its producer writes straight into its slot.
    bool layOut = contiguous && reduction;
    llvm::SmallDenseSet<int64_t> seen;
    for (Value input : start.getInputs()) {
      Slot slot = slots.lookup(input);
      BufferInfo &info = buffers[slot.buffer];
      if (!layOut)
        break;
      layOut = info.mergeable && slot.offset == 0 &&
               info.bytes == valueBytes(input) &&
               seen.insert(slot.buffer).second;
    }
    if (layOut) {
      int64_t total = 0;
      for (Value input : start.getInputs())
        total = addBytes(total, valueBytes(input));
      // An all-reduce works in place: its bucket holds gradients where it
      // reduces them (data parallelism) and activations where it reduces
      // those (a model axis's partial sums).
      BufferRole role = BufferRole::comm_buffer;
      if (start.getKind() == CollectiveKind::all_reduce)
        role = llvm::any_of(start.getInputs(),
                            [&](Value input) {
                              return buffers[slots.lookup(input).buffer].role ==
                                     BufferRole::grad;
                            })
                   ? BufferRole::grad
                   : BufferRole::activation;
      int64_t bucket = newBuffer(total, role);
      int64_t offset = 0;
      for (Value input : start.getInputs()) {
        int64_t bytes = valueBytes(input);
        moveBuffer(slots.lookup(input).buffer, bucket, offset);
        offset += bytes;
      }
      continue;
    }
    // Otherwise a reduction bucket is packed through a staging buffer of
    // its full-size bytes. A gather needs none: each rank's segment arrives
    // in its own result buffer (a variable, for updated parameters).
    if (!reduction)
      continue;
    int64_t total = 0;
    for (auto [input, result] :
         llvm::zip(start.getInputs(), waitOf(start).getResults()))
      total = addBytes(total, std::max(valueBytes(input), valueBytes(result)));
    staging[start] = newBuffer(total, BufferRole::comm_buffer);
  }
}

LogicalResult Planner::retargetAssignments() {
  for (Operation &op : block) {
    auto assign = dyn_cast<nn::AssignOp>(op);
    if (!assign)
      continue;
    Value variable = variables.lookup(assign.getName());
    if (!variable)
      return assign.emitOpError("zero-memory-plan: no nn.variable named '")
             << assign.getName() << "'";
    Slot target = slots.lookup(variable);
    Slot source = slots.lookup(assign.getValue());
    if (source == target)
      continue; // computed in place
    BufferInfo &from = buffers[source.buffer];
    if (from.memory != buffers[target.buffer].memory)
      return assign.emitOpError("zero-memory-plan: assigns a value in ")
             << stringifyMemoryKind(from.memory) << " memory to '"
             << assign.getName() << "' in "
             << stringifyMemoryKind(buffers[target.buffer].memory)
             << " memory; transfer it there first (zero-offload)";
    int64_t writesFrom = INT64_MAX;
    for (Value value : from.values)
      writesFrom = std::min(writesFrom, positions.writeStart(value));
    if (from.mergeable && source.offset == 0 &&
        from.bytes == buffers[target.buffer].bytes &&
        readsEndBy(target.buffer, writesFrom - 1)) {
      moveBuffer(source.buffer, target.buffer, 0);
      continue;
    }
    if (!readsEndBy(target.buffer, positions[&op]))
      return assign.emitOpError("zero-memory-plan: '")
             << assign.getName()
             << "' is still read after its assignment; assignments take "
                "effect at the end of the step (run zero-bucketing)";
    copies.insert(assign);
  }
  return success();
}

void Planner::computeLiveness() {
  int64_t end = positions[block.getTerminator()];
  for (BufferInfo &info : buffers) {
    if (info.merged)
      continue;
    if (info.persistent) {
      info.first = 0;
      info.last = end;
      continue;
    }
    info.first = INT64_MAX;
    info.last = 0;
    for (Value value : info.values) {
      info.first = std::min(info.first,
                            std::max<int64_t>(positions.writeStart(value), 0));
      info.last = std::max(info.last, positions.readEnd(value));
      // The executor fills inputs and the step counter before the first op.
      if (isa_and_nonnull<nn::InputOp, nn::StepOp>(value.getDefiningOp()))
        info.first = 0;
    }
  }
  for (auto [start, buffer] : staging) {
    buffers[buffer].first = positions[start];
    buffers[buffer].last = positions[waitOf(cast<CollectiveStartOp>(start))];
  }
}

/// The pipeline stage whose ranks compute `value`; -1 without stages.
static int64_t stageOf(Value value) {
  return pipelineStageOf(value.getDefiningOp());
}

LogicalResult Planner::assignStages() {
  for (BufferInfo &info : buffers) {
    if (info.merged)
      continue;
    for (Value value : info.values) {
      int64_t stage = stageOf(value);
      if (info.stage >= 0 && stage != info.stage)
        return value.getDefiningOp()->emitOpError(
                   "zero-memory-plan: shares a buffer with a value of "
                   "pipeline stage ")
               << info.stage << " but runs on stage " << stage;
      info.stage = stage;
    }
  }
  for (auto [start, buffer] : staging)
    buffers[buffer].stage = pipelineStageOf(start);
  return success();
}

/// The chunk of the micro-batch loop `op` runs in; -1 outside the loop.
static int64_t loopChunkOf(Operation *op) {
  return op ? pipelineMark(op, kLoopChunkAttr) : -1;
}

LogicalResult Planner::planLoop() {
  if (!carriedOutOfPlace.empty())
    return carriedOutOfPlace.front()->emitOpError(
        "zero-memory-plan: a running total of the micro-batch loop must be "
        "updated in place, but its total is read after it or shares a "
        "buffer with what it adds");
  int64_t loopFirst = INT64_MAX, loopLast = -1;
  for (Operation &op : block)
    if (loopChunkOf(&op) >= 0) {
      loopFirst = std::min(loopFirst, positions[&op]);
      loopLast = std::max(loopLast, positions[&op]);
    }
  if (loopLast < 0)
    return success();
  // Each stage's order of [chunk, micro-batch] pairs.
  auto pipeline = func->getAttrOfType<DictionaryAttr>(kPipelineAttr);
  auto loop = pipeline ? pipeline.getAs<DictionaryAttr>("loop") : nullptr;
  auto orders = loop ? loop.getAs<ArrayAttr>("order") : nullptr;
  if (!orders)
    return func.emitError("zero-memory-plan: ops are marked ")
           << kLoopChunkAttr << " but zero.pipeline has no loop order";
  // Micro-batches whose copy of a value made in chunk `from` and last read
  // in chunk `to` are held at once on `stage`, at most.
  auto inFlight = [&](int64_t stage, int64_t from, int64_t to) -> int64_t {
    auto order = dyn_cast_or_null<DenseI64ArrayAttr>(
        stage >= 0 && stage < static_cast<int64_t>(orders.size())
            ? orders[stage]
            : Attribute());
    if (!order)
      return 1;
    int64_t open = 0, most = 1;
    for (size_t i = 0; i + 1 < order.size(); i += 2) {
      if (order[i] == from)
        most = std::max(most, ++open);
      if (order[i] == to)
        --open;
    }
    return most;
  };
  for (BufferInfo &info : buffers) {
    if (info.merged || info.persistent || info.values.empty() ||
        info.first > loopLast || info.last < loopFirst)
      continue;
    int64_t firstChunk = INT64_MAX, lastChunk = -1;
    bool outside = false;
    for (Value value : info.values) {
      int64_t made = loopChunkOf(value.getDefiningOp());
      if (made < 0) {
        outside = true;
        break;
      }
      firstChunk = std::min(firstChunk, made);
      lastChunk = std::max(lastChunk, made);
      for (Operation *user : value.getUsers()) {
        int64_t read = loopChunkOf(user);
        if (read < 0 && !isa<func::ReturnOp>(user)) {
          // Read after the loop: a running total, which lives through it.
          outside = true;
          break;
        }
        lastChunk = std::max(lastChunk, read);
      }
      if (outside)
        break;
    }
    if (!outside && firstChunk == lastChunk)
      continue; // Made and read in one chunk.
    if (!outside)
      info.microSlots = inFlight(info.stage, firstChunk, lastChunk);
    info.first = std::min(info.first, loopFirst);
    info.last = std::max(info.last, loopLast);
  }
  return success();
}

LogicalResult Planner::pack() {
  std::set<int64_t> stages;
  for (const BufferInfo &info : buffers)
    if (!info.merged)
      stages.insert(info.stage);
  if (stages.size() > 1 && stages.count(-1))
    return func.emitError("zero-memory-plan: some buffers have a pipeline "
                          "stage and some do not");
  for (MemoryKind memory :
       {MemoryKind::device, MemoryKind::host, MemoryKind::nvme})
    for (int64_t stage : stages)
      if (failed(pack(memory, stage)))
        return failure();
  return success();
}

LogicalResult Planner::pack(MemoryKind memory, int64_t stage) {
  // Every offset and size stays at most kMaxPlanBytes (each buffer does, and
  // this is checked as each is placed), so no sum below can wrap.
  auto tooLarge = [&]() {
    return func.emitError("zero-memory-plan: the arena of one rank needs more "
                          "than 2^53 bytes (")
           << kMaxPlanBytes << "), the most a plan addresses";
  };
  // Variables live for the whole run: they go first, one after the other.
  int64_t base = 0;
  SmallVector<int64_t> order;
  for (auto [index, info] : llvm::enumerate(buffers)) {
    if (info.merged || info.memory != memory || info.stage != stage)
      continue;
    if (info.bytes > kMaxPlanBytes)
      return tooLarge();
    if (info.persistent) {
      info.offset = base;
      base += aligned(info.bytes);
      if (base > kMaxPlanBytes)
        return tooLarge();
    } else {
      order.push_back(index);
    }
  }
  // The rest largest first, then by index, so the plan is the same on every
  // run; each at the smallest gap among the buffers live at the same time
  // (best fit), else above them.
  llvm::stable_sort(order, [&](int64_t a, int64_t b) {
    return extentOf(buffers[a]) > extentOf(buffers[b]);
  });
  // Placed buffers, kept sorted by offset so no search needs a sort.
  SmallVector<int64_t> placed;
  for (int64_t index : order) {
    BufferInfo &info = buffers[index];
    int64_t size = aligned(extentOf(info));
    int64_t cursor = base, best = -1, bestGap = INT64_MAX;
    for (int64_t other : placed) {
      BufferInfo &o = buffers[other];
      if (o.first > info.last || info.first > o.last)
        continue;
      if (o.offset > cursor && o.offset - cursor >= size &&
          o.offset - cursor < bestGap) {
        best = cursor;
        bestGap = o.offset - cursor;
      }
      cursor = std::max(cursor, o.offset + aligned(extentOf(o)));
    }
    info.offset = best >= 0 ? best : cursor;
    if (info.offset + size > kMaxPlanBytes)
      return tooLarge();
    auto *at = llvm::upper_bound(placed, info.offset,
                                 [&](int64_t offset, int64_t other) {
                                   return offset < buffers[other].offset;
                                 });
    placed.insert(at, index);
  }
  return success();
}

/// The roles docs/design.md#model-state-memory counts as model states.
static bool isModelState(BufferRole role) {
  return role == BufferRole::param || role == BufferRole::grad ||
         role == BufferRole::master || role == BufferRole::opt_state;
}

void Planner::writeAttributes() {
  MLIRContext *context = func.getContext();
  Builder builder(context);
  // Buffers merged into others disappear; the rest are numbered densely.
  SmallVector<int64_t> number(buffers.size(), -1);
  SmallVector<Attribute> entries;
  for (auto [index, info] : llvm::enumerate(buffers)) {
    if (info.merged)
      continue;
    number[index] = entries.size();
    // A buffer with copies spans them all; zero.micro_slots says how many.
    entries.push_back(BufferAttr::get(context, info.offset, extentOf(info),
                                      info.first, info.last, info.role,
                                      info.memory, info.stage));
  }
  func->setAttr(kBuffersAttr, builder.getArrayAttr(entries));
  SmallVector<int64_t> slotted;
  for (auto [index, info] : llvm::enumerate(buffers))
    if (!info.merged && info.microSlots > 1)
      slotted.append({number[index], info.microSlots, aligned(info.bytes)});
  if (!slotted.empty())
    func->setAttr(kMicroSlotsAttr, builder.getDenseI64ArrayAttr(slotted));

  for (Operation &op : block) {
    if (op.getNumResults() == 0)
      continue;
    SmallVector<int64_t> pairs;
    bool any = false;
    for (Value result : op.getResults()) {
      auto it = slots.find(result);
      if (it == slots.end()) {
        pairs.append({-1, -1});
        continue;
      }
      pairs.append({number[it->second.buffer], it->second.offset});
      any = true;
    }
    if (any)
      op.setAttr(kSlotsAttr, builder.getDenseI64ArrayAttr(pairs));
  }
  for (auto [start, buffer] : staging)
    start->setAttr(kStagingAttr, builder.getI64IntegerAttr(number[buffer]));
  for (Operation *assign : copies)
    assign->setAttr(kCopyAttr, builder.getUnitAttr());

  // Each arena's size, lower bound (most bytes live at once) and peak of
  // each role, from a sweep over the op positions.
  int64_t end = positions[block.getTerminator()];
  auto peakOf = [](std::vector<int64_t> &deltas) {
    int64_t live = 0, peak = 0;
    for (int64_t delta : deltas) {
      live += delta;
      peak = std::max(peak, live);
    }
    return peak;
  };
  struct ArenaSummary {
    bool used = false;
    int64_t arena = 0;
    std::map<BufferRole, std::vector<int64_t>> byRole;
    std::vector<int64_t> total, states;
  };
  // One summary per memory kind and pipeline stage; a rank holds one
  // stage's buffers, so the plan reports the largest stage.
  std::map<std::pair<MemoryKind, int64_t>, ArenaSummary> arenas;
  for (BufferInfo &info : buffers) {
    if (info.merged)
      continue;
    ArenaSummary &summary = arenas[{info.memory, info.stage}];
    if (!summary.used) {
      summary.used = true;
      summary.total.assign(end + 2, 0);
      summary.states.assign(end + 2, 0);
    }
    int64_t bytes = extentOf(info);
    summary.arena = std::max(summary.arena, info.offset + bytes);
    std::vector<int64_t> &role = summary.byRole[info.role];
    role.resize(end + 2, 0);
    role[info.first] += bytes;
    role[info.last + 1] -= bytes;
    summary.total[info.first] += bytes;
    summary.total[info.last + 1] -= bytes;
    if (isModelState(info.role)) {
      summary.states[info.first] += bytes;
      summary.states[info.last + 1] -= bytes;
    }
  }
  struct Largest {
    int64_t arena = 0, lowerBound = 0, modelStates = 0;
    std::map<BufferRole, int64_t> peak;
  };
  std::map<MemoryKind, Largest> largest;
  for (auto &[key, summary] : arenas) {
    Largest &into = largest[key.first];
    into.arena = std::max(into.arena, summary.arena);
    into.lowerBound = std::max(into.lowerBound, peakOf(summary.total));
    into.modelStates = std::max(into.modelStates, peakOf(summary.states));
    for (auto &[role, deltas] : summary.byRole)
      into.peak[role] = std::max(into.peak[role], peakOf(deltas));
  }
  auto peaksOf = [&](Largest &summary) {
    SmallVector<NamedAttribute> peaks;
    for (BufferRole role : planRoles()) {
      auto it = summary.peak.find(role);
      int64_t peak = it == summary.peak.end() ? 0 : it->second;
      peaks.push_back(builder.getNamedAttr(stringifyBufferRole(role),
                                           builder.getI64IntegerAttr(peak)));
    }
    return builder.getDictionaryAttr(peaks);
  };
  Largest &device = largest[MemoryKind::device];
  SmallVector<NamedAttribute> memory = {
      builder.getNamedAttr("arena", builder.getI64IntegerAttr(device.arena)),
      builder.getNamedAttr("lower_bound",
                           builder.getI64IntegerAttr(device.lowerBound)),
      builder.getNamedAttr("model_states",
                           builder.getI64IntegerAttr(device.modelStates)),
      builder.getNamedAttr("peak", peaksOf(device)),
  };
  for (MemoryKind kind : {MemoryKind::host, MemoryKind::nvme}) {
    auto it = largest.find(kind);
    if (it == largest.end())
      continue;
    Largest &summary = it->second;
    memory.push_back(builder.getNamedAttr(
        stringifyMemoryKind(kind),
        builder.getDictionaryAttr({
            builder.getNamedAttr("arena",
                                 builder.getI64IntegerAttr(summary.arena)),
            builder.getNamedAttr("lower_bound",
                                 builder.getI64IntegerAttr(summary.lowerBound)),
            builder.getNamedAttr("peak", peaksOf(summary)),
        })));
  }
  func->setAttr(kMemoryAttr, builder.getDictionaryAttr(memory));
}

LogicalResult Planner::run() {
  for (Operation &op : block)
    for (Value result : op.getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType());
          type && (!type.hasStaticShape() || type.getEncoding()))
        return op.emitOpError("zero-memory-plan: result type ")
               << type
               << " is not a static per-rank tensor; run zero-partition first";
  // Byte arithmetic below assumes every tensor fits in a plan.
  for (Operation &op : block)
    for (OpResult result : op.getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType())) {
        std::optional<int64_t> bytes = checkedTensorBytes(type);
        if (!bytes || *bytes > kMaxPlanBytes)
          return op.emitOpError("zero-memory-plan: result #")
                 << result.getResultNumber() << " of type " << type
                 << " holds more than 2^53 bytes (" << kMaxPlanBytes
                 << "), the most a plan addresses";
      }
  assignSlots();
  layOutBuckets();
  if (failed(retargetAssignments()))
    return failure();
  computeLiveness();
  if (failed(assignStages()) || failed(planLoop()) || failed(pack()))
    return failure();
  writeAttributes();
  return success();
}

namespace {
struct ZeroMemoryPlanPass
    : zerosbp::impl::ZeroMemoryPlanBase<ZeroMemoryPlanPass> {
  using ZeroMemoryPlanBase::ZeroMemoryPlanBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (alignment < 1 || (alignment & (alignment - 1))) {
      func.emitError("zero-memory-plan: alignment must be a power of two, got ")
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    // So that rounding a size up cannot wrap.
    if (alignment > kMaxPlanBytes) {
      func.emitError("zero-memory-plan: alignment must be at most 2^53, got ")
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    if (func.isExternal())
      return;
    if (func.getBody().getBlocks().size() != 1) {
      func.emitError("zero-memory-plan: expected a single-block function");
      return signalPassFailure();
    }
    Planner planner(func, contiguousGradients, alignment);
    if (failed(planner.run()))
      signalPassFailure();
  }
};
} // namespace
