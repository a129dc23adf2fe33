#include "passes/Passes.h"
namespace zerosbp {
#define GEN_PASS_DEF_ZEROEXPORTPLAN
#include "passes/Passes.h.inc"
} // namespace zerosbp
namespace {
struct ZeroExportPlanPass : zerosbp::impl::ZeroExportPlanBase<ZeroExportPlanPass> {
  using ZeroExportPlanBase::ZeroExportPlanBase;
  void runOnOperation() override {}
};
} // namespace
