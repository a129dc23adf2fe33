//===- Schedule.cpp - zero-schedule ---------------------------------------===//
//
// Spreads the synchronous start/wait pairs of zero-bucketing apart so that
// communication overlaps compute, prefetches stage-3 parameter buckets and
// drops backward re-gathers that stage3_max_reuse_distance lets the forward
// copy serve. Collectives keep their relative order: the communication
// stream runs them first in, first out, the same order on every rank.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/LocalUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

namespace zerosbp {
#define GEN_PASS_DEF_ZEROSCHEDULE
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

/// A pipeline stage receives each message right before its first reader,
/// so that it does its other work first, and receives the messages of one
/// sending stage in the order they were sent (docs/design.md#pipeline-
/// parallelism).
static void sinkReceives(func::FuncOp func) {
  Block &block = func.getBody().front();
  std::map<std::pair<int64_t, int64_t>, SmallVector<RecvOp>> channels;
  for (auto send : block.getOps<SendOp>())
    for (Operation *user : send.getMessage().getUsers())
      if (auto recv = dyn_cast<RecvOp>(user))
        channels[{send.getSourceStage(), send.getTargetStage()}].push_back(
            recv);
  if (channels.empty())
    return;
  // Only receives move, so the other ops keep their order: each receive
  // goes right before an anchor, its first reader or the anchor of the
  // channel's next receive, whichever comes first. At one anchor the
  // receives line up by channel, then in send order. The block is then
  // rebuilt once (moving the receives one by one renumbers it each time).
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block)
    position[&op] = index++;
  // A receive stays in its part of a micro-batch loop: one received once,
  // before the loop, does not move into a chunk that runs per micro-batch.
  LoopParts parts(block);
  auto within = [&](Operation *recv, Operation *anchor) {
    if (!parts.hasLoop() || parts.of(anchor) == parts.of(recv))
      return anchor;
    return parts.firstAfter(parts.of(recv));
  };
  DenseMap<Operation *, SmallVector<Operation *>> before;
  DenseSet<Operation *> moved;
  for (auto &[channel, receives] : channels) {
    SmallVector<Operation *> anchors(receives.size());
    Operation *later = nullptr; // The anchor of the channel's next receive.
    for (size_t i = receives.size(); i-- > 0;) {
      Operation *first = block.getTerminator();
      for (Operation *user : receives[i]->getUsers())
        if (position.lookup(user) < position.lookup(first))
          first = user;
      if (later && position.lookup(later) < position.lookup(first))
        first = later;
      anchors[i] = later = within(receives[i], first);
    }
    for (auto [recv, anchor] : llvm::zip(receives, anchors)) {
      before[anchor].push_back(recv);
      moved.insert(recv);
    }
  }
  // Where receives of two parts of a micro-batch loop meet at one anchor
  // (the first op of the later part), the earlier part's come first and
  // end it.
  if (parts.hasLoop())
    for (auto &[anchor, receives] : before)
      llvm::stable_sort(receives, [&](Operation *a, Operation *b) {
        return parts.of(a) < parts.of(b);
      });
  SmallVector<Operation *> order;
  for (Operation &op : block) {
    if (moved.contains(&op))
      continue;
    if (auto it = before.find(&op); it != before.end())
      order.append(it->second.begin(), it->second.end());
    order.push_back(&op);
  }
  for (Operation *op : order)
    block.getOperations().splice(block.end(), block.getOperations(),
                                 op->getIterator());
}

/// The wait's earliest user, or the terminator.
static Operation *firstUser(CollectiveWaitOp wait) {
  Operation *first = nullptr;
  for (Operation *user : wait->getUsers())
    if (!first || user->isBeforeInBlock(first))
      first = user;
  return first ? first : wait->getBlock()->getTerminator();
}

/// Rebuilds `start`/`wait` without the segments in `drop`; every dropped
/// result must already be unused. Returns the new start (null if none is
/// left).
static CollectiveStartOp dropSegments(CollectiveStartOp start,
                                      const llvm::SmallBitVector &drop) {
  CollectiveWaitOp wait = waitOf(start);
  SmallVector<Value> inputs;
  SmallVector<RankedTensorType> types;
  SmallVector<Value> kept;
  ArrayRef<RankedTensorType> valueTypes =
      start.getFuture().getType().getValueTypes();
  for (auto [index, input] : llvm::enumerate(start.getInputs()))
    if (!drop.test(index)) {
      inputs.push_back(input);
      types.push_back(valueTypes[index]);
      kept.push_back(wait.getResult(index));
    }
  if (inputs.empty()) {
    wait.erase();
    start.erase();
    return nullptr;
  }
  OpBuilder builder(start);
  auto newStart = CollectiveStartOp::create(
      builder, start.getLoc(), FutureType::get(builder.getContext(), types),
      start.getKind(), inputs, start.getPlacement(), start.getHierarchyAxis(),
      start.getGatherAxisAttr(), start.getScatterAxisAttr(), start.getReduce(),
      start.getBucketAttr());
  builder.setInsertionPoint(wait);
  auto newWait =
      CollectiveWaitOp::create(builder, wait.getLoc(), newStart.getFuture());
  for (auto [old, replacement] : llvm::zip(kept, newWait.getResults()))
    old.replaceAllUsesWith(replacement);
  wait.erase();
  start.erase();
  return newStart;
}

