//===- Bucketing.cpp - zero-bucketing -------------------------------------===//
//
// Turns the `shard` collectives of zero-partition into synchronous
// `sbp.collective_start` / `sbp.collective_wait` pairs and fuses those of
// one kind into buckets (DeepSpeed's reduce and all-gather buckets). The
// order is the program order, which every rank shares, so every rank issues
// the same buckets in the same order.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/common/LocalUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROBUCKETING
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

/// A collective before fusion, with the window where it can run: after its
/// last input exists and before the first use of its result.
struct Member {
  CollectiveStartOp start;
  CollectiveWaitOp wait;
  int64_t inputsReady;
  int64_t firstUse;
  int64_t elements;
};

/// Collectives that may share a bucket have equal keys.
struct BucketKey {
  CollectiveKind kind;
  PlacementAttr placement;
  int64_t axis;
  /// The dim the members split or join: a bucket has one.
  int64_t dim;
  ReduceKind reduce;
  Type elementType;
  bool parameterGather;
  /// Parameter gathers of the forward and of the backward never share a
  /// bucket: that would hold the backward's copy through the forward.
  bool backward;
  /// The part of a micro-batch loop (LoopParts): a bucket runs in one.
  int64_t part;
  bool operator==(const BucketKey &other) const {
    return kind == other.kind && placement == other.placement &&
           axis == other.axis && dim == other.dim && reduce == other.reduce &&
           elementType == other.elementType &&
           parameterGather == other.parameterGather &&
           backward == other.backward && part == other.part;
  }
};

struct Bucket {
  BucketKey key;
  SmallVector<Member> members;
  int64_t inputsReady = -1;
  int64_t firstUse = INT64_MAX;
  int64_t elements = 0;
};

class Bucketer {
public:
  Bucketer(func::FuncOp func, int64_t reduceLimit, int64_t gatherLimit,
           int64_t prefetchLimit)
      : func(func), reduceLimit(reduceLimit), gatherLimit(gatherLimit),
        prefetchLimit(prefetchLimit) {}

  LogicalResult run();

private:
  void moveStateAccesses();
  LogicalResult lowerShardCollectives();
  void hoistInputViews();
  FailureOr<PlacementAttr> placementOf(Operation *op, StringRef grid,
                                       ArrayRef<int16_t> axes);
  int64_t limitOf(const BucketKey &key) const;
  CollectiveWaitOp emit(Bucket &bucket, Block &block,
                        ArrayRef<Operation *> order,
                        const OpPositions &positions,
                        const llvm::DenseSet<Operation *> &members);
  void fuse(llvm::function_ref<bool(CollectiveStartOp)> eligible);

  func::FuncOp func;
  int64_t reduceLimit, gatherLimit, prefetchLimit;
  /// The micro-batch loop's parts, read at the start of each round.
  std::optional<LoopParts> parts;
};

} // namespace

/// Variables to the top, assignments to the end: reads of a variable see
/// the step's old value and an assignment takes effect when the step ends,
/// so the program means the same, and every collective of a bucket finds
/// its parameter shards defined and its updated values unused until the
/// end.
void Bucketer::moveStateAccesses() {
  Block &block = func.getBody().front();
  Operation *terminator = block.getTerminator();
  SmallVector<Operation *> sources, assigns;
  for (Operation &op : block) {
    if (isa<nn::VariableOp, nn::StepOp>(op))
      sources.push_back(&op);
    else if (isa<nn::AssignOp>(op))
      assigns.push_back(&op);
  }
  Operation *top = block.empty() ? nullptr : &block.front();
  for (Operation *op : sources)
    if (op != top)
      moveBeforeInBlock(op, top);
    else
      top = op->getNextNode();
  for (Operation *op : assigns) {
    moveBeforeInBlock(op, terminator);
    // A view that only feeds the assignment goes with it, so that it does
    // not pin the value's producer (an all-gather bucket) early.
    Operation *def = op->getOperand(0).getDefiningOp();
    while (isa_and_nonnull<nn::ReshapeOp, nn::SliceOp>(def) &&
           def->hasOneUse()) {
      Operation *user = *def->getUsers().begin();
      moveBeforeInBlock(def, user);
      def = def->getOperand(0).getDefiningOp();
    }
  }
}

