//===- ResolveConfig.h - one config from the front doors' layers -*- C++
//-*-===//
//
// Every front door resolves its config here: zero-compile, zero-opt's
// --zero-pipeline, the Python graph's config methods, and the readers of a
// DeepSpeed JSON, enable_zero and pipeline options on their own.
//
// The precedence rule (docs/compiler.md#precedence): layers apply in order,
// each field taking the value of the last layer that gives it, except that
// a Setting may not contradict a field the Config layer states (the error
// names both). A layer that gives the optimizer drops the hyperparameters
// earlier layers gave with theirs, and one that leaves fp16 drops its loss
// scaling. Then, once: overlap_comm's default for the stage, a given field
// that does not apply is refused, the batch sizes resolve as DeepSpeed's
// do, and every range and rule is verified.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_RESOLVECONFIG_H
#define ZEROSBP_COMPILER_CONFIG_RESOLVECONFIG_H

#include "compiler/config/ConfigLayer.h"

#include "llvm/ADT/ArrayRef.h"

namespace zerosbp {

/// The config `layers` give, in order. Messages about a field are spelled
/// as the layer that gave it spells them, prefixed by its source; a
/// Setting's fields are spelled by their pipeline keys, as the layer's
/// user reads them in `str()`, except in a contradiction.
llvm::Expected<ZeroConfig> resolveConfig(llvm::ArrayRef<ConfigLayer> layers);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_RESOLVECONFIG_H
