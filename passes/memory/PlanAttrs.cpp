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
    // BufferAttr::verify checked the fields when the plan was parsed; the
    // planner makes them in range.
    auto buffer = dyn_cast<sbp::BufferAttr>(attr);
    if (!buffer)
      return func.emitError("buffer #")
             << index << " of " << kBuffersAttr << " is not an #sbp.buffer";
    result.push_back({buffer.getOffset(), buffer.getBytes(), buffer.getFirst(),
                      buffer.getLast(), buffer.getRole(), buffer.getMemory(),
                      buffer.getStage()});
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
  if (isa<nn::ViewOpInterface>(op)) {
    std::optional<Slot> result = readSlot(op.getResult(0));
    std::optional<Slot> input = readSlot(op.getOperand(0));
    return !(result && input && result->buffer == input->buffer);
  }
  if (isa<nn::AssignOp>(op))
    return op.hasAttr(kCopyAttr);
  return true;
}