/// The reshapes and pads that lay a collective's input out (a flat, padded
/// gradient) move up to just after the value they read, so that the
/// collective's input is ready where its data is. Stage 1's flattened
/// gradients otherwise sit at their updates, after the backward, and no two
/// reduce-scatters share a bucket. A reshape is a view; a pad feeding only
/// the collective replaces its source's bytes, so neither holds more. qwZ's
/// quantization of a parameter shard goes up with them, so that its gathers
/// bucket as unquantized ones do; its codes and scales then live from the
/// variable to the gather, a quarter of an fp32 shard's bytes
/// (docs/design.md#quantized-weight-gathers).
void Bucketer::hoistInputViews() {
  auto layoutOp = [](Value value) -> Operation * {
    Operation *def = value.getDefiningOp();
    if (isa_and_nonnull<nn::ReshapeOp, nn::QuantizeOp>(def) ||
        (isa_and_nonnull<nn::PadOp>(def) && def->hasOneUse()))
      return def;
    return nullptr;
  };
  SmallVector<Operation *> chain;
  func.walk([&](CollectiveStartOp start) {
    for (Value input : start.getInputs())
      for (Operation *op = layoutOp(input); op;
           op = layoutOp(op->getOperand(0)))
        chain.push_back(op);
  });
  // The innermost op of a chain first, so that each lands after its
  // (already moved) operand; never into another part of a micro-batch
  // loop (a total's layout after the loop stays there).
  LoopParts loopParts(func.getBody().front());
  for (Operation *op : llvm::reverse(chain)) {
    Value source = op->getOperand(0);
    if (Operation *def = source.getDefiningOp()) {
      if (loopParts.hasLoop() && loopParts.of(def) != loopParts.of(op))
        continue;
      if (def->getBlock() == op->getBlock() && def != op->getPrevNode())
        moveAfterInBlock(op, def);
    } else if (auto argument = dyn_cast<BlockArgument>(source)) {
      if (argument.getOwner() == op->getBlock())
        moveBeforeInBlock(op, &op->getBlock()->front());
    }
  }
}

FailureOr<PlacementAttr> Bucketer::placementOf(Operation *op, StringRef grid,
                                               ArrayRef<int16_t> axes) {
  auto gridOp = SymbolTable::lookupNearestSymbolFrom(
      op, StringAttr::get(op->getContext(), grid));
  auto placement =
      gridOp ? gridOp->getAttrOfType<PlacementAttr>(kPlacementAttr) : nullptr;
  if (!placement)
    return op->emitOpError("zero-bucketing: grid @")
           << grid << " carries no " << kPlacementAttr
           << "; run zero-partition to make the local view";
  if (axes.size() != 1)
    return op->emitOpError("zero-bucketing: expected one grid axis, got ")
           << axes.size() << "; zero-partition emits one collective per axis";
  return placement;
}

static std::optional<ReduceKind> reduceKindOf(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return ReduceKind::sum;
  case shard::ReductionKind::Max:
    return ReduceKind::max;
  default:
    return std::nullopt;
  }
}

