//===- PipelineOptions.h - ZeroConfig from key=value options ----*- C++ -*-===//
//
// The option string of `zero-opt --zero-pipeline='stage=2 world=4
// optimizer=adamw lr=1e-3 precision=bf16 shard-min-size=0'`: pairs
// separated by white space, one key per ZeroConfig field, spelled as
// ZeroConfig::str() prints them (DeepSpeed's names in kebab case, plus
// world, shard-min-size, shard-restore-level, optimizer and precision).
// ZeroConfig::str() reads back to an equal config.
//
// Keys not given keep ZeroConfig's defaults (world 1, stage 0, Adam, fp32,
// DeepSpeed's knobs); overlap-comm defaults to true for stage 3 only, and
// batch sizes resolve as in a DeepSpeed config. Integers may be written
// 5e8; booleans are true or false; optimizer is sgd, adam or adamw and
// precision fp32, fp16 or bf16, in any case. An unknown or repeated key, a
// key without a value, beta1 / beta2 / eps with optimizer=sgd, and loss
// scaling without precision=fp16 are errors.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_CONFIG_PIPELINEOPTIONS_H
#define ZEROSBP_COMPILER_CONFIG_PIPELINEOPTIONS_H

#include "compiler/config/ConfigLayer.h"
#include "compiler/config/ZeroConfig.h"

namespace zerosbp {

/// The pairs of `options` as a layer of `kind` whose messages `source`
/// prefixes; an unknown or repeated key, a key without a value and a
/// value of the wrong type are errors here, the rest resolveConfig's.
llvm::Expected<ConfigLayer> readPipelineOptions(llvm::StringRef options,
                                                LayerKind kind,
                                                llvm::StringRef source);

/// The config of `options` alone. Errors are one line and name the key, e.g.
/// `stage: expected an integer in [0, 3], got 4` or
/// `unknown key 'stag'; did you mean 'stage'?`.
llvm::Expected<ZeroConfig> parsePipelineOptions(llvm::StringRef options);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_PIPELINEOPTIONS_H
