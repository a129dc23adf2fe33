//===- PassRecorder.cpp - what compileGraph sees of each pass -------------===//

#include "compiler/driver/PassRecorder.h"

#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace zerosbp;

PassRecorder::PassRecorder(ModuleOp module, func::FuncOp func,
                           const CompileOptions &options)
    : module(module), func(func), options(options),
      handler(module->getContext(), [this](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Error &&
            firstDiagnostic.empty())
          firstDiagnostic = diag.str();
        return success();
      }) {}

bool PassRecorder::isRecorded(Pass *pass, Operation *op) {
  return !pass->getArgument().empty() &&
         (op == module.getOperation() || op == func.getOperation());
}

void PassRecorder::readGlobalView() {
  if (options.onGlobalView)
    options.onGlobalView(func);
  firstDiagnostic.clear();
  FailureOr<ModelStateReport> report = analyzeModelStates(func);
  if (succeeded(report)) {
    states = std::move(*report);
    return;
  }
  // The passes after this one still run; the error keeps its place as the
  // first failure.
  fail("cannot read model states off the compiled graph" +
       (firstDiagnostic.empty() ? std::string() : ": " + firstDiagnostic));
}

void PassRecorder::runBeforePass(Pass *pass, Operation *op) {
  if (!isRecorded(pass, op))
    return;
  if (pass->getArgument() == "zero-partition")
    readGlobalView();
  firstDiagnostic.clear();
  start = std::chrono::steady_clock::now();
}

void PassRecorder::runAfterPass(Pass *pass, Operation *op) {
  if (!isRecorded(pass, op))
    return;
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  total += ms;
  passMs.push_back(
      llvm::json::Object{{"pass", pass->getArgument().str()}, {"ms", ms}});
  if (options.afterPass)
    options.afterPass(pass->getArgument(), module);
}

void PassRecorder::runAfterPassFailed(Pass *pass, Operation *op) {
  StringRef name = pass->getArgument();
  if (name.empty())
    return;
  if (firstDiagnostic.empty())
    return fail(name + " failed");
  // Pass diagnostics usually start with the pass's name already.
  if (StringRef(firstDiagnostic).starts_with(name))
    return fail(firstDiagnostic);
  fail(name + ": " + firstDiagnostic);
}

void PassRecorder::fail(const llvm::Twine &message) {
  if (!error)
    error = message.str();
}

llvm::Error PassRecorder::takeError() {
  if (!error)
    return llvm::Error::success();
  auto result = llvm::createStringError(llvm::inconvertibleErrorCode(), *error);
  error.reset();
  return result;
}