LogicalResult Bucketer::lowerShardCollectives() {
  SmallVector<Operation *> collectives;
  func.walk([&](Operation *op) {
    if (isa<shard::AllReduceOp, shard::ReduceScatterOp, shard::AllGatherOp,
            shard::AllToAllOp>(op))
      collectives.push_back(op);
  });
  for (Operation *op : collectives) {
    OpBuilder builder(op);
    Location loc = op->getLoc();
    StringRef grid;
    ArrayRef<int16_t> axes;
    CollectiveKind kind;
    std::optional<int64_t> gatherAxis, scatterAxis;
    shard::ReductionKind reduction = shard::ReductionKind::Sum;
    if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
      kind = CollectiveKind::all_reduce;
      grid = reduce.getGrid();
      axes = reduce.getGridAxes();
      reduction = reduce.getReduction();
    } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
      kind = CollectiveKind::reduce_scatter;
      grid = scatter.getGrid();
      axes = scatter.getGridAxes();
      reduction = scatter.getReduction();
      scatterAxis = scatter.getScatterAxis().getSExtValue();
    } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
      kind = CollectiveKind::all_gather;
      grid = gather.getGrid();
      axes = gather.getGridAxes();
      gatherAxis = gather.getGatherAxis().getSExtValue();
    } else {
      auto allToAll = cast<shard::AllToAllOp>(op);
      kind = CollectiveKind::all_to_all;
      grid = allToAll.getGrid();
      axes = allToAll.getGridAxes();
      scatterAxis = allToAll.getSplitAxis().getSExtValue();
      gatherAxis = allToAll.getConcatAxis().getSExtValue();
    }
    FailureOr<PlacementAttr> placement = placementOf(op, grid, axes);
    if (failed(placement))
      return failure();
    std::optional<ReduceKind> reduce = reduceKindOf(reduction);
    if (!reduce)
      return op->emitOpError("zero-bucketing: only sum and max reductions are "
                             "supported");
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    auto start = CollectiveStartOp::create(
        builder, loc, FutureType::get(op->getContext(), {resultType}), kind,
        op->getOperands(), *placement, axes.front(),
        gatherAxis ? builder.getI64IntegerAttr(*gatherAxis) : nullptr,
        scatterAxis ? builder.getI64IntegerAttr(*scatterAxis) : nullptr,
        *reduce, /*bucket=*/nullptr);
    auto wait = CollectiveWaitOp::create(builder, loc, start.getFuture());
    if (Attribute chunk = op->getAttr(kLoopChunkAttr)) {
      start->setAttr(kLoopChunkAttr, chunk);
      wait->setAttr(kLoopChunkAttr, chunk);
    }
    op->getResult(0).replaceAllUsesWith(wait.getResult(0));
    op->erase();
  }
  return success();
}

int64_t Bucketer::limitOf(const BucketKey &key) const {
  switch (key.kind) {
  case CollectiveKind::all_reduce:
  case CollectiveKind::reduce_scatter:
    return reduceLimit;
  case CollectiveKind::all_gather:
    return key.parameterGather ? prefetchLimit : gatherLimit;
  case CollectiveKind::all_to_all:
    return 0;
  }
  return 0;
}

/// The dim `start` splits or joins; 0 for an all-reduce.
static int64_t splitDim(CollectiveStartOp start) {
  return start.getGatherAxis().value_or(start.getScatterAxis().value_or(0));
}

/// True when `start` splits or joins its first dim longer than 1 (or only
/// reduces), so each segment of a bucket is one contiguous piece per rank:
/// a row of a model-split variable's (1, n) shard is as fusible as a flat
/// one.
static bool isFusible(CollectiveStartOp start) {
  if (start.getKind() == CollectiveKind::all_to_all)
    return false;
  int64_t dim = splitDim(start);
  Type whole = start.getKind() == CollectiveKind::all_gather
                   ? Type(start.getFuture().getType().getValueTypes().front())
                   : start.getInputs().front().getType();
  return llvm::all_of(cast<RankedTensorType>(whole).getShape().take_front(dim),
                      [](int64_t size) { return size == 1; });
}

/// A collective that reads another one's result: the second step of a
/// 2-D collective (MiCS's all-reduce across groups of a reduce-scatter
/// within them, a gather within the node then across nodes).
static bool isFedByCollective(CollectiveStartOp start) {
  return llvm::any_of(start.getInputs(), [](Value input) {
    return input.getDefiningOp<CollectiveWaitOp>() != nullptr;
  });
}

static bool feedsCollective(CollectiveStartOp start) {
  return llvm::any_of(waitOf(start)->getUsers(), [](Operation *user) {
    return isa<CollectiveStartOp>(user);
  });
}

/// The second step of a 2-D collective, fused in a second round.
static bool isSecondStep(CollectiveStartOp start) {
  return isFusible(start) && isFedByCollective(start) &&
         !feedsCollective(start);
}

/// Where the results of `wait` are first needed: a second step that reads
/// them is fused and placed again in the second round, so what counts is
/// where its own results are first used.
static int64_t chainFirstUse(CollectiveWaitOp wait,
                             const OpPositions &positions, int64_t end) {
  int64_t first = end;
  for (Operation *user : wait->getUsers()) {
    auto next = dyn_cast<CollectiveStartOp>(user);
    first = std::min(first, next && isSecondStep(next)
                                ? positions.firstUse(waitOf(next), end)
                                : positions[user]);
  }
  return first;
}

