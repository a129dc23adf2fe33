//===- SbpAttrs.cpp - placement, SBP and global tensor attributes ---------===//

#include "dialects/sbp/IR/SbpDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::sbp;

#include "dialects/sbp/IR/SbpEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/sbp/IR/SbpAttrs.cpp.inc"

void SbpDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/sbp/IR/SbpAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// PlacementAttr
//===----------------------------------------------------------------------===//

static ParseResult parseIntList(AsmParser &parser,
                                SmallVectorImpl<int64_t> &values) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                        [&]() -> ParseResult {
                                          int64_t value;
                                          if (parser.parseInteger(value))
                                            return failure();
                                          values.push_back(value);
                                          return success();
                                        });
}

Attribute PlacementAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef deviceName;
  SmallVector<int64_t> ranks, hierarchy;
  if (parser.parseLess() || parser.parseKeyword(&deviceName))
    return {};
  std::optional<DeviceKind> device = symbolizeDeviceKind(deviceName);
  if (!device) {
    parser.emitError(loc, "unknown device kind '")
        << deviceName << "' (expected 'cpu' or 'cuda')";
    return {};
  }
  if (parser.parseComma() || parseIntList(parser, ranks))
    return {};
  MemoryKind memory = MemoryKind::device;
  bool seenHierarchy = false, seenMemory = false;
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "hierarchy" && !seenHierarchy && !seenMemory) {
      seenHierarchy = true;
      if (parseIntList(parser, hierarchy))
        return {};
      continue;
    }
    if (key == "memory" && !seenMemory) {
      seenMemory = true;
      StringRef kindName;
      if (parser.parseKeyword(&kindName))
        return {};
      std::optional<MemoryKind> kind = symbolizeMemoryKind(kindName);
      if (!kind) {
        parser.emitError(keyLoc, "unknown memory kind '")
            << kindName << "' (expected 'device', 'host' or 'nvme')";
        return {};
      }
      memory = *kind;
      continue;
    }
    parser.emitError(keyLoc, "expected 'hierarchy = [...]' then 'memory = "
                             "<kind>' after the ranks, got '")
        << key << "'";
    return {};
  }
  if (parser.parseGreater())
    return {};
  return PlacementAttr::getChecked([&]() { return parser.emitError(loc); },
                                   parser.getContext(), *device, ranks,
                                   hierarchy, memory);
}

void PlacementAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyDeviceKind(getDevice()) << ", [";
  llvm::interleaveComma(getRanks(), printer);
  printer << "]";
  if (!getHierarchy().empty()) {
    printer << ", hierarchy = [";
    llvm::interleaveComma(getHierarchy(), printer);
    printer << "]";
  }
  if (getMemory() != MemoryKind::device)
    printer << ", memory = " << stringifyMemoryKind(getMemory());
  printer << ">";
}

PlacementAttr PlacementAttr::withMemory(MemoryKind memory) const {
  // Most placements are in device memory already: no new attribute.
  if (memory == getMemory())
    return *this;
  return PlacementAttr::get(getContext(), getDevice(), getRanks(),
                            getHierarchy(), memory);
}

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError, DeviceKind,
                      ArrayRef<int64_t> ranks, ArrayRef<int64_t> hierarchy,
                      MemoryKind) {
  if (ranks.empty())
    return emitError() << "placement has no ranks";
  llvm::SmallSet<int64_t, 16> seen;
  for (int64_t rank : ranks) {
    if (rank < 0)
      return emitError() << "placement rank " << rank << " is negative";
    if (!seen.insert(rank).second)
      return emitError() << "placement lists rank " << rank << " twice";
  }
  if (hierarchy.empty())
    return success();
  if (hierarchy.size() > 2)
    return emitError() << "placement hierarchy has " << hierarchy.size()
                       << " axes; at most 2 are supported";
  // Every axis size divides the rank count, so a size above it is an error
  // by itself; checking that first also keeps the product from overflowing
  // (sizes like 274177 x 67280421310721 would wrap around to 1).
  int64_t numRanks = ranks.size();
  int64_t product = 1;
  for (int64_t size : hierarchy) {
    if (size < 1)
      return emitError() << "placement hierarchy axis size " << size
                         << " is not positive";
    if (size > numRanks)
      return emitError() << "placement hierarchy axis size " << size
                         << " exceeds the " << numRanks << " ranks listed";
    product *= size;
  }
  if (product != static_cast<int64_t>(ranks.size()))
    return emitError() << "placement hierarchy holds " << product
                       << " ranks but the placement lists " << ranks.size();
  return success();
}

