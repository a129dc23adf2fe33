//===- ActivationMemory.cpp - transformer activations per GPU -------------===//

#include "examples/memory_table/ActivationMemory.h"

namespace zerosbp::examples::memory {

static double sbh(const TransformerShape &shape) {
  return static_cast<double>(shape.seq) * shape.microBatch * shape.hidden;
}

double layerActivationBytes(const TransformerShape &shape) {
  return sbh(shape) * (34.0 + 5.0 * shape.heads * shape.seq /
                                  static_cast<double>(shape.hidden));
}

double activationBytes(const TransformerShape &shape) {
  return shape.layers * layerActivationBytes(shape);
}

double checkpointedActivationBytes(const TransformerShape &shape) {
  return 2.0 * sbh(shape) * shape.layers + layerActivationBytes(shape);
}

} // namespace zerosbp::examples::memory
