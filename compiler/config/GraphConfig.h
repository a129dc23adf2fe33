//===- GraphConfig.h - a Python graph's ZeroConfig --------------*- C++ -*-===//

#ifndef ZEROSBP_COMPILER_CONFIG_GRAPHCONFIG_H
#define ZEROSBP_COMPILER_CONFIG_GRAPHCONFIG_H

#include "compiler/config/GraphConfigSpec.h"
#include "compiler/config/ZeroConfig.h"

namespace zerosbp {

/// The ZeroConfig of a graph configured as `spec` on `world` ranks,
/// resolved from three layers (resolveConfig): the DeepSpeed config or
/// enable_zero's arguments, then the other methods' settings, then the
/// `key=value` options on top. `world` counts every pipeline stage's ranks.
/// The error names the call or the key that set the bad value.
llvm::Expected<ZeroConfig> buildGraphConfig(const GraphConfigSpec &spec,
                                            int64_t world);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_CONFIG_GRAPHCONFIG_H
