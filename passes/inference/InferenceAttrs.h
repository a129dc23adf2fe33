//===- InferenceAttrs.h - the mark of an inference graph --------*- C++ -*-===//

#ifndef ZEROSBP_PASSES_INFERENCE_INFERENCEATTRS_H
#define ZEROSBP_PASSES_INFERENCE_INFERENCEATTRS_H

#include "llvm/ADT/StringRef.h"

namespace zerosbp {

/// A unit attribute on a function that zero-inference made an inference
/// graph; zero-export-plan then writes `"mode": "eval"`.
inline constexpr llvm::StringLiteral kInferenceAttr = "zero.inference";

} // namespace zerosbp

#endif // ZEROSBP_PASSES_INFERENCE_INFERENCEATTRS_H
