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

/// One function's rewrite: which variables move, and the copies that the
/// moves make necessary.
class Offloader {
public:
  Offloader(func::FuncOp func, zerosbp::OffloadDevice states,
            zerosbp::OffloadDevice params, bool delayed)
      : func(func), builder(func.getContext()), stateDevice(states),
        paramDevice(params), delayedUpdate(delayed) {}

  LogicalResult run() {
    func.walk([&](nn::OptimizerUpdateOpInterface update) {
      updates.push_back(update);
    });
    if (stateDevice != zerosbp::OffloadDevice::None) {
      if (failed(moveStates()))
        return failure();
      if (delayedUpdate)
        for (nn::OptimizerUpdateOpInterface update : updates)
          if (failed(delayGradient(update)))
            return failure();
    }
    if (paramDevice != zerosbp::OffloadDevice::None)
      moveParameters();
    if (stateDevice != zerosbp::OffloadDevice::None)
      for (nn::OptimizerUpdateOpInterface update : updates)
        if (failed(runOnHost(update)))
          return failure();
    copyForParameterReaders();
    assignInVariableMemory();
    return success();
  }

private:
  static MemoryKind memoryFor(zerosbp::OffloadDevice where) {
    return where == zerosbp::OffloadDevice::Nvme ? MemoryKind::nvme
                                                 : MemoryKind::host;
  }

  /// The variables the updates keep: their states, and the fp32 masters
  /// they update (the loss scale's variables and the like stay).
  LogicalResult moveStates() {
    llvm::SetVector<nn::VariableOp> moved;
    for (nn::OptimizerUpdateOpInterface update : updates) {
      for (Value state : update.getStates())
        if (auto variable = state.getDefiningOp<nn::VariableOp>())
          moved.insert(variable);
      if (auto variable = update.getParameter().getDefiningOp<nn::VariableOp>();
          variable && variable.getRole() == Role::master)
        moved.insert(variable);
    }
    MemoryKind memory = memoryFor(stateDevice);
    for (nn::VariableOp variable : moved) {
      RankedTensorType type = inMemory(variable.getResult().getType(), memory);
      if (!type)
        return variable.emitOpError("zero-offload: needs the #sbp.global "
                                    "encoding of zero-sbp-propagation");
      variable.getResult().setType(type);
      variableMemory[variable.getName()] = memory;
    }
    return success();
  }

  /// ZeRO-Offload's one-step delayed parameter update: `update` applies the
  /// gradient of the step before, held in `<parameter>.delayed_grad` (role
  /// grad, in the states' memory, zeros before the first step), and this
  /// step's gradient is assigned to that variable. The update then reads
  /// only variables and the step.
  LogicalResult delayGradient(nn::OptimizerUpdateOpInterface update) {
    // The variable the parameter operand comes from (a view, the rank's
    // slice, a cast), which names the new one.
    nn::VariableOp param;
    for (Value value = update.getParameter(); value && !param;) {
      Operation *def = value.getDefiningOp();
      param = dyn_cast_or_null<nn::VariableOp>(def);
      value = def && !param && def->getNumOperands() > 0 ? def->getOperand(0)
                                                         : Value();
    }
    if (!param)
      return update->emitOpError("zero-offload: delayed-update: the updated "
                                 "parameter comes from no variable");
    Value grad = update.getGradient();
    auto type = cast<RankedTensorType>(grad.getType());
    GlobalTensorAttr encoding = getGlobalEncoding(type);
    if (!encoding)
      return update->emitOpError("zero-offload: delayed-update: the gradient "
                                 "has no #sbp.global encoding");
    MemoryKind memory = memoryFor(stateDevice);
    auto held = RankedTensorType::get(
        type.getShape(), type.getElementType(),
        GlobalTensorAttr::get(type.getContext(), encoding.getSbp(),
                              encoding.getPlacement().withMemory(memory),
                              Role::grad));
    // A flattened, padded shard keeps the model shape its states keep.
    DenseI64ArrayAttr logicalShape;
    for (Value state : update.getStates())
      if (auto variable = state.getDefiningOp<nn::VariableOp>())
        if (!logicalShape)
          logicalShape = variable.getLogicalShapeAttr();
    if (!logicalShape &&
        cast<RankedTensorType>(param.getResult().getType()).getShape() !=
            type.getShape())
      logicalShape = builder.getDenseI64ArrayAttr(
          cast<RankedTensorType>(param.getResult().getType()).getShape());
    std::string name = (param.getName() + ".delayed_grad").str();
    builder.setInsertionPointAfter(param);
    auto variable = nn::VariableOp::create(
        builder, param.getLoc(), held, builder.getStringAttr(name),
        RoleAttr::get(builder.getContext(), Role::grad),
        nn::InitializerAttr::get(builder.getContext(), nn::Initializer::zeros),
        builder.getF64FloatAttr(0.0), /*frozen=*/nullptr, logicalShape,
        /*model_split=*/nullptr);
    update.getGradientMutable().set(variable.getResult());
    builder.setInsertionPoint(func.getBody().front().getTerminator());
    nn::AssignOp::create(builder, update->getLoc(), name, grad);
    variableMemory[name] = memory;
    return success();
  }

