//===- QuantizeChecks.cpp - the checks of nn.quantize / nn.dequantize -----===//

#include "runtime/kernels/QuantizeChecks.h"

#include "runtime/kernels/BlockQuantize.h"

#include <string>

namespace zerosbp::runtime::checks {

namespace {
QuantizeLayout layoutFor(std::string_view op, const AttrMap &attrs,
                         int64_t count) {
  QuantizeLayout layout;
  layout.count = count;
  layout.blockSize = attrs.getInt("block_size");
  int64_t bits = attrs.getInt("bits", 8);
  if (std::string error = quant::layoutError(layout.blockSize, bits);
      !error.empty())
    fail(op, error);
  layout.bits = static_cast<int>(bits);
  layout.blocks = quant::blockCount(count, layout.blockSize);
  layout.codeBytes = quant::codeBytes(count, bits);
  return layout;
}

void expectCodes(std::string_view op, const QuantizeLayout &layout,
                 const TensorRef &codes, const TensorRef &scales) {
  if (codes.dtype != DType::I8)
    fail(op, std::string("codes have element type ") + dtypeName(codes.dtype) +
                 ", expected i8");
  expectNumel(op, codes, layout.codeBytes, "codes");
  if (scales.dtype != DType::F32)
    fail(op, std::string("scales have element type ") +
                 dtypeName(scales.dtype) + ", expected f32");
  expectNumel(op, scales, layout.blocks, "scales");
}

/// The kernels read a block and write another's bytes: nothing in place.
void expectApart(std::string_view op, const Tensors &operands,
                 const Tensors &results) {
  for (const TensorRef &result : results)
    if (overlapsOtherThanReplaced(result, operands))
      fail(op, "a result overlaps an operand");
}
} // namespace

QuantizeLayout checkQuantize(std::string_view op, const AttrMap &attrs,
                             const Tensors &operands, const Tensors &results) {
  expectArity(op, operands, results, 1, 2);
  expectFloat(op, operands[0], "x");
  QuantizeLayout layout = layoutFor(op, attrs, operands[0].numel());
  expectCodes(op, layout, results[0], results[1]);
  expectApart(op, operands, results);
  return layout;
}

QuantizeLayout checkDequantize(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands,
                               const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  expectFloat(op, results[0], "result");
  QuantizeLayout layout = layoutFor(op, attrs, results[0].numel());
  expectCodes(op, layout, operands[0], operands[1]);
  expectApart(op, operands, results);
  return layout;
}

} // namespace zerosbp::runtime::checks
