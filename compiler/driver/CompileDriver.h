//===- CompileDriver.h - a captured graph to a plan, pass by pass -*- C++ -*-=//
//
// What `zero-compile` and the Python `nn.Graph` share: run the global-view
// passes a config asks for, read the model-state report off the global IR,
// partition, run the local-view passes, export the plan, and read the plan
// report. One pass manager runs them all; an instrumentation (PassRecorder)
// times each pass and shows callers the IR after it. Diagnostics of a
// failing pass are collected into the error.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_DRIVER_COMPILEDRIVER_H
#define ZEROSBP_COMPILER_DRIVER_COMPILEDRIVER_H

#include "compiler/config/ZeroConfig.h"
#include "compiler/pipeline/Pipeline.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace zerosbp {

/// Whether the pass manager verifies the IR after every pass by default:
/// debug builds do, so that the pass that breaks the IR is named; optimized
/// builds verify the captured graph and the compiled one only, which keeps
/// the verifier out of most of the compile time (docs/compiler.md).
#ifdef NDEBUG
inline constexpr bool kVerifyEachPassByDefault = false;
#else
inline constexpr bool kVerifyEachPassByDefault = true;
#endif

struct CompileOptions {
  /// A training step, or an inference graph (docs/compiler.md).
  GraphKind kind = GraphKind::Training;
  /// Where zero-export-plan writes the plan; empty skips the export.
  std::string planFile;
  /// Called after each pass (and once with "capture" before the first)
  /// with the module; may print it. It runs inside the pass manager, so the
  /// context must not be multithreaded.
  llvm::function_ref<void(llvm::StringRef pass, mlir::ModuleOp module)>
      afterPass = nullptr;
  /// Called once on the global view after the last global pass, where
  /// roles and SBP are still on every value.
  llvm::function_ref<void(mlir::func::FuncOp func)> onGlobalView = nullptr;
  /// Training graphs: checkpoint the fewest of the graph's segments for
  /// the planned activation peak per rank to fit this many bytes (0: all
  /// marked segments, no budget). The report's `activation_checkpointing`
  /// says what was chosen (compiler/driver/ActivationBudget.h).
  int64_t activationBudget = 0;
  /// Verify the IR after every pass, not only the compiled graph
  /// (zero-compile --verify-each).
  bool verifyEachPass = kVerifyEachPassByDefault;
};

/// Compiles `module` (one graph function) for `config`. Returns
/// zero-compile's JSON report: the model-state report, `pass_ms`,
/// `compile_ms` (passes only), `config` and `plan`. The error is one line,
/// naming the pass and the first diagnostic.
llvm::Expected<llvm::json::Object> compileGraph(mlir::ModuleOp module,
                                                const ZeroConfig &config,
                                                const CompileOptions &options);

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_DRIVER_COMPILEDRIVER_H
