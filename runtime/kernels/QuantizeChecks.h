//===- QuantizeChecks.h - the checks of nn.quantize / nn.dequantize -*- C++
//-*-===//
//
// What the CPU and CUDA kernels of block quantization share besides the
// arithmetic (BlockQuantize.h): the attributes, the operands' and results'
// types and sizes.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_QUANTIZECHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_QUANTIZECHECKS_H

#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

struct QuantizeLayout {
  /// Elements quantized, per block and blocks (the last may be shorter).
  int64_t count = 0;
  int64_t blockSize = 1;
  int64_t blocks = 0;
  /// Bits per code (8 or 4) and bytes of codes: ceil(count * bits / 8).
  int bits = 8;
  int64_t codeBytes = 0;
};

/// nn.quantize: operand x (a float tensor, any shape); results the codes
/// (i8, [codeBytes]) and the scales (f32, [blocks]); attributes
/// `block_size` >= 1 (even at 4 bits, so that no byte holds two blocks'
/// codes) and `bits`, 8 or 4.
QuantizeLayout checkQuantize(std::string_view op, const AttrMap &attrs,
                             const Tensors &operands, const Tensors &results);
/// nn.dequantize: operands the codes and scales as nn.quantize makes them
/// for the result's element count; result a float tensor; the same
/// attributes. Neither op's results may overlap its operands.
QuantizeLayout checkDequantize(std::string_view op, const AttrMap &attrs,
                               const Tensors &operands, const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_QUANTIZECHECKS_H