CollectiveWaitOp Bucketer::emit(Bucket &bucket, Block &block,
                                ArrayRef<Operation *> order,
                                const OpPositions &positions,
                                const llvm::DenseSet<Operation *> &members) {
  // Reductions (and gathers of computed values) go right after their last
  // input, freeing the inputs early; parameter gathers right before their
  // first use, holding the gathered parameters no longer than needed.
  Operation *anchor = nullptr;
  if (bucket.key.parameterGather) {
    for (int64_t index = std::max<int64_t>(bucket.firstUse, 0);
         index < (int64_t)order.size(); ++index)
      if (!members.contains(order[index])) {
        anchor = order[index];
        break;
      }
  } else {
    // Right after the last input (ahead of a bucket placed there before).
    // No emit moves an input's producer (a compute op, or in the
    // second round a first round's wait), so the positions from before
    // order them.
    Operation *last = nullptr;
    for (Member &member : bucket.members)
      for (Value input : member.start.getInputs())
        if (Operation *producer = input.getDefiningOp())
          if (!last || positions[last] < positions[producer])
            last = producer;
    anchor = last ? last->getNextNode() : &block.front();
    // Not ahead of its part of a micro-batch loop.
    if (parts->hasLoop() && bucket.key.part != LoopParts::kBefore) {
      Operation *floor = parts->firstOf(bucket.key.part);
      if (!last || positions[last] < positions[floor])
        anchor = floor;
    }
    while (anchor && members.contains(anchor))
      anchor = anchor->getNextNode();
  }
  if (!anchor)
    anchor = block.getTerminator();
  OpBuilder builder(anchor);
  CollectiveStartOp first = bucket.members.front().start;
  SmallVector<Value> inputs;
  SmallVector<RankedTensorType> resultTypes;
  for (Member &member : bucket.members) {
    inputs.push_back(member.start.getInputs().front());
    resultTypes.push_back(
        member.start.getFuture().getType().getValueTypes().front());
  }
  auto start = CollectiveStartOp::create(
      builder, first.getLoc(),
      FutureType::get(builder.getContext(), resultTypes), first.getKind(),
      inputs, first.getPlacement(), first.getHierarchyAxis(),
      first.getGatherAxisAttr(), first.getScatterAxisAttr(), first.getReduce(),
      /*bucket=*/nullptr);
  auto wait =
      CollectiveWaitOp::create(builder, first.getLoc(), start.getFuture());
  if (Attribute chunk = first->getAttr(kLoopChunkAttr)) {
    start->setAttr(kLoopChunkAttr, chunk);
    wait->setAttr(kLoopChunkAttr, chunk);
  }
  for (auto [index, member] : llvm::enumerate(bucket.members))
    member.wait.getResult(0).replaceAllUsesWith(wait.getResult(index));
  return wait;
}

/// Second steps that read a bucket follow its wait (the window kept what
/// reads their results after it). Done once every bucket is in place, from
/// one numbering of the block: asking the block for the order between moves
/// would renumber it each time.
static void followBuckets(Block &block, ArrayRef<CollectiveWaitOp> waits) {
  OpPositions positions(block);
  // Where each op is now: a moved one sits just after the wait it follows.
  llvm::DenseMap<Operation *, double> moved;
  auto at = [&](Operation *op) -> double {
    auto found = moved.find(op);
    return found != moved.end() ? found->second : positions[op];
  };
  for (CollectiveWaitOp wait : waits) {
    for (Operation *user : llvm::to_vector(wait->getUsers())) {
      auto next = dyn_cast<CollectiveStartOp>(user);
      if (!next || at(next) > at(wait))
        continue;
      moveAfterInBlock(next, wait);
      moved[next] = at(wait) + 0.5;
      if (CollectiveWaitOp nextWait = waitOf(next))
        if (at(nextWait) < at(next)) {
          moveAfterInBlock(nextWait, next);
          moved[nextWait] = at(wait) + 0.75;
        }
    }
  }
}

LogicalResult Bucketer::run() {
  moveStateAccesses();
  if (failed(lowerShardCollectives()))
    return failure();
  hoistInputViews();
  // First the collectives that read no other's result, then, over the
  // buckets those became, the second steps of 2-D collectives (a chain of
  // three stays as it is).
  fuse([](CollectiveStartOp start) {
    return isFusible(start) && !isFedByCollective(start);
  });
  fuse(isSecondStep);

  int64_t index = 0;
  func.walk([&](CollectiveStartOp start) {
    start.setBucketAttr(OpBuilder(start).getI64IntegerAttr(index++));
  });
  return success();
}