  /// offload_param: the partitioned parameters (stage 3's flat shards);
  /// those kept whole (persistence threshold) stay on the device.
  void moveParameters() {
    func.walk([&](nn::VariableOp variable) {
      GlobalTensorAttr encoding =
          getGlobalEncoding(variable.getResult().getType());
      if (variable.getRole() == Role::param && encoding &&
          llvm::any_of(encoding.getSbp(),
                       [](SbpAttr sbp) { return sbp.isSplit(); }))
        params.insert(variable.getResult());
    });
    MemoryKind memory = memoryFor(paramDevice);
    for (Value param : params) {
      param.setType(inMemory(param.getType(), memory));
      variableMemory[param.getDefiningOp<nn::VariableOp>().getName()] = memory;
    }
  }

  /// `value` in `memory`, by a cast right before `before`. One copy of a
  /// value per memory kind serves every reader (the step, read by every
  /// update), except a parameter's: each reader gets its own, so that no
  /// copy is held from the forward to the backward. Copies are made where
  /// first needed, so that what comes off NVMe is held only around its
  /// reader; zero-schedule starts the transfers earlier.
  Value copyTo(Value value, MemoryKind memory, Operation *before) {
    // Between NVMe and the device through host memory, as a GPU's go.
    MemoryKind from = memoryOf(value.getType());
    if ((from == MemoryKind::nvme && memory == MemoryKind::device) ||
        (from == MemoryKind::device && memory == MemoryKind::nvme))
      return copyTo(copyTo(value, MemoryKind::host, before), memory, before);
    bool isParam = params.contains(value);
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
  }

  /// The update, the selects that choose between its results and the old
  /// values (zero-loss-scale's skipped steps), and the cast of a new master
  /// to the parameter's precision run on the host: the device gets the
  /// low-precision parameter, as from DeepSpeed's CPU Adam.
  LogicalResult runOnHost(nn::OptimizerUpdateOpInterface update) {
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
    // In order, so that a select reads the update's results in host memory
    // already.
    for (Operation *op : group) {
      for (OpOperand &operand : op->getOpOperands()) {
        Value value = operand.get();
        if (!getGlobalEncoding(value.getType()))
          return op->emitOpError("zero-offload: operand #")
                 << operand.getOperandNumber()
                 << " has no #sbp.global encoding";
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
          if (auto assign = dyn_cast<nn::AssignOp>(user))
            wanted = memoryOfVariable(assign.getName());
          if (wanted != MemoryKind::host)
            use.set(copyTo(result, wanted,
                           user->isBeforeInBlock(next) ? user : next));
        }
    return success();
  }

  /// Device readers of an offloaded parameter (its gathers; an update left
  /// on the device) read a copy each.
  void copyForParameterReaders() {
    for (Value param : params)
      for (OpOperand &use : llvm::make_early_inc_range(param.getUses())) {
        Operation *user = use.getOwner();
        if (made.contains(user) || onHost.contains(user) ||
            isa<nn::AssignOp>(user))
          continue;
        use.set(copyTo(param, MemoryKind::device, user));
      }
  }

  /// What is assigned goes to its variable's memory.
  void assignInVariableMemory() {
    func.walk([&](nn::AssignOp assign) {
      MemoryKind wanted = memoryOfVariable(assign.getName());
      if (memoryOf(assign.getValue().getType()) != wanted)
        assign.getValueMutable().assign(
            copyTo(assign.getValue(), wanted, assign));
    });
  }

  MemoryKind memoryOfVariable(StringRef name) const {
    auto it = variableMemory.find(name);
    return it == variableMemory.end() ? MemoryKind::device : it->second;
  }

  func::FuncOp func;
  OpBuilder builder;
  zerosbp::OffloadDevice stateDevice, paramDevice;
  bool delayedUpdate;
  SmallVector<nn::OptimizerUpdateOpInterface> updates;
  llvm::StringMap<MemoryKind> variableMemory;
  /// The offloaded parameters' values.
  llvm::SetVector<Value> params;
  llvm::DenseMap<std::pair<Value, unsigned>, Value> copies;
  /// The casts this rewrite made, and the ops it moved to host memory.
  llvm::SmallPtrSet<Operation *, 16> made, onHost;
};

struct ZeroOffloadPass
    : public zerosbp::impl::ZeroOffloadBase<ZeroOffloadPass> {
  using ZeroOffloadBase::ZeroOffloadBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || (device == zerosbp::OffloadDevice::None &&
                              paramDevice == zerosbp::OffloadDevice::None))
      return;
    if (failed(Offloader(func, device, paramDevice, delayedUpdate).run()))
      signalPassFailure();
  }
};

} // namespace
