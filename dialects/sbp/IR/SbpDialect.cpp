//===- SbpDialect.cpp - sbp dialect registration --------------------------===//

#include "dialects/sbp/IR/SbpDialect.h"

#include "dialects/sbp/IR/SbpOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::sbp;

#include "dialects/sbp/IR/SbpDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/sbp/IR/SbpTypes.cpp.inc"

namespace {
/// Prints placements once at the top of a dump as `#place`, `#place1`, ...
/// so that the tensor types that repeat them stay readable.
struct SbpOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (auto placement = dyn_cast<PlacementAttr>(attr)) {
      os << (placement.getDevice() == DeviceKind::cuda ? "gpus" : "cpus")
         << placement.getNumRanks();
      if (placement.getMemory() != MemoryKind::device)
        os << "_" << stringifyMemoryKind(placement.getMemory());
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void SbpDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "dialects/sbp/IR/SbpOps.cpp.inc"
      >();
  addInterfaces<SbpOpAsmInterface>();
}

void SbpDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/sbp/IR/SbpTypes.cpp.inc"
      >();
}

GlobalTensorAttr mlir::sbp::getGlobalEncoding(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return {};
  return dyn_cast_or_null<GlobalTensorAttr>(tensor.getEncoding());
}

RankedTensorType mlir::sbp::withEncoding(RankedTensorType type,
                                         Attribute encoding) {
  return RankedTensorType::get(type.getShape(), type.getElementType(),
                               encoding);
}

int64_t mlir::sbp::splitSize(int64_t size, int64_t parts, int64_t index) {
  return size / parts + (index < size % parts ? 1 : 0);
}

int64_t mlir::sbp::splitOffset(int64_t size, int64_t parts, int64_t index) {
  int64_t base = size / parts, extra = size % parts;
  return index * base + std::min(index, extra);
}
