//===- VerifyMemoryPlan.cpp - zero-verify-memory-plan ---------------------===//
//
// Checks a memory plan against the program, from the IR alone: buffers
// that are live at the same time never share arena bytes, every value lies
// inside its buffer and is read only while the buffer is live, nothing
// overwrites bytes that are still to be read, and only transfers touch
// memory other than the one their op computes in.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/LocalUtils.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"
#include "passes/memory/PlanAttrs.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROVERIFYMEMORYPLAN
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

/// Bytes of one buffer written at `write` and read until `readEnd`.
struct Write {
  Value value;   // null for a copy into a variable
  Operation *op; // where the write happens
  int64_t write, readEnd, begin, end;
  /// An in-place all-reduce writes over its own input, which only the
  /// collective itself reads from then on.
  Value inPlaceOf = nullptr;
  /// The latest read of this write's bytes by any op but an in-place
  /// collective over them.
  int64_t readEndOutsideCollective = -1;
};

class Checker {
public:
  explicit Checker(func::FuncOp func)
      : func(func), block(func.getBody().front()), positions(block) {}

  LogicalResult run();

private:
  /// A value that only names bytes of its operand: it writes nothing.
  static bool isView(Value value) {
    Operation *def = value.getDefiningOp();
    if (!isa_and_nonnull<nn::ViewOpInterface>(def))
      return false;
    std::optional<Slot> self = readSlot(value);
    std::optional<Slot> input = readSlot(def->getOperand(0));
    return self && input && self->buffer == input->buffer;
  }

  /// Like readEnd, but reads by an all-reduce start count only up to the
  /// start: such a start may be the in-place collective over the value.
  int64_t inPlaceReadEnd(Value value) const {
    int64_t end = std::max<int64_t>(positions.writeStart(value), 0);
    for (Operation *user : value.getUsers()) {
      auto start = dyn_cast<CollectiveStartOp>(user);
      if (start && start.getKind() != CollectiveKind::all_reduce)
        end = std::max(end, positions[waitOf(start)]);
      else
        end = std::max(end, positions[user]);
    }
    return end;
  }

  func::FuncOp func;
  Block &block;
  OpPositions positions;
};

} // namespace

static std::string describe(Value value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  value.getDefiningOp()->getName().print(os);
  os << " at " << value.getLoc();
  return text;
}

