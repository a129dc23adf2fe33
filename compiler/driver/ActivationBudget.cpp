//===- ActivationBudget.cpp - checkpoints chosen for a memory budget ------===//

#include "compiler/driver/ActivationBudget.h"

#include "dialects/nn/IR/NNDialect.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace mlir;

namespace zerosbp {

namespace {

llvm::Error budgetError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "activation memory budget: " + message);
}

/// Drops the checkpoint marks of every segment not among the first `keep`
/// of `segments`.
void keepSegments(ModuleOp module, llvm::ArrayRef<int64_t> segments,
                  size_t keep) {
  std::set<int64_t> kept(segments.begin(), segments.begin() + keep);
  module.walk([&](Operation *op) {
    if (auto id = op->getAttrOfType<IntegerAttr>(nn::kCheckpointAttr))
      if (!kept.count(id.getInt()))
        op->removeAttr(nn::kCheckpointAttr);
  });
}

/// The planned activation peak per rank with the first `keep` segments.
llvm::Expected<int64_t> activationPeak(ModuleOp module,
                                       const ZeroConfig &config,
                                       llvm::ArrayRef<int64_t> segments,
                                       size_t keep) {
  OwningOpRef<ModuleOp> trial = module.clone();
  keepSegments(*trial, segments, keep);
  auto report = compileGraph(*trial, config, CompileOptions());
  if (!report)
    return report.takeError();
  const llvm::json::Object *plan = report->getObject("plan");
  const llvm::json::Object *memory =
      plan ? plan->getObject("memory_plan") : nullptr;
  const llvm::json::Object *roles =
      memory ? memory->getObject("peak_bytes_by_role") : nullptr;
  std::optional<int64_t> peak =
      roles ? roles->getInteger("activation") : std::nullopt;
  if (!peak)
    return budgetError("the plan has no activation peak");
  return *peak;
}

} // namespace

llvm::Expected<llvm::json::Object>
chooseCheckpointsForBudget(ModuleOp module, const ZeroConfig &config,
                           int64_t budget) {
  std::set<int64_t> ids;
  module.walk([&](Operation *op) {
    if (auto id = op->getAttrOfType<IntegerAttr>(nn::kCheckpointAttr))
      ids.insert(id.getInt());
  });
  if (ids.empty())
    return budgetError("the graph has no checkpointable segments (mark "
                       "modules with zs.checkpoint, or give "
                       "--activation-memory-budget GPT-2 flags)");
  SmallVector<int64_t> segments(ids.begin(), ids.end());
  int64_t compiles = 0;
  auto peakWith = [&](size_t keep) {
    ++compiles;
    return activationPeak(module, config, segments, keep);
  };
  auto none = peakWith(0);
  if (!none)
    return none.takeError();
  // Equal blocks cost equal recomputation and the peak does not grow with
  // the segments kept, so the fewest that fit are found by binary search.
  size_t lo = 0, hi = 0;
  int64_t chosen = *none;
  if (*none > budget) {
    auto all = peakWith(segments.size());
    if (!all)
      return all.takeError();
    if (*all > budget)
      return budgetError(llvm::formatv(
          "{0} bytes cannot be met: with all {1} segments checkpointed the "
          "planned activation peak per rank is {2} bytes (without, {3})",
          budget, segments.size(), *all, *none));
    hi = segments.size();
    chosen = *all;
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      auto peak = peakWith(mid);
      if (!peak)
        return peak.takeError();
      if (*peak <= budget) {
        hi = mid;
        chosen = *peak;
      } else {
        lo = mid;
      }
    }
  }
  keepSegments(module, segments, hi);
  return llvm::json::Object{
      {"budget_bytes", budget},
      {"segments", static_cast<int64_t>(segments.size())},
      {"checkpointed_segments",
       llvm::json::Array(llvm::ArrayRef<int64_t>(segments).take_front(hi))},
      {"activation_peak_bytes", chosen},
      {"activation_peak_without_bytes", *none},
      {"compiles", compiles},
  };
}

} // namespace zerosbp
