//===- QuantizeWeights.cpp - zero-quantize-weights (ZeRO++ qwZ) -----------===//
//
// The gather of a stage-3 parameter moves block-quantized codes instead of
// the parameter: each rank quantizes its shard, the codes and scales are
// gathered, and every rank dequantizes the whole tensor
// (docs/design.md#quantized-weight-gathers).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/sbp/IR/SbpDialect.h"
#include "dialects/sbp/IR/SbpOps.h"
#include "passes/common/SbpUtils.h"
#include "runtime/kernels/BlockQuantize.h"

namespace zerosbp {
#define GEN_PASS_DEF_ZEROQUANTIZEWEIGHTS
#include "passes/Passes.h.inc"
} // namespace zerosbp

using namespace mlir;
using namespace mlir::sbp;
using namespace zerosbp;

namespace {

bool allSplitOnZero(ArrayRef<SbpAttr> sbp) {
  return llvm::all_of(sbp, [](SbpAttr entry) {
    return entry.isSplit() && entry.getAxis() == 0;
  });
}

bool allBroadcast(ArrayRef<SbpAttr> sbp) {
  return llvm::all_of(sbp, [](SbpAttr entry) { return entry.isBroadcast(); });
}

/// Whether `cast` gathers a stage-3 parameter shard for compute: a 1-D
/// float `param` variable from S(0) on every axis to B. The gather of an
/// updated shard (a parameter kept whole, updated on its shard at stages
/// 1-2 or below the persistence threshold) is the parameter itself, and
/// stays exact.
bool isParameterGather(CastOp cast) {
  if (!cast.getInput().getDefiningOp<nn::VariableOp>())
    return false;
  auto from = cast.getInput().getType();
  auto to = cast.getResult().getType();
  GlobalTensorAttr source = getGlobalEncoding(from);
  GlobalTensorAttr target = getGlobalEncoding(to);
  return source && target && from.getRank() == 1 &&
         isa<FloatType>(from.getElementType()) &&
         source.getRole() == Role::param && allSplitOnZero(source.getSbp()) &&
         allBroadcast(target.getSbp());
}

class WeightQuantizer {
public:
  WeightQuantizer(OpBuilder &builder, int64_t blockSize, int64_t bits)
      : builder(builder), blockSize(blockSize), bits(bits) {}

  /// Replaces `cast` by quantize, the gathers of codes and scales, and
  /// dequantize.
  void rewrite(CastOp cast);

private:
  /// The quantization of `shard`, its parts of `part` elements padded to
  /// `paddedPart`: made at its first gather, so that a backward's gather of
  /// the same shard gathers the same codes, which zero-schedule may then
  /// take from the forward's.
  nn::QuantizeOp quantizationOf(Location loc, Value shard, int64_t ranks,
                                int64_t part, int64_t paddedPart);

  /// `value` (its encoding kept, with `sbp`) as a tensor of `shape` and
  /// `element` type.
  RankedTensorType typeLike(Value value, ArrayRef<int64_t> shape, Type element,
                            ArrayRef<SbpAttr> sbp) const {
    GlobalTensorAttr encoding = getGlobalEncoding(value.getType());
    return RankedTensorType::get(shape, element, encoding.withSbp(sbp));
  }
  Value reshape(Location loc, Value value, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(value.getType());
    return nn::ReshapeOp::create(
        builder, loc,
        RankedTensorType::get(shape, type.getElementType(), type.getEncoding()),
        value);
  }

  OpBuilder &builder;
  int64_t blockSize, bits;
  llvm::DenseMap<Value, nn::QuantizeOp> quantized;
};

nn::QuantizeOp WeightQuantizer::quantizationOf(Location loc, Value shard,
                                               int64_t ranks, int64_t part,
                                               int64_t paddedPart) {
  nn::QuantizeOp &quantize = quantized[shard];
  if (quantize)
    return quantize;
  // Where the shard is defined, so that zero-bucketing may fuse its gathers
  // with the others as it fuses unquantized ones.
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(shard);
  auto type = cast<RankedTensorType>(shard.getType());
  ArrayRef<SbpAttr> split = getGlobalEncoding(type).getSbp();
  // Each rank's part, padded to whole blocks as a row of (ranks, part).
  Value input = shard;
  if (paddedPart != part) {
    Value rows = reshape(loc, shard, {ranks, part});
    input = nn::PadOp::create(
        builder, loc,
        typeLike(rows, {ranks, paddedPart}, type.getElementType(), split), rows,
        builder.getDenseI64ArrayAttr({0, 0}),
        builder.getDenseI64ArrayAttr({0, paddedPart - part}));
    input = reshape(loc, input, {ranks * paddedPart});
  }
  int64_t count = ranks * paddedPart;
  quantize = nn::QuantizeOp::create(
      builder, loc,
      typeLike(input, {runtime::quant::codeBytes(count, bits)},
               builder.getI8Type(), split),
      typeLike(input, {runtime::quant::blockCount(count, blockSize)},
               builder.getF32Type(), split),
      input, blockSize, bits);
  return quantize;
}

void WeightQuantizer::rewrite(CastOp gather) {
  Location loc = gather.getLoc();
  Value shard = gather.getInput();
  auto type = cast<RankedTensorType>(shard.getType());
  SmallVector<SbpAttr> whole =
      to_vector(getGlobalEncoding(gather.getResult().getType()).getSbp());
  int64_t ranks = getGlobalEncoding(type).getPlacement().getNumRanks();
  int64_t length = type.getDimSize(0);
  // zero-stage pads a shard to a multiple of the ranks.
  int64_t part = length / ranks;
  int64_t paddedPart = runtime::quant::blockCount(part, blockSize) * blockSize;
  int64_t count = ranks * paddedPart;
  nn::QuantizeOp quantize = quantizationOf(loc, shard, ranks, part, paddedPart);

  builder.setInsertionPoint(gather);
  Value codes = castTo(builder, loc, quantize.getCodes(), whole);
  Value scales = castTo(builder, loc, quantize.getScales(), whole);
  Value result = nn::DequantizeOp::create(
      builder, loc, typeLike(shard, {count}, type.getElementType(), whole),
      codes, scales, blockSize, bits, ArrayRef<int64_t>{count},
      type.getElementType());
  if (paddedPart != part) {
    Value rows = reshape(loc, result, {ranks, paddedPart});
    rows = nn::SliceOp::create(
        builder, loc,
        typeLike(rows, {ranks, part}, type.getElementType(), whole), rows,
        builder.getDenseI64ArrayAttr({0, 0}),
        builder.getDenseI64ArrayAttr({ranks, part}), /*strides=*/nullptr);
    result = reshape(loc, rows, {length});
  }
  gather.getResult().replaceAllUsesWith(result);
  gather.erase();
}

struct ZeroQuantizeWeightsPass
    : public zerosbp::impl::ZeroQuantizeWeightsBase<ZeroQuantizeWeightsPass> {
  using ZeroQuantizeWeightsBase::ZeroQuantizeWeightsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (std::string error = runtime::quant::layoutError(blockSize, bits);
        !error.empty()) {
      func.emitError("zero-quantize-weights: ") << error;
      return signalPassFailure();
    }
    SmallVector<CastOp> gathers;
    func.walk([&](CastOp cast) {
      if (isParameterGather(cast))
        gathers.push_back(cast);
    });
    OpBuilder builder(func.getContext());
    WeightQuantizer quantizer(builder, blockSize, bits);
    for (CastOp gather : gathers)
      quantizer.rewrite(gather);
  }
};

} // namespace