LogicalResult Checker::run() {
  FailureOr<std::vector<PlannedBuffer>> planned = readPlannedBuffers(func);
  if (failed(planned))
    return failure();
  std::vector<PlannedBuffer> &buffers = *planned;
  int64_t count = buffers.size();
  int64_t end = positions[block.getTerminator()];

  // Writes per buffer; a view adds its reads to the value it views.
  std::vector<SmallVector<Write>> writes(count);
  llvm::StringMap<Value> variables;
  for (auto variable : block.getOps<nn::VariableOp>())
    variables[variable.getName()] = variable.getResult();
  llvm::DenseMap<Value, Value> rootOf;
  llvm::DenseMap<Value, Slot> slotOf;
  for (Operation &op : block) {
    for (Value result : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        continue;
      std::optional<Slot> slot = readSlot(result);
      if (!slot)
        return op.emitOpError("zero-verify-memory-plan: result #")
               << cast<OpResult>(result).getResultNumber() << " has no slot";
      if (slot->buffer >= count || slot->offset < 0 ||
          slot->offset + tensorBytes(type) > buffers[slot->buffer].bytes)
        return op.emitOpError("zero-verify-memory-plan: result #")
               << cast<OpResult>(result).getResultNumber() << " ("
               << tensorBytes(type) << " bytes at offset " << slot->offset
               << ") lies outside buffer " << slot->buffer;
      const PlannedBuffer &buffer = buffers[slot->buffer];
      int64_t write = std::max<int64_t>(positions.writeStart(result), 0);
      int64_t read = positions.readEnd(result);
      if (write < buffer.first || read > buffer.last)
        return op.emitOpError("zero-verify-memory-plan: result #")
               << cast<OpResult>(result).getResultNumber() << " is used in ["
               << write << ", " << read << "] but buffer " << slot->buffer
               << " is live in [" << buffer.first << ", " << buffer.last << "]";
      slotOf[result] = *slot;
      if (isView(result)) {
        Value root = rootOf.lookup(op.getOperand(0));
        rootOf[result] = root;
        for (Write &w : writes[slot->buffer])
          if (w.value == root) {
            w.readEnd = std::max(w.readEnd, read);
            w.readEndOutsideCollective =
                std::max(w.readEndOutsideCollective, inPlaceReadEnd(result));
          }
        continue;
      }
      rootOf[result] = result;
      Write entry{result, &op,          positions.writeStart(result),
                  read,   slot->offset, slot->offset + tensorBytes(type)};
      entry.readEndOutsideCollective = inPlaceReadEnd(result);
      if (auto wait = dyn_cast<CollectiveWaitOp>(op)) {
        auto start = cast<CollectiveStartOp>(wait.getFuture().getDefiningOp());
        Value input =
            start.getInputs()[cast<OpResult>(result).getResultNumber()];
        if (start.getKind() == CollectiveKind::all_reduce &&
            readSlot(input) == slot)
          entry.inPlaceOf = rootOf.lookup(input);
      }
      writes[slot->buffer].push_back(entry);
    }
    if (auto assign = dyn_cast<nn::AssignOp>(op)) {
      // The variable must hold the value when the step ends.
      Value variable = variables.lookup(assign.getName());
      std::optional<Slot> target = variable ? readSlot(variable) : std::nullopt;
      std::optional<Slot> source = readSlot(assign.getValue());
      if (!target || !source)
        return assign.emitOpError(
            "zero-verify-memory-plan: the variable or the value has no slot");
      if (op.hasAttr(kCopyAttr)) {
        int64_t bytes =
            tensorBytes(cast<RankedTensorType>(assign.getValue().getType()));
        writes[target->buffer].push_back({nullptr, &op, positions[&op], end,
                                          target->offset,
                                          target->offset + bytes});
      } else if (!(*source == *target)) {
        return assign.emitOpError("zero-verify-memory-plan: '")
               << assign.getName()
               << "' is neither computed in its variable nor copied there";
      }
    }
    if (auto start = dyn_cast<CollectiveStartOp>(op))
      if (auto staging = start->getAttrOfType<IntegerAttr>(kStagingAttr)) {
        int64_t index = staging.getInt();
        if (index < 0 || index >= count ||
            buffers[index].first > positions[start] ||
            buffers[index].last < positions[waitOf(start)])
          return start.emitOpError("zero-verify-memory-plan: staging buffer ")
                 << index << " is not live from the start to the wait";
      }
  }

  // Live buffers never share bytes. In offset order, only the buffers that
  // start before one ends can share its bytes.
  SmallVector<int64_t> byOffset;
  for (int64_t index = 0; index < count; ++index)
    byOffset.push_back(index);
  // Each arena has offsets of its own, and each pipeline stage's ranks
  // their own layout in it: sort by arena, stage, then offset.
  llvm::stable_sort(byOffset, [&](int64_t a, int64_t b) {
    return std::make_tuple(buffers[a].memory, buffers[a].stage,
                           buffers[a].offset) <
           std::make_tuple(buffers[b].memory, buffers[b].stage,
                           buffers[b].offset);
  });
  for (auto [i, first] : llvm::enumerate(byOffset))
    for (size_t j = i + 1; j < byOffset.size(); ++j) {
      int64_t a = std::min(first, byOffset[j]),
              b = std::max(first, byOffset[j]);
      const PlannedBuffer &x = buffers[a], &y = buffers[b];
      if (buffers[byOffset[j]].memory != buffers[first].memory ||
          buffers[byOffset[j]].stage != buffers[first].stage ||
          buffers[byOffset[j]].offset >=
              buffers[first].offset + buffers[first].bytes)
        break;
      bool liveTogether = x.first <= y.last && y.first <= x.last;
      bool shareBytes =
          x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
      if (liveTogether && shareBytes && x.bytes > 0 && y.bytes > 0)
        return func.emitError("zero-verify-memory-plan: buffers ")
               << a << " [" << x.offset << ", " << x.offset + x.bytes
               << ") and " << b << " [" << y.offset << ", "
               << y.offset + y.bytes << ") overlap while both are live (ops "
               << std::max(x.first, y.first) << " to "
               << std::min(x.last, y.last) << ")";
    }

  // An op computes in one memory (zero.memory_kind, else the device's) and
  // reads and writes only there; transfers move between memories.
  for (Operation &op : block) {
    // A copy into a variable stays in the variable's memory: zero-memory-plan
    // refuses one that would cross.
    if (!hasInstruction(op) ||
        isa<TransferStartOp, TransferWaitOp, nn::AssignOp>(op))
      continue;
    MemoryKind memory = MemoryKind::device;
    if (auto kind = op.getAttrOfType<MemoryKindAttr>(kMemoryKindAttr))
      memory = kind.getValue();
    auto check = [&](Value value, StringRef what) -> LogicalResult {
      std::optional<Slot> slot = readSlot(value);
      if (!slot || slot->buffer >= count ||
          buffers[slot->buffer].memory == memory)
        return success();
      return op.emitOpError("zero-verify-memory-plan: computes in ")
             << stringifyMemoryKind(memory) << " memory but its " << what
             << " is in " << stringifyMemoryKind(buffers[slot->buffer].memory)
             << " memory";
    };
    for (auto [index, operand] : llvm::enumerate(op.getOperands()))
      if (isa<RankedTensorType>(operand.getType()) &&
          failed(check(operand, "operand #" + std::to_string(index))))
        return failure();
    for (OpResult result : op.getResults())
      if (isa<RankedTensorType>(result.getType()) &&
          failed(check(result,
                       "result #" + std::to_string(result.getResultNumber()))))
        return failure();
  }

  // Within a buffer, a write never lands on bytes a value still needs.
  for (SmallVector<Write> &list : writes)
    for (Write &earlier : list)
      for (Write &later : list) {
        if (&earlier == &later || earlier.write > later.write)
          continue;
        bool overlap = earlier.begin < later.end && later.begin < earlier.end;
        if (!overlap)
          continue;
        int64_t readEnd = later.inPlaceOf && later.inPlaceOf == earlier.value
                              ? earlier.readEndOutsideCollective
                              : earlier.readEnd;
        if (earlier.write == later.write || readEnd > later.write) {
          InFlightDiagnostic diag = later.op->emitOpError(
              "zero-verify-memory-plan: overwrites bytes of ");
          diag << (earlier.value ? describe(earlier.value)
                                 : std::string("a copy"));
          diag << " that are read until op " << earlier.readEnd
               << ", while this write happens at op " << later.write;
          return diag;
        }
      }
  return success();
}

namespace {
struct ZeroVerifyMemoryPlanPass
    : zerosbp::impl::ZeroVerifyMemoryPlanBase<ZeroVerifyMemoryPlanPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Checker checker(func);
    if (failed(checker.run()))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