/// The stage-3 parameter gathers of `func`, in order.
static SmallVector<CollectiveStartOp> parameterGathers(func::FuncOp func) {
  SmallVector<CollectiveStartOp> gathers;
  func.walk([&](CollectiveStartOp start) {
    if (isParameterGather(start))
      gathers.push_back(start);
  });
  return gathers;
}

namespace {

struct ZeroSchedulePass : zerosbp::impl::ZeroScheduleBase<ZeroSchedulePass> {
  using ZeroScheduleBase::ZeroScheduleBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    for (auto [name, value] : {std::pair<StringRef, int64_t>{
                                   "prefetch-bucket-size", prefetchBucketSize},
                               {"max-live-parameters", maxLiveParameters},
                               {"max-reuse-distance", maxReuseDistance}})
      if (value < 0) {
        func.emitError("zero-schedule: ")
            << name << " must not be negative, got " << value;
        return signalPassFailure();
      }
    if (func.isExternal())
      return;
    sinkReceives(func);
    if (maxReuseDistance > 0)
      reuseForwardGathers(func);
    if (overlapComm) {
      delayWaits(func);
      startReductionsEarly(func);
      prefetchParameters(func);
      pipelineOffloadedUpdates(func);
    }
    if (nvmeDepth > 0)
      pipelineNvmeTransfers(func);
    int64_t index = 0;
    func.walk([&](CollectiveStartOp start) {
      start.setBucketAttr(OpBuilder(start).getI64IntegerAttr(index++));
    });
  }

