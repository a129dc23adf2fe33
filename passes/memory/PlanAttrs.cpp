//===- PlanAttrs.cpp - reading the memory plan off the IR -----------------===//

#include "passes/memory/PlanAttrs.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

FailureOr<std::vector<zerosbp::PlannedBuffer>>
zerosbp::readPlannedBuffers(func::FuncOp func) {
  auto buffers = func->getAttrOfType<ArrayAttr>(kBuffersAttr);
  if (!buffers)
    return func.emitError("has no memory plan (")
           << kBuffersAttr << "); run zero-memory-plan first";
  std::vector<PlannedBuffer> result;
  for (auto [index, attr] : llvm::enumerate(buffers)) {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    auto offset = dict ? dict.getAs<IntegerAttr>("offset") : nullptr;
    auto bytes = dict ? dict.getAs<IntegerAttr>("bytes") : nullptr;
    auto live = dict ? dict.getAs<DenseI64ArrayAttr>("live") : nullptr;
    auto role = dict ? dict.getAs<StringAttr>("role") : nullptr;
    if (!offset || !bytes || !live || live.size() != 2 || !role)
      return func.emitError("buffer #")
             << index << " of " << kBuffersAttr
             << " needs offset, bytes, live = [first, last] and role";
    PlannedBuffer buffer{offset.getInt(), bytes.getInt(), live[0], live[1],
                         role.getValue().str()};
    if (auto memory = dict.getAs<StringAttr>("memory"))
      buffer.memory = memory.getValue().str();
    result.push_back(std::move(buffer));
  }
  return result;
}

std::optional<zerosbp::Slot> zerosbp::readSlot(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return std::nullopt;
  auto slots = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(kSlotsAttr);
  unsigned index = result.getResultNumber();
  if (!slots || (int64_t)slots.size() < 2 * (index + 1) || slots[2 * index] < 0)
    return std::nullopt;
  return Slot{slots[2 * index], slots[2 * index + 1]};
}

bool zerosbp::hasInstruction(Operation &op) {
  if (isa<nn::VariableOp, nn::InputOp, nn::StepOp, func::ReturnOp>(op))
    return false;
  if (isa<nn::ReshapeOp, nn::SliceOp>(op)) {
    std::optional<Slot> result = readSlot(op.getResult(0));
    std::optional<Slot> input = readSlot(op.getOperand(0));
    return !(result && input && result->buffer == input->buffer);
  }
  if (isa<nn::AssignOp>(op))
    return op.hasAttr(kCopyAttr);
  return true;
}
