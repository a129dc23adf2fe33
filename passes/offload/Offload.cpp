//===- Offload.cpp - zero-offload -----------------------------------------===//
//
// Offload as placement (docs/design.md#offload): the optimizer states (and
// fp32 masters) get a placement in host memory or on NVMe, and each update
// runs where its states are, in host memory. What crosses between memory
// kinds does so by sbp.cast, which zero-partition lowers to transfers that
// zero-schedule overlaps like collectives.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include <functional>

namespace zerosbp {
#define GEN_PASS_DEF_ZEROOFFLOAD
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;

namespace {

/// `type` with its placement in `memory`; null unless it has a global
/// encoding.
RankedTensorType inMemory(Type type, MemoryKind memory) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  GlobalTensorAttr encoding = ranked ? getGlobalEncoding(ranked) : nullptr;
  if (!encoding)
    return nullptr;
  auto moved = GlobalTensorAttr::get(type.getContext(), encoding.getSbp(),
                                     encoding.getPlacement().withMemory(memory),
                                     encoding.getRole());
  return RankedTensorType::get(ranked.getShape(), ranked.getElementType(),
                               moved);
}

MemoryKind memoryOf(Type type) {
  GlobalTensorAttr encoding = getGlobalEncoding(type);
  return encoding ? encoding.getPlacement().getMemory() : MemoryKind::device;
}

struct ZeroOffloadPass
    : public zerosbp::impl::ZeroOffloadBase<ZeroOffloadPass> {
  using ZeroOffloadBase::ZeroOffloadBase;

  void runOnOperation() override {
    if (device == zerosbp::OffloadDevice::None &&
        paramDevice == zerosbp::OffloadDevice::None)
      return;
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    auto memoryFor = [](zerosbp::OffloadDevice where) {
      return where == zerosbp::OffloadDevice::Nvme ? MemoryKind::nvme
                                                   : MemoryKind::host;
    };
    MemoryKind states = memoryFor(device);
    SmallVector<nn::OptimizerUpdateOpInterface> updates;
    func.walk([&](nn::OptimizerUpdateOpInterface update) {
      updates.push_back(update);
    });
    // The variables the updates keep: their states, and the fp32 masters
    // they update (the loss scale's variables and the like stay).
    llvm::SetVector<nn::VariableOp> moved;
    for (nn::OptimizerUpdateOpInterface update : updates) {
      if (device == zerosbp::OffloadDevice::None)
        break;
      for (Value state : update.getStates())
        if (auto variable = state.getDefiningOp<nn::VariableOp>())
          moved.insert(variable);
      if (auto variable = update.getParameter().getDefiningOp<nn::VariableOp>();
          variable && variable.getRole() == Role::master)
        moved.insert(variable);
    }
    llvm::StringMap<MemoryKind> variableMemory;
    for (nn::VariableOp variable : moved) {
      RankedTensorType type = inMemory(variable.getResult().getType(), states);
      if (!type) {
        variable.emitOpError("zero-offload: needs the #sbp.global encoding "
                             "of zero-sbp-propagation");
        return signalPassFailure();
      }
      variable.getResult().setType(type);
      variableMemory[variable.getName()] = states;
    }
    // offload_param: the partitioned parameters (stage 3's flat shards);
    // those kept whole (persistence threshold) stay on the device.
    llvm::SetVector<nn::VariableOp> params;
    if (paramDevice != zerosbp::OffloadDevice::None)
      func.walk([&](nn::VariableOp variable) {
        GlobalTensorAttr encoding =
            getGlobalEncoding(variable.getResult().getType());
        if (variable.getRole() == Role::param && encoding &&
            llvm::any_of(encoding.getSbp(),
                         [](SbpAttr sbp) { return sbp.isSplit(); }))
          params.insert(variable);
      });
    for (nn::VariableOp variable : params) {
      MemoryKind memory = memoryFor(paramDevice);
      variable.getResult().setType(
          inMemory(variable.getResult().getType(), memory));
      variableMemory[variable.getName()] = memory;
    }

    OpBuilder builder(func.getContext());
    // One copy of a value per memory kind, however many ops read it there
    // (the step, read by every update). A copy is made right where it is
    // first needed, so that what comes off NVMe is held only around its
    // update; zero-schedule starts the transfers earlier.
    llvm::DenseMap<std::pair<Value, unsigned>, Value> copies;
    llvm::SmallPtrSet<Operation *, 16> made;
    // The ops that compute in host memory: the updates' groups.
    llvm::SmallPtrSet<Operation *, 16> onHost;
    std::function<Value(Value, MemoryKind, Operation *)> copyTo;
    copyTo = [&](Value value, MemoryKind memory, Operation *before) -> Value {
      // Between NVMe and the device through host memory, as the GPU's
      // copies go.
      MemoryKind from = memoryOf(value.getType());
      if ((from == MemoryKind::nvme && memory == MemoryKind::device) ||
          (from == MemoryKind::device && memory == MemoryKind::nvme))
        return copyTo(copyTo(value, MemoryKind::host, before), memory, before);
      // A parameter is copied for each reader, so that no copy is held
      // from the forward to the backward.
      bool isParam = llvm::any_of(params, [&](nn::VariableOp variable) {
        return variable.getResult() == value;
      });
      auto key = std::make_pair(value, static_cast<unsigned>(memory));
      if (Value copy = isParam ? Value() : copies.lookup(key)) {
        // An earlier reader than the one it was made for.
        if (before->isBeforeInBlock(copy.getDefiningOp()))
          copy.getDefiningOp()->moveBefore(before);
        return copy;
      }
      builder.setInsertionPoint(before);
      Value copy = CastOp::create(builder, value.getLoc(),
                                  inMemory(value.getType(), memory), value);
      if (!isParam)
        copies[key] = copy;
      made.insert(copy.getDefiningOp());
      return copy;
    };

    for (nn::OptimizerUpdateOpInterface update : updates) {
      if (device == zerosbp::OffloadDevice::None)
        break;
      // The update, the selects that choose between its results and the
      // old values (zero-loss-scale's skipped steps), and the cast of a new
      // master to the parameter's precision run on the host: the device
      // gets the low-precision parameter, as from DeepSpeed's CPU Adam.
      SmallVector<Operation *> group = {update.getOperation()};
      for (size_t next = 0; next < group.size(); ++next)
        for (Value result : group[next]->getResults())
          for (Operation *user : result.getUsers())
            if (isa<nn::SelectOp, nn::CastOp>(user) &&
                !llvm::is_contained(group, user))
              group.push_back(user);
      llvm::sort(
          std::next(group.begin()), group.end(),
          [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
      onHost.insert(group.begin(), group.end());
      // In order, so that a select reads the update's results in host
      // memory already.
      for (Operation *op : group) {
        for (OpOperand &operand : op->getOpOperands()) {
          Value value = operand.get();
          if (!getGlobalEncoding(value.getType())) {
            op->emitOpError("zero-offload: operand #")
                << operand.getOperandNumber() << " has no #sbp.global encoding";
            return signalPassFailure();
          }
          if (memoryOf(value.getType()) != MemoryKind::host)
            operand.set(copyTo(value, MemoryKind::host, op));
        }
        for (OpResult result : op->getResults())
          result.setType(inMemory(result.getType(), MemoryKind::host));
      }
      // What reads the results elsewhere reads a copy made after the group,
      // or right before it where it comes first.
      Operation *next = group.back()->getNextNode();
      for (Operation *op : group)
        for (OpResult result : op->getResults())
          for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
            Operation *user = use.getOwner();
            if (made.contains(user) || llvm::is_contained(group, user))
              continue;
            MemoryKind wanted = MemoryKind::device;
            if (auto assign = dyn_cast<nn::AssignOp>(user)) {
              auto it = variableMemory.find(assign.getName());
              if (it != variableMemory.end())
                wanted = it->second;
            }
            if (wanted != MemoryKind::host)
              use.set(copyTo(result, wanted,
                             user->isBeforeInBlock(next) ? user : next));
          }
    }

    // Device readers of an offloaded parameter (its gathers; an update left
    // on the device) read a copy each.
    for (nn::VariableOp variable : params)
      for (OpOperand &use :
           llvm::make_early_inc_range(variable.getResult().getUses())) {
        Operation *user = use.getOwner();
        if (made.contains(user) || onHost.contains(user) ||
            isa<nn::AssignOp>(user))
          continue;
        use.set(copyTo(variable.getResult(), MemoryKind::device, user));
      }
    // What is assigned goes to its variable's memory.
    func.walk([&](nn::AssignOp assign) {
      auto it = variableMemory.find(assign.getName());
      MemoryKind wanted =
          it == variableMemory.end() ? MemoryKind::device : it->second;
      if (memoryOf(assign.getValue().getType()) != wanted)
        assign.getValueMutable().assign(
            copyTo(assign.getValue(), wanted, assign));
    });
  }
};

} // namespace
