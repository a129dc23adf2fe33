//===- zero-opt.cpp - ZeroSBP optimizer driver ----------------------------===//
//
// Parses, verifies, transforms and prints ZeroSBP graphs: `sbp` and `nn` ops
// together with `func`, `arith`, `tensor` and `shard`.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/Pipeline.h"
#include "compiler/registration/InitAllDialects.h"
#include "compiler/tools/common/ToolFiles.h"
#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "passes/Passes.h"
#include "runtime/io/InputFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  registerTransformsPasses();
  zerosbp::registerZeroPasses();
  zerosbp::registerZeroPipeline();
  DialectRegistry registry;
  zerosbp::registerAllDialects(registry);
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "ZeroSBP optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "zero-opt: " << message << "\n";
    return 1;
  };
  auto read = zerosbp::readToolInput(
      inputFilename, zerosbp::runtime::kMaxGraphFileBytes, "the input graph");
  if (!read)
    return fail(llvm::toString(read.takeError()));
  std::unique_ptr<llvm::MemoryBuffer> input = std::move(*read);
  // ToolOutputFile removes its file when the run fails: were it the input,
  // the input would be gone.
  if (llvm::Error error = zerosbp::checkOutputsAreDistinct(
          {{"the input graph", inputFilename}}, {{"-o", outputFilename}}))
    return fail(llvm::toString(std::move(error)));
  // MLIR 22's bytecode reader aborts on some malformed files; graphs are
  // exchanged as text, so bytecode is refused up front.
  if (isBytecode(input->getMemBufferRef())) {
    llvm::errs() << "zero-opt: " << inputFilename
                 << ": MLIR bytecode input is not supported; pass textual IR\n";
    return 1;
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output)
    return fail(error);
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  // A full disk shows at the flush: named here, not a fatal error at exit.
  output->os().flush();
  if (output->os().has_error()) {
    std::string reason = output->os().error().message();
    output->os().clear_error();
    return fail("cannot write " +
                (outputFilename == "-" ? "to standard output"
                                       : "'" + outputFilename + "'") +
                ": " + reason);
  }
  output->keep();
  return 0;
}
