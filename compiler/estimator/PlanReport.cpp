//===- PlanReport.cpp - what the local-view passes planned ----------------===//

#include "compiler/estimator/PlanReport.h"

#include "passes/common/ZeroAttrNames.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "passes/common/LocalUtils.h"
#include "passes/common/SbpUtils.h"
#include "passes/memory/PlanAttrs.h"

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

int64_t PlanReport::bucketCount() const {
  int64_t count = 0;
  for (const auto &[kind, sizes] : buckets)
    count += sizes.size();
  return count;
}

/// True for an op that computes: an instruction other than a collective.
static bool computes(Operation *op) {
  return !isa<CollectiveStartOp, CollectiveWaitOp>(op) && hasInstruction(*op);
}

FailureOr<PlanReport> zerosbp::analyzePlan(func::FuncOp func) {
  auto memory = func->getAttrOfType<DictionaryAttr>(kMemoryAttr);
  if (!memory)
    return func.emitError("has no memory plan; run zero-memory-plan first");
  PlanReport report;
  auto integer = [&](StringRef key) {
    auto attr = memory.getAs<IntegerAttr>(key);
    return attr ? attr.getInt() : 0;
  };
  report.arenaBytes = integer("arena");
  report.lowerBoundBytes = integer("lower_bound");
  report.modelStateBytes = integer("model_states");
  if (auto peaks = memory.getAs<DictionaryAttr>("peak"))
    for (NamedAttribute entry : peaks)
      if (auto bytes = dyn_cast<IntegerAttr>(entry.getValue()))
        report.peakBytesByRole[entry.getName().str()] = bytes.getInt();

  // A rank runs one pipeline stage's collectives; the report is of the
  // stage that sends the most. Sends between stages count on the pipeline
  // axis, the plan's axis 0 (docs/plan-format.md).
  struct StageTraffic {
    double bytes = 0, overlapped = 0;
    std::map<std::string, double> byKind;
    std::vector<double> byAxis;
    void add(const std::string &kind, size_t axis, double sent) {
      bytes += sent;
      byKind[kind] += sent;
      if (byAxis.size() <= axis)
        byAxis.resize(axis + 1, 0.0);
      byAxis[axis] += sent;
    }
  };
  std::map<int64_t, StageTraffic> byStage;
  size_t axisShift = func->hasAttr(kPipelineAttr) ? 1 : 0;
  func.walk([&](CollectiveStartOp start) {
    CollectiveWaitOp wait = waitOf(start);
    std::string kind = stringifyCollectiveKind(start.getKind()).str();
    int64_t group =
        start.getPlacement().getHierarchyShape()[start.getHierarchyAxis()];
    double sent = 0;
    int64_t elements = 0;
    for (auto [input, result] :
         llvm::zip(start.getInputs(), wait.getResults())) {
      auto in = cast<RankedTensorType>(input.getType());
      auto out = cast<RankedTensorType>(result.getType());
      int64_t full = std::max(tensorBytes(in), tensorBytes(out));
      // The full-size side of an all-to-all is the group's tensor: each
      // rank holds 1/group of it on both sides.
      if (start.getKind() == CollectiveKind::all_to_all)
        full *= group;
      sent += collectiveBytes(start.getKind(), full, group);
      elements += std::max(in.getNumElements(), out.getNumElements());
    }
    report.buckets[kind].push_back(elements);
    StageTraffic &traffic = byStage[pipelineStageOf(start)];
    traffic.add(kind, start.getHierarchyAxis() + axisShift, sent);
    for (Operation *op = start->getNextNode(); op && op != wait;
         op = op->getNextNode())
      if (computes(op)) {
        traffic.overlapped += sent;
        break;
      }
  });
  func.walk([&](SendOp send) {
    byStage[send.getSourceStage()].add("send_recv", 0,
                                       tensorBytes(send.getInput().getType()));
  });
  const StageTraffic *busiest = nullptr;
  for (const auto &[stage, traffic] : byStage)
    if (!busiest || traffic.bytes > busiest->bytes)
      busiest = &traffic;
  if (busiest) {
    report.commBytes = busiest->bytes;
    report.overlappedBytes = busiest->overlapped;
    report.commBytesByKind = busiest->byKind;
    report.commBytesByAxis = busiest->byAxis;
  }
  return report;
}

llvm::json::Object PlanReport::toJson() const {
  llvm::json::Object bucketJson;
  for (const auto &[kind, sizes] : buckets)
    bucketJson[kind] =
        llvm::json::Object{{"count", static_cast<int64_t>(sizes.size())},
                           {"elements", llvm::json::Array(sizes)}};
  llvm::json::Object roles;
  for (const auto &[role, bytes] : peakBytesByRole)
    roles[role] = bytes;
  double fragmentation =
      arenaBytes ? 1.0 - static_cast<double>(lowerBoundBytes) / arenaBytes : 0;
  return llvm::json::Object{
      {"buckets", llvm::json::Object{{"count", bucketCount()},
                                     {"by_kind", std::move(bucketJson)}}},
      {"overlap",
       llvm::json::Object{
           {"comm_bytes", commBytes},
           {"comm_bytes_by_axis", llvm::json::Array(commBytesByAxis)},
           {"overlapped_bytes", overlappedBytes},
           {"fraction", commBytes > 0 ? overlappedBytes / commBytes : 0.0}}},
      {"memory_plan",
       llvm::json::Object{{"peak_bytes_per_rank", arenaBytes},
                          {"lower_bound_bytes", lowerBoundBytes},
                          {"fragmentation", fragmentation},
                          {"model_state_bytes", modelStateBytes},
                          {"peak_bytes_by_role", std::move(roles)}}},
  };
}
