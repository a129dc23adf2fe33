#include "passes/Passes.h"
namespace zerosbp {
#define GEN_PASS_DEF_ZEROVERIFYMEMORYPLAN
#include "passes/Passes.h.inc"
} // namespace zerosbp
namespace {
struct ZeroVerifyMemoryPlanPass : zerosbp::impl::ZeroVerifyMemoryPlanBase<ZeroVerifyMemoryPlanPass> {
  using ZeroVerifyMemoryPlanBase::ZeroVerifyMemoryPlanBase;
  void runOnOperation() override {}
};
} // namespace