SmallVector<int64_t, 2> PlacementAttr::getHierarchyShape() const {
  if (getHierarchy().empty())
    return {getNumRanks()};
  return SmallVector<int64_t, 2>(getHierarchy());
}

//===----------------------------------------------------------------------===//
// SbpAttr
//===----------------------------------------------------------------------===//

SbpAttr SbpAttr::getBroadcast(MLIRContext *ctx) {
  return get(ctx, SbpKind::broadcast, -1, ReduceKind::sum);
}

SbpAttr SbpAttr::getSplit(MLIRContext *ctx, int64_t axis) {
  return get(ctx, SbpKind::split, axis, ReduceKind::sum);
}

SbpAttr SbpAttr::getPartial(MLIRContext *ctx, ReduceKind reduce) {
  return get(ctx, SbpKind::partial, -1, reduce);
}

FailureOr<SbpAttr> SbpAttr::parseBare(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  MLIRContext *ctx = parser.getContext();
  if (keyword == "B")
    return getBroadcast(ctx);
  if (keyword == "S") {
    int64_t axis;
    SMLoc axisLoc;
    if (parser.parseLParen() ||
        (axisLoc = parser.getCurrentLocation(), parser.parseInteger(axis)) ||
        parser.parseRParen())
      return failure();
    if (axis < 0)
      return parser.emitError(axisLoc, "split axis ") << axis << " is negative";
    return getSplit(ctx, axis);
  }
  if (keyword == "P") {
    StringRef reduceName;
    SMLoc reduceLoc;
    if (parser.parseLParen() ||
        (reduceLoc = parser.getCurrentLocation(),
         parser.parseKeyword(&reduceName)) ||
        parser.parseRParen())
      return failure();
    std::optional<ReduceKind> reduce = symbolizeReduceKind(reduceName);
    if (!reduce)
      return parser.emitError(reduceLoc, "unknown partial reduction '")
             << reduceName << "' (expected 'sum' or 'max')";
    return getPartial(ctx, *reduce);
  }
  return parser.emitError(loc, "expected SBP 'B', 'S(axis)' or 'P(sum|max)', "
                               "got '")
         << keyword << "'";
}

void SbpAttr::printBare(raw_ostream &os) const {
  switch (getKind()) {
  case SbpKind::broadcast:
    os << "B";
    return;
  case SbpKind::split:
    os << "S(" << getAxis() << ")";
    return;
  case SbpKind::partial:
    os << "P(" << stringifyReduceKind(getReduce()) << ")";
    return;
  }
}

std::string SbpAttr::str() const {
  std::string result;
  llvm::raw_string_ostream os(result);
  printBare(os);
  return result;
}

Attribute SbpAttr::parse(AsmParser &parser, Type) {
  FailureOr<SbpAttr> sbp;
  if (parser.parseLess() || failed(sbp = parseBare(parser)) ||
      parser.parseGreater())
    return {};
  return *sbp;
}

void SbpAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printBare(printer.getStream());
  printer << ">";
}

LogicalResult SbpAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              SbpKind kind, int64_t axis, ReduceKind reduce) {
  if (kind == SbpKind::split && axis < 0)
    return emitError() << "split axis " << axis << " is negative";
  if (kind != SbpKind::split && axis != -1)
    return emitError() << "only a split SBP has an axis";
  if (kind != SbpKind::partial && reduce != ReduceKind::sum)
    return emitError() << "only a partial SBP has a reduction";
  return success();
}

//===----------------------------------------------------------------------===//
// GlobalTensorAttr
//===----------------------------------------------------------------------===//