void Bucketer::fuse(llvm::function_ref<bool(CollectiveStartOp)> eligible) {
  Block &block = func.getBody().front();
  SmallVector<Operation *> order;
  for (Operation &op : block)
    order.push_back(&op);
  OpPositions positions(block);
  int64_t end = order.size();
  int64_t backwardFrom = backwardStart(block, positions);
  parts.emplace(block);

  // Greedy in program order: each key has one open bucket; a collective
  // that does not fit (size or window) closes it and opens the next.
  SmallVector<Bucket> closed;
  SmallVector<Bucket> open;
  llvm::DenseSet<Operation *> members;
  for (Operation *op : order) {
    auto start = dyn_cast<CollectiveStartOp>(op);
    if (!start || !eligible(start))
      continue;
    Member member{start, waitOf(start), -1, end, bucketElements(start)};
    for (Value input : start.getInputs())
      member.inputsReady =
          std::max(member.inputsReady, positions.definedAt(input));
    member.firstUse = chainFirstUse(member.wait, positions, end);
    members.insert(start);
    members.insert(member.wait);

    BucketKey key{start.getKind(),
                  start.getPlacement(),
                  static_cast<int64_t>(start.getHierarchyAxis()),
                  splitDim(start),
                  start.getReduce(),
                  cast<RankedTensorType>(start.getInputs().front().getType())
                      .getElementType(),
                  isParameterGather(start),
                  isParameterGather(start) && member.firstUse >= backwardFrom,
                  parts->hasLoop() ? parts->of(start) : 0};
    auto *bucket = llvm::find_if(open, [&](Bucket &b) { return b.key == key; });
    if (bucket != open.end()) {
      bool fits = bucket->elements + member.elements <= limitOf(key);
      bool window = std::max(bucket->inputsReady, member.inputsReady) <
                    std::min(bucket->firstUse, member.firstUse);
      if (!fits || !window) {
        closed.push_back(std::move(*bucket));
        open.erase(bucket);
        bucket = open.end();
      }
    }
    if (bucket == open.end()) {
      open.push_back(Bucket{key, {}, -1, end, 0});
      bucket = std::prev(open.end());
    }
    bucket->members.push_back(member);
    bucket->inputsReady = std::max(bucket->inputsReady, member.inputsReady);
    bucket->firstUse = std::min(bucket->firstUse, member.firstUse);
    bucket->elements += member.elements;
  }
  for (Bucket &bucket : open)
    closed.push_back(std::move(bucket));
  // Emit in program order of each bucket's first collective.
  llvm::sort(closed, [&](const Bucket &a, const Bucket &b) {
    return positions[a.members.front().start] <
           positions[b.members.front().start];
  });
  SmallVector<CollectiveWaitOp> waits;
  for (Bucket &bucket : closed)
    waits.push_back(emit(bucket, block, order, positions, members));
  followBuckets(block, waits);
  for (Operation *op : llvm::reverse(order))
    if (members.contains(op) && isa<CollectiveWaitOp>(op))
      op->erase();
  for (Operation *op : llvm::reverse(order))
    if (members.contains(op) && isa<CollectiveStartOp>(op))
      op->erase();
}

namespace {
struct ZeroBucketingPass : zerosbp::impl::ZeroBucketingBase<ZeroBucketingPass> {
  using ZeroBucketingBase::ZeroBucketingBase;
  void runOnOperation() override {
    for (auto [name, value] :
         {std::pair<StringRef, int64_t>{"reduce-bucket-size", reduceBucketSize},
          {"allgather-bucket-size", allgatherBucketSize},
          {"prefetch-bucket-size", prefetchBucketSize}})
      if (value < 1) {
        getOperation().emitError("zero-bucketing: ")
            << name << " must be at least 1, got " << value;
        return signalPassFailure();
      }
    if (getOperation().isExternal())
      return;
    Bucketer bucketer(getOperation(), reduceBucketSize, allgatherBucketSize,
                      prefetchBucketSize);
    if (failed(bucketer.run()))
      signalPassFailure();
  }
};
} // namespace
