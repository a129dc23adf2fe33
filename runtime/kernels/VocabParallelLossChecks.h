//===- VocabParallelLossChecks.h - checks of the split loss -----*- C++ -*-===//
//
// The softmax cross-entropy of logits split by class over a model axis, as
// four local ops with collectives between them (docs/plan-format.md,
// "nn.cross_entropy_max"): the rows' max, then with the reduced max the
// rows' sums of exp and the label's logit where the rank holds it, then the
// loss, and the gradient of the rank's classes. The rank's logits hold
// global classes [begin, begin + classes): `shard_offsets.back()` of the
// logits' block, as for a table split by vocabulary (EmbeddingChecks.h).
// ClassBlock::localClass is that rule, shared by the CPU and CUDA kernels;
// the labels' values are checked by each backend where they live.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_VOCABPARALLELLOSSCHECKS_H
#define ZEROSBP_RUNTIME_KERNELS_VOCABPARALLELLOSSCHECKS_H

#include "runtime/kernels/HostDevice.h"
#include "runtime/kernels/KernelChecks.h"

namespace zerosbp::runtime::checks {

/// The rank's logits as rows x classes, where its classes lie among the
/// whole logits' `globalClasses`, and what the summed row losses are
/// divided by. Plain data: the CUDA kernels take it as a launch argument.
struct ClassBlock {
  int64_t rows;
  int64_t classes;
  /// Every label must lie in [0, globalClasses).
  int64_t globalClasses;
  int64_t begin;
  double count;

  /// The local class of `label`, or -1 where another rank holds it (or the
  /// label is out of range).
  ZEROSBP_HOST_DEVICE int64_t localClass(int64_t label) const {
    int64_t j = label - begin;
    return j >= 0 && j < classes ? j : -1;
  }
};

/// nn.cross_entropy_max: operand (logits), float of rank >= 1; result
/// `max`, f32 of the logits' leading shape.
ClassBlock checkCrossEntropyMax(std::string_view op, const AttrMap &attrs,
                                const Tensors &operands,
                                const Tensors &results);

/// nn.cross_entropy_sums: operands (logits, max, labels); results (sumexp,
/// label_logit) of the leading shape, sumexp f32 or f64, label_logit f32;
/// `global_shape` and `shard_offsets` place the logits' classes.
ClassBlock checkCrossEntropySums(std::string_view op, const AttrMap &attrs,
                                 const Tensors &operands,
                                 const Tensors &results);

/// nn.cross_entropy_loss: operands (max, sumexp, label_logit) of one shape,
/// max and label_logit f32, sumexp f32 or f64; one float result of one
/// element. Only `rows` and `count` are set.
ClassBlock checkCrossEntropyLoss(std::string_view op, const AttrMap &attrs,
                                 const Tensors &operands,
                                 const Tensors &results);

/// nn.cross_entropy_split_grad: operands (grad_loss, logits, max, sumexp,
/// labels), a float result of the logits' shape; the attributes of
/// nn.cross_entropy_sums and `count`.
ClassBlock checkCrossEntropySplitGrad(std::string_view op, const AttrMap &attrs,
                                      const Tensors &operands,
                                      const Tensors &results);

} // namespace zerosbp::runtime::checks

#endif // ZEROSBP_RUNTIME_KERNELS_VOCABPARALLELLOSSCHECKS_H
