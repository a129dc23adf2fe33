//===- PassRecorder.h - what compileGraph sees of each pass -----*- C++ -*-===//
//
// The instrumentation of compileGraph's one pass manager. For each pass of
// the pipeline (not the adaptors that nest passes on functions) it keeps the
// time the pass took and hands the IR after it to the caller; right before
// zero-partition it shows the caller the global view and reads the model
// states off it; when a pass fails it keeps the pass's first error
// diagnostic (docs/design.md, "The compile driver").
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_DRIVER_PASSRECORDER_H
#define ZEROSBP_COMPILER_DRIVER_PASSRECORDER_H

#include "compiler/driver/CompileDriver.h"
#include "compiler/estimator/ModelStateReport.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <optional>
#include <string>

namespace zerosbp {

class PassRecorder : public mlir::PassInstrumentation {
public:
  /// Records the passes that run on `module` or on its graph function
  /// `func`; a pass on another function (a declaration) is not reported.
  PassRecorder(mlir::ModuleOp module, mlir::func::FuncOp func,
               const CompileOptions &options);

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override;
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override;
  void runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) override;

  /// The first failure, as one line naming the pass and its first error
  /// diagnostic; success when nothing failed.
  llvm::Error takeError();

  /// The model states read off the global view; set once zero-partition
  /// has started.
  const std::optional<ModelStateReport> &modelStates() const { return states; }

  /// The report's `pass_ms`: {"pass", "ms"} for each pass, in order.
  llvm::json::Array takePassMs() { return std::move(passMs); }

  /// The passes' milliseconds together (the report's `compile_ms`).
  double totalMs() const { return total; }

private:
  /// A pass the report names: one of the pipeline (nesting adaptors have no
  /// argument) running on the module or the graph function.
  bool isRecorded(mlir::Pass *pass, mlir::Operation *op);
  /// Reads the model states before zero-partition turns the global view
  /// into the per-rank one.
  void readGlobalView();
  void fail(const llvm::Twine &message);

  mlir::ModuleOp module;
  mlir::func::FuncOp func;
  const CompileOptions &options;
  /// Keeps the first error diagnostic since the current pass started.
  mlir::ScopedDiagnosticHandler handler;
  std::string firstDiagnostic;
  std::chrono::steady_clock::time_point start;
  llvm::json::Array passMs;
  double total = 0;
  std::optional<ModelStateReport> states;
  std::optional<std::string> error;
};

} // namespace zerosbp

#endif // ZEROSBP_COMPILER_DRIVER_PASSRECORDER_H
