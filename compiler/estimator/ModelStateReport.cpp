//===- ModelStateReport.cpp - memory and traffic read off the IR ----------===//

#include "compiler/estimator/ModelStateReport.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"

#include <map>

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

int64_t zerosbp::perRankElements(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape());
  // Rank 0 holds the largest share of every balanced split.
  if (GlobalTensorAttr encoding = getGlobalEncoding(type)) {
    SmallVector<int64_t, 2> hierarchy =
        encoding.getPlacement().getHierarchyShape();
    SmallVector<int64_t> firstRank(hierarchy.size(), 0);
    shape = localShape(shape, encoding.getSbp(), hierarchy, firstRank);
  }
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

static int64_t perRankBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return perRankElements(tensor) * elementBytes(tensor);
}

static int64_t logicalElements(nn::VariableOp variable) {
  auto type = cast<RankedTensorType>(variable.getResult().getType());
  if (auto shape = variable.getLogicalShape()) {
    int64_t count = 1;
    for (int64_t dim : *shape)
      count *= dim;
    return count;
  }
  return type.getNumElements();
}

/// The gradient an update consumes, before the reshape, pad and casts that
/// brought it to the update.
static Value fullGradient(Value grad) {
  while (Operation *producer = grad.getDefiningOp()) {
    if (!isa<CastOp, nn::ReshapeOp, nn::PadOp>(producer))
      break;
    grad = producer->getOperand(0);
  }
  return grad;
}

