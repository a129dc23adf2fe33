//===- DropoutChecks.cpp - the checks and layout of nn.dropout ------------===//

#include "runtime/kernels/DropoutChecks.h"

#include <cmath>
#include <cstdio>

namespace zerosbp::runtime::checks {

namespace {
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}
} // namespace

DropoutLayout checkDropout(std::string_view op, const AttrMap &attrs,
                           const Tensors &operands, const Tensors &results) {
  expectArity(op, operands, results, 2, 1);
  const TensorRef &input = operands[0], &step = operands[1];
  const TensorRef &result = results[0];
  expectFloat(op, input, "input");
  expectFloat(op, result, "result");
  expectShape(op, result, input.shape, "result");
  if (step.numel() != 1 ||
      (step.dtype != DType::I64 && step.dtype != DType::I32))
    fail(op, "step must be a 0-D i64");

  double p = attrs.getFloat("p");
  if (!(p >= 0 && p < 1))
    fail(op, "p must lie in [0, 1), got " + number(p));
  int64_t stream = attrs.getInt("stream");
  if (stream < 0 || stream > 0xffffffffLL)
    fail(op, "stream must lie in [0, 2^32), got " + std::to_string(stream));
  int64_t microBatch = attrs.getInt("micro_batch", 0);
  if (microBatch < 0 || microBatch > 0xffff)
    fail(op, "micro_batch must lie in [0, 2^16), got " +
                 std::to_string(microBatch));
  auto seed = static_cast<uint64_t>(attrs.getInt("seed"));

  DropoutLayout layout;
  layout.stream.key = {
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  layout.stream.microBatch = static_cast<uint32_t>(microBatch);
  layout.stream.stream = static_cast<uint32_t>(stream);
  // 2^24 p is exact, so this is the first kept value of x >> 8.
  layout.stream.threshold = static_cast<uint32_t>(std::ceil(std::ldexp(p, 24)));
  layout.scale = static_cast<float>(1.0 / (1.0 - p));

  auto [global, offsets] = checkBlockPlace(op, attrs, input.shape);
  // Fewer than 2^48 global elements: the counter holds 48 index bits.
  double globalCount = 1;
  for (int64_t size : global)
    globalCount *= static_cast<double>(size);
  if (globalCount >= std::ldexp(1.0, 48))
    fail(op, "the global shape " + shapeString(global) +
                 " must hold fewer than 2^48 elements");
  layout.globalStrides = contiguousStrides(global);
  layout.base = offsetOf(offsets, layout.globalStrides);
  return layout;
}

} // namespace zerosbp::runtime::checks
