#include "passes/Passes.h"
namespace zerosbp {
#define GEN_PASS_DEF_ZEROMEMORYPLAN
#include "passes/Passes.h.inc"
} // namespace zerosbp
namespace {
struct ZeroMemoryPlanPass : zerosbp::impl::ZeroMemoryPlanBase<ZeroMemoryPlanPass> {
  using ZeroMemoryPlanBase::ZeroMemoryPlanBase;
  void runOnOperation() override {}
};
} // namespace