  /// overlap_comm with offload (docs/design.md#offload): each offloaded
  /// update runs as soon as its operands are in host memory, so that the
  /// host updates while the device still computes the backward, as
  /// ZeRO-Offload does. Hoisted, in order: each copy to the host (with the
  /// pure ops that only feed it), right after what it copies, its wait
  /// right after it or, for a copy of a variable, right before its first
  /// reader; each update on the host right after its operands. The copies of
  /// the new values back to the device keep their place after the backward, so
  /// that a new parameter still lands in its own bytes once the backward
  /// has read the old one; their waits go after the last of them, with what
  /// reads their values, so that the copies run while the host finishes
  /// the updates. Reads off NVMe keep their place (nvme-depth bounds the
  /// states in host memory).
  void pipelineOffloadedUpdates(func::FuncOp func) {
    Block &block = func.getBody().front();
    if (LoopParts(block).hasLoop())
      return;
    // An update (or cast) that runs on the host; variables in host memory
    // carry the same attribute but compute nothing.
    auto onHost = [](Operation *op) {
      auto memory = op->getAttrOfType<MemoryKindAttr>(kMemoryKindAttr);
      return memory && memory.getValue() == MemoryKind::host &&
             !isa<nn::VariableOp>(op);
    };
    auto waitOfTransfer = [](TransferStartOp start) -> Operation * {
      return *start.getFuture().getUsers().begin();
    };
    DenseSet<Operation *> hoisted;
    SmallVector<TransferStartOp> returns;
    for (Operation &op : block) {
      if (onHost(&op)) {
        hoisted.insert(&op);
        continue;
      }
      auto start = dyn_cast<TransferStartOp>(&op);
      if (!start)
        continue;
      if (start.getFrom() == MemoryKind::device &&
          start.getTo() == MemoryKind::host) {
        hoisted.insert(start);
        hoisted.insert(waitOfTransfer(start));
        // Pure producers that only feed the copy (a flattening reshape, the
        // rank's slice of a shard) move up with it.
        Operation *def = start.getInput().getDefiningOp();
        while (def && def->getBlock() == &block && def->hasOneUse() &&
               def->getNumRegions() == 0 && isMemoryEffectFree(def)) {
          hoisted.insert(def);
          Value first = def->getNumOperands() ? def->getOperand(0) : Value();
          def = def->getNumOperands() == 1 && first ? first.getDefiningOp()
                                                    : nullptr;
        }
      } else if (start.getFrom() == MemoryKind::host &&
                 start.getTo() == MemoryKind::device) {
        Operation *def = start.getInput().getDefiningOp();
        if (def && onHost(def))
          returns.push_back(start);
      }
    }
    if (returns.empty())
      return;
    // Block order: an op's hoisted producers have moved before it does.
    SmallVector<Operation *> order;
    for (Operation &op : block)
      if (hoisted.contains(&op))
        order.push_back(&op);
    // Ops hoisted behind one anchor keep their order.
    DenseMap<Operation *, Operation *> lastAfter;
    for (Operation *op : order) {
      Operation *anchor = nullptr;
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && def->getBlock() == &block &&
            (!anchor || anchor->isBeforeInBlock(def)))
          anchor = def;
      }
      if (!anchor)
        continue;
      Operation *after = lastAfter.lookup(anchor);
      if (!after)
        after = anchor;
      if (after->isBeforeInBlock(op) && after->getNextNode() != op)
        moveAfterInBlock(op, after);
      lastAfter[anchor] = op;
    }
    // A copy of a variable's bytes to the host is waited for right before
    // its first reader (an update on the host), so that the device computes
    // while it runs: the parameters copied at the step's start arrive during
    // the forward. A copy of a value of its own keeps its wait, which frees
    // that value's bytes on the device.
    auto copiesVariable = [](TransferStartOp start) {
      Value source = start.getInput();
      while (auto view = source.getDefiningOp<nn::ViewOpInterface>()) {
        if (!view.getViewElementOffset())
          return false;
        source = view->getOperand(0);
      }
      return static_cast<bool>(source.getDefiningOp<nn::VariableOp>());
    };
    for (Operation *op : order) {
      auto start = dyn_cast<TransferStartOp>(op);
      if (!start || start.getTo() != MemoryKind::host || !copiesVariable(start))
        continue;
      Operation *wait = waitOfTransfer(start);
      Operation *firstReader = nullptr;
      for (Operation *user : wait->getUsers())
        if (user->getBlock() == &block &&
            (!firstReader || user->isBeforeInBlock(firstReader)))
          firstReader = user;
      if (firstReader && wait->isBeforeInBlock(firstReader) &&
          wait->getNextNode() != firstReader)
        wait->moveBefore(firstReader);
    }
    // The waits for the copies back, after the last of them.
    Operation *last = returns.front();
    for (TransferStartOp start : returns)
      if (last->isBeforeInBlock(start))
        last = start;
    for (TransferStartOp start : returns) {
      Operation *wait = waitOfTransfer(start);
      if (!wait->isBeforeInBlock(last))
        continue;
      moveAfterInBlock(wait, last);
      last = wait;
      // What reads the value, and what reads that, follow the wait.
      SmallVector<Operation *> readers;
      SmallVector<Operation *> work(wait->getUsers().begin(),
                                    wait->getUsers().end());
      DenseSet<Operation *> seen;
      while (!work.empty()) {
        Operation *user = work.pop_back_val();
        if (!seen.insert(user).second || !user->isBeforeInBlock(wait))
          continue;
        readers.push_back(user);
        for (Operation *next : user->getUsers())
          work.push_back(next);
      }
      llvm::sort(readers, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      for (Operation *reader : readers) {
        moveAfterInBlock(reader, last);
        last = reader;
      }
    }
  }

  /// Starts each NVMe read up to nvme-depth reads early and lets each NVMe
  /// write run until nvme-depth later writes have started, keeping both in
  /// order on the copy stream.
  void pipelineNvmeTransfers(func::FuncOp func) {
    SmallVector<TransferStartOp> reads, writes;
    func.walk([&](TransferStartOp start) {
      if (start.getFrom() == MemoryKind::nvme)
        reads.push_back(start);
      else if (start.getTo() == MemoryKind::nvme)
        writes.push_back(start);
    });
    auto waitOfTransfer = [](TransferStartOp start) {
      return *start.getFuture().getUsers().begin();
    };
    auto later = [](Operation *a, Operation *b) {
      if (!a)
        return b;
      if (!b)
        return a;
      return a->isBeforeInBlock(b) ? b : a;
    };
    for (size_t i = 1; i < reads.size(); ++i) {
      Operation *anchor = reads[i - 1];
      if (i >= static_cast<size_t>(nvmeDepth))
        anchor = later(anchor, waitOfTransfer(reads[i - nvmeDepth]));
      if (anchor->isBeforeInBlock(reads[i]))
        moveAfterInBlock(reads[i], anchor);
    }
    for (size_t i = 0; i + nvmeDepth < writes.size(); ++i) {
      Operation *wait = waitOfTransfer(writes[i]);
      Operation *before = writes[i + nvmeDepth];
      if (!wait->isBeforeInBlock(before))
        continue;
      // What reads the written value (its assignment, which takes effect
      // at the end of the step anyway) follows the wait.
      SmallVector<Operation *> users(wait->getUsers());
      moveBeforeInBlock(wait, before);
      Operation *last = wait;
      for (Operation *user : users)
        if (user->isBeforeInBlock(wait)) {
          moveAfterInBlock(user, last);
          last = user;
        }
    }
  }

  /// Drops a backward gather of a parameter whose forward gather was last
  /// used at most max-reuse-distance gathered elements earlier.
  void reuseForwardGathers(func::FuncOp func) {
    Block &block = func.getBody().front();
    OpPositions positions(block);
    int64_t backward = backwardStart(block, positions);
    SmallVector<CollectiveStartOp> gathers = parameterGathers(func);
    // The forward gathered copy of each variable shard.
    llvm::DenseMap<Value, Value> forwardCopy;
    for (CollectiveStartOp start : gathers) {
      if (positions[start] >= backward)
        continue;
      CollectiveWaitOp wait = waitOf(start);
      for (auto [index, input] : llvm::enumerate(start.getInputs()))
        forwardCopy.try_emplace(input, wait.getResult(index));
    }
    // Positions and sizes up front: dropping segments rebuilds the ops.
    SmallVector<std::pair<int64_t, int64_t>> gathered;
    for (CollectiveStartOp start : gathers)
      gathered.push_back({positions[start], bucketElements(start)});
    for (CollectiveStartOp start : gathers) {
      if (positions[start] < backward)
        continue;
      CollectiveWaitOp wait = waitOf(start);
      int64_t useAt = positions[firstUser(wait)];
      llvm::SmallBitVector drop(start.getInputs().size());
      for (auto [index, input] : llvm::enumerate(start.getInputs())) {
        Value copy = forwardCopy.lookup(input);
        if (!copy || copy.getType() != wait.getResult(index).getType())
          continue;
        int64_t releasedAt = positions.lastUse(copy);
        int64_t between = 0;
        for (auto [at, elements] : gathered)
          if (at > releasedAt && at < useAt)
            between += elements;
        if (between > maxReuseDistance)
          continue;
        wait.getResult(index).replaceAllUsesWith(copy);
        drop.set(index);
      }
      if (drop.any())
        dropSegments(start, drop);
    }
  }

  /// overlap_comm: every wait moves down to right before the first use of
  /// its results. A reduction holds its full-size input until its wait, so
  /// at most two reduction buckets are in flight (DeepSpeed's double
  /// buffer): a reduction is waited for before the one after next starts.
  void delayWaits(func::FuncOp func) {
    SmallVector<CollectiveWaitOp> waits;
    SmallVector<CollectiveStartOp> reductions;
    func.walk([&](Operation *op) {
      if (auto wait = dyn_cast<CollectiveWaitOp>(op))
        waits.push_back(wait);
      if (auto start = dyn_cast<CollectiveStartOp>(op);
          start && (start.getKind() == CollectiveKind::all_reduce ||
                    start.getKind() == CollectiveKind::reduce_scatter))
        reductions.push_back(start);
    });
    llvm::DenseMap<Operation *, Operation *> deadline;
    for (size_t i = 0; i + 2 < reductions.size(); ++i)
      deadline[reductions[i]] = reductions[i + 2];
    LoopParts parts(func.getBody().front());
    for (CollectiveWaitOp wait : waits) {
      Operation *user = firstUser(wait);
      if (Operation *limit = deadline.lookup(wait.getFuture().getDefiningOp()))
        if (limit->isBeforeInBlock(user))
          user = limit;
      // No later than the end of its part of a micro-batch loop.
      if (parts.hasLoop() && parts.of(user) != parts.of(wait))
        user = parts.firstAfter(parts.of(wait));
      if (user != wait->getNextNode())
        moveBeforeInBlock(wait, user);
    }
  }

  /// overlap_comm: a reduction starts as soon as its inputs exist, so that
  /// it runs while the compute stream works on what comes before its wait
  /// (at stage 1 the gradients are flattened right before their update,
  /// which would otherwise start each bucket only after the previous
  /// bucket's update). A flattening nn.reshape whose only user is the start
  /// moves up with it. The start stays after the previous collective start
  /// (issue order) and after the wait of the reduction two before it (the
  /// double buffer of delayWaits).
  void startReductionsEarly(func::FuncOp func) {
    SmallVector<CollectiveStartOp> starts;
    func.walk([&](CollectiveStartOp start) { starts.push_back(start); });
    Block &body = func.getBody().front();
    LoopParts parts(body);
    // The order from one numbering: a moved op sorts right after the op it
    // follows, behind what moved there before (each start moves after the
    // previous one). Asking the block instead renumbers it whenever moves
    // pile up at one place, as a micro-batch loop's reductions do.
    OpPositions positions(body);
    DenseMap<Operation *, std::pair<int64_t, int64_t>> moved;
    int64_t moves = 0;
    auto keyOf = [&](Operation *op) {
      auto it = moved.find(op);
      return it != moved.end() ? it->second
                               : std::pair<int64_t, int64_t>(positions[op], 0);
    };
    auto isBefore = [&](Operation *a, Operation *b) {
      return keyOf(a) < keyOf(b);
    };
    auto follow = [&](Operation *op, Operation *anchor) {
      moveAfterInBlock(op, anchor);
      moved[op] = {keyOf(anchor).first, ++moves};
    };
    SmallVector<CollectiveStartOp> reductions;
    for (size_t i = 0; i < starts.size(); ++i) {
      CollectiveStartOp start = starts[i];
      if (start.getKind() != CollectiveKind::all_reduce &&
          start.getKind() != CollectiveKind::reduce_scatter)
        continue;
      reductions.push_back(start);
      // The earliest point: after every input (or the reshape's operand)
      // and the previous start, and after the wait two reductions back.
      Operation *after = i > 0 ? starts[i - 1].getOperation() : nullptr;
      auto later = [&](Operation *op) {
        if (op && op->getBlock() == &body && (!after || isBefore(after, op)))
          after = op;
      };
      if (reductions.size() > 2)
        later(waitOf(reductions[reductions.size() - 3]));
      SmallVector<Operation *> reshapes;
      for (Value input : start.getInputs()) {
        Operation *producer = input.getDefiningOp();
        auto reshape = dyn_cast_or_null<mlir::nn::ReshapeOp>(producer);
        if (reshape && reshape->getBlock() == &body && input.hasOneUse()) {
          reshapes.push_back(reshape);
          later(reshape->getOperand(0).getDefiningOp());
          continue;
        }
        later(producer);
      }
      // No earlier than its part of a micro-batch loop: a total's
      // reduction after the loop waits for the last micro-batch.
      if (int64_t part = parts.of(start);
          parts.hasLoop() && part != LoopParts::kBefore)
        later(parts.firstOf(part)->getPrevNode());
      if (!after || !isBefore(after, start))
        continue;
      // The reshapes follow `after` (where they are not already above it),
      // then the start follows them.
      for (Operation *reshape : reshapes)
        if (isBefore(after, reshape)) {
          follow(reshape, after);
          after = reshape;
        }
      if (after->getNextNode() != start.getOperation())
        follow(start, after);
    }
  }

  /// overlap_comm, stage 3: each parameter bucket's gather starts after the
  /// wait of an earlier parameter bucket, reaching back while the buckets
  /// ahead of their use hold at most prefetch-bucket-size elements and the
  /// gathered parameters at most max-live-parameters.
  void prefetchParameters(func::FuncOp func) {
    SmallVector<CollectiveStartOp> gathers = parameterGathers(func);
    for (size_t i = 1; i < gathers.size(); ++i) {
      CollectiveStartOp start = gathers[i];
      int64_t ahead = bucketElements(start);
      int64_t live = ahead;
      Operation *anchor = nullptr;
      for (size_t j = i; j-- > 0;) {
        live += bucketElements(gathers[j]);
        if (ahead > prefetchBucketSize || live > maxLiveParameters)
          break;
        anchor = waitOf(gathers[j]);
        ahead += bucketElements(gathers[j]);
      }
      if (!anchor)
        continue;
      // Keep issue order: never ahead of the previous bucket's start, nor
      // of the gather's own inputs (an hpZ secondary partition is sliced
      // in the forward).
      Operation *previous = gathers[i - 1];
      if (anchor->isBeforeInBlock(previous))
        anchor = previous;
      for (Value input : start.getInputs())
        if (Operation *def = input.getDefiningOp())
          if (def->getBlock() == anchor->getBlock() &&
              anchor->isBeforeInBlock(def))
            anchor = def;
      if (anchor->isBeforeInBlock(start))
        moveAfterInBlock(start, anchor);
    }
  }
};

} // namespace
