//===- PlanAttrs.h - reading the memory plan off the IR ---------*- C++ -*-===//
//
// zero-memory-plan writes its result as attributes; zero-verify-memory-plan
// and zero-export-plan read them back through these helpers.
//
//   op:   zero.slots   = array<i64: buffer, offset, ...>  one pair per result
//                        (-1, -1 for results that are not tensors)
//   func: zero.buffers = [#sbp.buffer<offset = O, bytes = B,
//                                     live = [first, last], role = R>, ...]
//                        (`memory = host` or `nvme` when not device, then
//                        `stage = k` under pipeline parallelism)
//         zero.memory  = {arena, lower_bound, model_states,
//                         peak = {role: bytes},
//                         host = {arena, lower_bound, peak},
//                         nvme = {arena, lower_bound, peak}}
//                        (arena, lower_bound and peak: device memory;
//                        host and nvme only when some buffer is there)
//   sbp.collective_start: zero.staging = buffer (a bucket copied through a
//                        staging buffer)
//   nn.assign: zero.copy (the value is copied into the variable; without it
//              the value already lives there)
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PASSES_MEMORY_PLANATTRS_H
#define ZEROSBP_PASSES_MEMORY_PLANATTRS_H

#include "dialects/sbp/IR/SbpDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <vector>

namespace zerosbp {

inline constexpr llvm::StringLiteral kSlotsAttr = "zero.slots";
inline constexpr llvm::StringLiteral kBuffersAttr = "zero.buffers";
inline constexpr llvm::StringLiteral kMemoryAttr = "zero.memory";
inline constexpr llvm::StringLiteral kStagingAttr = "zero.staging";
inline constexpr llvm::StringLiteral kCopyAttr = "zero.copy";
/// func: [buffer, copies, bytes between copies] for each buffer of the
/// micro-batch loop held once per micro-batch in flight; its zero.buffers
/// entry spans every copy.
inline constexpr llvm::StringLiteral kMicroSlotsAttr = "zero.micro_slots";

/// The most bytes a plan addresses; #sbp.buffer's verifier checks the same.
using mlir::sbp::kMaxPlanBytes;

/// The roles the memory plan reports bytes for, in BufferRole order.
inline auto planRoles() {
  return llvm::map_range(
      llvm::seq_inclusive<uint32_t>(0, mlir::sbp::getMaxEnumValForBufferRole()),
      [](uint32_t value) { return static_cast<mlir::sbp::BufferRole>(value); });
}

/// The memory kinds a plan has arenas in, in arena order.
inline constexpr const char *kMemoryKinds[] = {"device", "host", "nvme"};

struct PlannedBuffer {
  int64_t offset = 0;
  int64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
  mlir::sbp::BufferRole role = mlir::sbp::BufferRole::activation;
  /// Which arena the offset is in.
  mlir::sbp::MemoryKind memory = mlir::sbp::MemoryKind::device;
  /// The pipeline stage whose ranks hold it; -1: every rank.
  int64_t stage = -1;
};

/// Where a value lives: a buffer and a byte offset in it.
struct Slot {
  int64_t buffer = -1;
  int64_t offset = 0;
  bool operator==(const Slot &other) const {
    return buffer == other.buffer && offset == other.offset;
  }
};

/// The buffers of a planned function, or an error on `func` when it has no
/// (or a malformed) plan.
mlir::FailureOr<std::vector<PlannedBuffer>>
readPlannedBuffers(mlir::func::FuncOp func);

/// The slot of a tensor value defined by an op of a planned function.
std::optional<Slot> readSlot(mlir::Value value);

/// True when `op` of a planned function does work at run time: not a
/// variable, input, step counter or return, not a view whose result shares
/// its operand's buffer, not an assignment computed in place.
bool hasInstruction(mlir::Operation &op);

} // namespace zerosbp

#endif // ZEROSBP_PASSES_MEMORY_PLANATTRS_H