FailureOr<ModelStateReport> zerosbp::analyzeModelStates(func::FuncOp func) {
  ModelStateReport report;
  if (auto stage = func->getAttrOfType<IntegerAttr>(kStageAttr))
    report.stage = stage.getInt();
  for (const char *role : {"param", "grad", "master", "opt_state"})
    report.bytesPerRank[role] = 0;
  // A rank of a pipelined graph holds one stage's states: each stage is
  // counted apart and the report is of the largest
  // (docs/design.md#pipeline-parallelism).
  int64_t stages = 1;
  if (auto pipeline = func->getAttrOfType<DictionaryAttr>(kPipelineAttr))
    stages = cast<IntegerAttr>(pipeline.get("stages")).getInt();
  std::map<int64_t, std::map<std::string, int64_t>> stageBytes;
  std::map<int64_t, std::map<std::string, int64_t>> stageOffloaded;

  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    ++report.ops;
    int64_t stage = pipelineMark(op, nn::kPipelineStageAttr);
    std::map<std::string, int64_t> &bytesPerRank = stageBytes[stage];
    std::map<std::string, int64_t> &offloadedBytesPerRank =
        stageOffloaded[stage];
    if (auto variable = dyn_cast<nn::VariableOp>(op)) {
      GlobalTensorAttr encoding =
          getGlobalEncoding(variable.getResult().getType());
      if (!encoding)
        return variable.emitOpError("has no SBP; compile the graph first");
      report.world = encoding.getPlacement().getNumRanks() * stages;
      Role role = variable.getRole();
      if (role == Role::param)
        report.params += logicalElements(variable);
      // Offloaded states are held off the device (docs/design.md#offload).
      MemoryKind memory = encoding.getPlacement().getMemory();
      if (role != Role::activation && role != Role::input) {
        int64_t bytes = perRankBytes(variable.getResult().getType());
        if (memory == MemoryKind::device)
          bytesPerRank[stringifyRole(role).str()] += bytes;
        else
          offloadedBytesPerRank[stringifyMemoryKind(memory).str()] += bytes;
      }
      return WalkResult::advance();
    }
    if (auto update = dyn_cast<nn::OptimizerUpdateOpInterface>(op)) {
      Value grad = update.getGradient();
      // An offloaded update reads its shard from host memory; below stage 2
      // the device still holds the full gradient until it is reduced.
      GlobalTensorAttr encoding = getGlobalEncoding(grad.getType());
      MemoryKind memory =
          encoding ? encoding.getPlacement().getMemory() : MemoryKind::device;
      if (memory != MemoryKind::device) {
        offloadedBytesPerRank[stringifyMemoryKind(memory).str()] +=
            perRankBytes(grad.getType());
        if (report.stage < 2)
          bytesPerRank["grad"] += perRankBytes(fullGradient(grad).getType());
        return WalkResult::advance();
      }
      Value counted = report.stage >= 2 ? grad : fullGradient(grad);
      bytesPerRank["grad"] += perRankBytes(counted.getType());
      return WalkResult::advance();
    }
    if (auto cast = dyn_cast<CastOp>(op)) {
      GlobalTensorAttr source = cast.getSourceEncoding();
      GlobalTensorAttr target = cast.getTargetEncoding();
      if (source.getPlacement().onDevice().getRanks() !=
          target.getPlacement().onDevice().getRanks()) {
        // A move between pipeline stages: the rank's part, sent once.
        ++report.collectives["send_recv"];
        report.commBytesPerStep["send_recv"] +=
            perRankBytes(cast.getInput().getType());
        return WalkResult::advance();
      }
      SmallVector<int64_t, 2> hierarchy =
          source.getPlacement().getHierarchyShape();
      int64_t bytes = tensorBytes(cast.getInput().getType());
      for (int64_t axis = 0; axis < (int64_t)hierarchy.size(); ++axis) {
        std::optional<CollectiveKind> kind = cast.getCollectiveOnAxis(axis);
        if (!kind || hierarchy[axis] <= 1)
          continue;
        std::string name = stringifyCollectiveKind(*kind).str();
        ++report.collectives[name];
        report.commBytesPerStep[name] +=
            boxingBytes(source.getSbp()[axis], target.getSbp()[axis], bytes,
                        hierarchy[axis]);
      }
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  auto total = [](const std::map<std::string, int64_t> &bytes) {
    int64_t sum = 0;
    for (const auto &[role, count] : bytes)
      sum += count;
    return sum;
  };
  const std::map<std::string, int64_t> *largest = nullptr;
  int64_t largestStage = -1;
  for (const auto &[stage, bytes] : stageBytes)
    if (!largest || total(bytes) > total(*largest)) {
      largest = &bytes;
      largestStage = stage;
    }
  if (largest) {
    for (const auto &[role, bytes] : *largest)
      report.bytesPerRank[role] = bytes;
    report.offloadedBytesPerRank = stageOffloaded[largestStage];
  }
  return report;
}

int64_t ModelStateReport::modelStateBytes() const {
  int64_t total = 0;
  for (const auto &[role, bytes] : bytesPerRank)
    total += bytes;
  return total;
}

double ModelStateReport::commBytes() const {
  double total = 0;
  for (const auto &[kind, bytes] : commBytesPerStep)
    total += bytes;
  return total;
}

llvm::json::Object ModelStateReport::toJson() const {
  llvm::json::Object bytes, comm, counts, offloaded;
  for (const auto &[role, value] : bytesPerRank)
    bytes[role] = value;
  for (const auto &[memory, value] : offloadedBytesPerRank)
    offloaded[memory] = value;
  // send_recv only where there are pipeline stages, as before them.
  llvm::SmallVector<const char *, 5> kinds = {"all_reduce", "reduce_scatter",
                                              "all_gather", "all_to_all"};
  if (collectives.count("send_recv"))
    kinds.push_back("send_recv");
  for (const char *kind : kinds) {
    auto it = commBytesPerStep.find(kind);
    comm[kind] = it == commBytesPerStep.end() ? 0.0 : it->second;
    auto count = collectives.find(kind);
    counts[kind] = count == collectives.end() ? 0 : count->second;
  }
  return llvm::json::Object{
      {"params", params},
      {"world", world},
      {"stage", stage},
      {"bytes_per_rank", std::move(bytes)},
      {"model_state_bytes_per_rank", modelStateBytes()},
      {"offloaded_bytes_per_rank", std::move(offloaded)},
      {"comm_bytes_per_step", std::move(comm)},
      {"collectives", std::move(counts)},
      {"ops", ops},
  };
}
