//===- LocalUtils.cpp - helpers for the local-view passes -----------------===//

#include "passes/common/LocalUtils.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::sbp;

int64_t zerosbp::numElements(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

int64_t zerosbp::bucketElements(CollectiveStartOp start) {
  int64_t total = 0;
  for (auto [input, result] :
       llvm::zip(start.getInputs().getTypes(),
                 start.getFuture().getType().getValueTypes()))
    total += std::max(numElements(input), numElements(result));
  return total;
}

/// A parameter; a parameter gathered over some hierarchy axes, which the
/// second step of a 2-D gather gathers over the others; or an hpZ secondary
/// partition, the all_slice a gathered parameter leaves behind for the
/// backward to gather again (docs/design.md#hierarchical-zero); or qwZ's
/// codes and scales of one, its rows padded to whole blocks
/// (docs/design.md#quantized-weight-gathers).
static bool isParameterShard(Value value) {
  if (value.getDefiningOp<nn::VariableOp>())
    return true;
  if (auto quantize = value.getDefiningOp<nn::QuantizeOp>()) {
    Value input = quantize.getInput();
    while (isa_and_nonnull<nn::ReshapeOp, nn::PadOp>(input.getDefiningOp()))
      input = input.getDefiningOp()->getOperand(0);
    return isParameterShard(input);
  }
  if (auto slice = value.getDefiningOp<shard::AllSliceOp>())
    return isParameterShard(slice.getInput());
  if (auto wait = value.getDefiningOp<CollectiveWaitOp>()) {
    auto start = wait.getFuture().getDefiningOp<CollectiveStartOp>();
    return start && start.getKind() == CollectiveKind::all_gather &&
           isParameterShard(
               start.getInputs()[cast<OpResult>(value).getResultNumber()]);
  }
  return false;
}

bool zerosbp::isParameterGather(CollectiveStartOp start) {
  return start.getKind() == CollectiveKind::all_gather &&
         llvm::all_of(start.getInputs(), isParameterShard);
}

CollectiveWaitOp zerosbp::waitOf(CollectiveStartOp start) {
  for (Operation *user : start.getFuture().getUsers())
    if (auto wait = dyn_cast<CollectiveWaitOp>(user))
      return wait;
  return nullptr;
}

zerosbp::OpPositions::OpPositions(Block &block) {
  int64_t index = 0;
  for (Operation &op : block)
    positions[&op] = index++;
}

int64_t zerosbp::OpPositions::definedAt(Value value) const {
  if (Operation *op = value.getDefiningOp())
    return positions.at(op);
  return -1;
}

int64_t zerosbp::OpPositions::firstUse(Operation *op, int64_t end) const {
  int64_t first = end;
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers())
      first = std::min(first, positions.at(user));
  return first;
}

int64_t zerosbp::OpPositions::lastUse(Value value) const {
  int64_t last = definedAt(value);
  for (Operation *user : value.getUsers())
    last = std::max(last, positions.at(user));
  return last;
}

int64_t zerosbp::OpPositions::writeStart(Value value) const {
  Operation *def = value.getDefiningOp();
  if (!def || isa<nn::VariableOp>(def))
    return -1;
  if (auto wait = dyn_cast<CollectiveWaitOp>(def))
    return positions.at(wait.getFuture().getDefiningOp());
  // A transfer writes its result from its start on, on the copy stream.
  if (auto wait = dyn_cast<TransferWaitOp>(def))
    return positions.at(wait.getFuture().getDefiningOp());
  return positions.at(def);
}

int64_t zerosbp::OpPositions::readEnd(Value value, Operation *ignore) const {
  int64_t end = std::max<int64_t>(writeStart(value), 0);
  for (Operation *user : value.getUsers()) {
    if (user == ignore)
      continue;
    if (auto start = dyn_cast<CollectiveStartOp>(user))
      end = std::max(end, positions.at(waitOf(start)));
    else if (isa<TransferStartOp>(user))
      // The copy stream reads the source until the wait.
      end = std::max(end, positions.at(*user->getUsers().begin()));
    else
      end = std::max(end, positions.at(user));
  }
  return end;
}

int64_t zerosbp::backwardStart(Block &block, const OpPositions &positions) {
  for (Operation &op : block)
    if (op.hasAttr(kLossSeedAttr))
      return positions[&op];
  return positions[block.getTerminator()];
}

void zerosbp::moveBeforeInBlock(Operation *op, Operation *target) {
  if (op == target || op->getNextNode() == target)
    return;
  op->remove();
  target->getBlock()->getOperations().insert(target->getIterator(), op);
}

void zerosbp::moveAfterInBlock(Operation *op, Operation *target) {
  if (op == target || target->getNextNode() == op)
    return;
  op->remove();
  target->getBlock()->getOperations().insertAfter(target->getIterator(), op);
}

int64_t zerosbp::pipelineStageOf(Operation *op) {
  while (op) {
    if (int64_t stage = pipelineMark(op, nn::kPipelineStageAttr); stage >= 0)
      return stage;
    Operation *next = nullptr;
    for (Value operand : op->getOperands())
      if ((next = operand.getDefiningOp()))
        break;
    op = next;
  }
  return -1;
}

zerosbp::LoopParts::LoopParts(Block &block)
    : terminator(block.getTerminator()) {
  bool inLoop = false;
  for (Operation &op : block) {
    int64_t chunk = pipelineMark(&op, kLoopChunkAttr);
    // Until zero-schedule moves it, a receive sits with its send, in
    // another chunk's ops.
    if (chunk >= 0 && isa<RecvOp>(op)) {
      partOf[&op] = chunk;
      continue;
    }
    if (chunk >= 0) {
      firstOp.try_emplace(chunk, &op);
      inLoop = true;
      partOf[&op] = chunk;
      continue;
    }
    partOf[&op] = inLoop ? kAfter : kBefore;
    if (inLoop && &op != terminator)
      firstOp.try_emplace(kAfter, &op);
  }
}

int64_t zerosbp::LoopParts::of(Operation *op) const {
  int64_t chunk = pipelineMark(op, kLoopChunkAttr);
  if (chunk >= 0)
    return chunk;
  auto it = partOf.find(op);
  return it == partOf.end() ? kAfter : it->second;
}

Operation *zerosbp::LoopParts::firstAfter(int64_t part) const {
  auto it = firstOp.upper_bound(part);
  return it == firstOp.end() ? terminator : it->second;
}

Operation *zerosbp::LoopParts::firstOf(int64_t part) const {
  auto it = firstOp.lower_bound(part);
  return it == firstOp.end() ? terminator : it->second;
}