Attribute GlobalTensorAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<SbpAttr> sbp;
  PlacementAttr placement;
  Role role = Role::activation;
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       FailureOr<SbpAttr> axis =
                                           SbpAttr::parseBare(parser);
                                       if (failed(axis))
                                         return failure();
                                       sbp.push_back(*axis);
                                       return success();
                                     }) ||
      parser.parseComma() || parser.parseAttribute(placement))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    SMLoc roleLoc = parser.getCurrentLocation();
    StringRef roleName;
    if (parser.parseKeyword(&roleName))
      return {};
    std::optional<Role> parsed = symbolizeRole(roleName);
    if (!parsed) {
      parser.emitError(roleLoc, "unknown role '")
          << roleName
          << "' (expected param, grad, master, opt_state, activation or "
             "input)";
      return {};
    }
    role = *parsed;
  }
  if (parser.parseGreater())
    return {};
  return GlobalTensorAttr::getChecked([&]() { return parser.emitError(loc); },
                                      parser.getContext(), sbp, placement,
                                      role);
}

void GlobalTensorAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getSbp(), printer, [&](SbpAttr sbp) {
    sbp.printBare(printer.getStream());
  });
  printer << "], ";
  printer.printAttribute(getPlacement());
  if (getRole() != Role::activation)
    printer << ", " << stringifyRole(getRole());
  printer << ">";
}

LogicalResult
GlobalTensorAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         ArrayRef<SbpAttr> sbp, PlacementAttr placement, Role) {
  if (!placement)
    return emitError() << "global tensor has no placement";
  int64_t axes = placement.getNumHierarchyAxes();
  if (static_cast<int64_t>(sbp.size()) != axes)
    return emitError() << "SBP list has " << sbp.size()
                       << (sbp.size() == 1 ? " entry" : " entries")
                       << " but the placement hierarchy has " << axes
                       << (axes == 1 ? " axis" : " axes");
  return success();
}

LogicalResult GlobalTensorAttr::verifyEncoding(
    ArrayRef<int64_t> shape, Type elementType,
    function_ref<InFlightDiagnostic()> emitError) const {
  int64_t rank = shape.size();
  for (auto [index, sbp] : llvm::enumerate(getSbp())) {
    if (sbp.isSplit() && sbp.getAxis() >= rank)
      return emitError() << "split axis " << sbp.getAxis()
                         << " is out of range for a tensor of rank " << rank
                         << " (hierarchy axis " << index << ")";
  }
  if (ShapedType::isDynamicShape(shape))
    return emitError() << "global tensors must have static shapes";
  return success();
}

GlobalTensorAttr GlobalTensorAttr::withSbp(ArrayRef<SbpAttr> sbp) const {
  return get(getContext(), sbp, getPlacement(), getRole());
}

GlobalTensorAttr GlobalTensorAttr::withRole(Role role) const {
  return get(getContext(), getSbp(), getPlacement(), role);
}

//===----------------------------------------------------------------------===//
// BufferAttr
//===----------------------------------------------------------------------===//

LogicalResult BufferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t offset, int64_t bytes, int64_t first,
                                 int64_t last, BufferRole, MemoryKind,
                                 int64_t stage) {
  if (stage < -1)
    return emitError() << "buffer stage " << stage << " is negative";
  if (offset < 0)
    return emitError() << "buffer offset " << offset << " is negative";
  if (bytes < 0)
    return emitError() << "buffer size " << bytes << " is negative";
  if (first < 0 || last < 0)
    return emitError() << "buffer live range [" << first << ", " << last
                       << "] has a negative op index";
  if (first > last)
    return emitError() << "buffer live range [" << first << ", " << last
                       << "] ends before it starts";
  // Both are non-negative, so the subtraction cannot wrap where a sum could.
  if (bytes > kMaxPlanBytes || offset > kMaxPlanBytes - bytes)
    return emitError() << "buffer of " << bytes << " bytes at offset " << offset
                       << " ends past 2^53 (" << kMaxPlanBytes
                       << "), the most a plan addresses";
  return success();
}
