//===- gpt2_main.cpp - captures GPT-2 and prints its graph ----------------===//

#include "compiler/builder/Gpt2Builder.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static llvm::cl::opt<std::string>
    preset("preset",
           llvm::cl::desc("tiny, small (124M), medium, large or xl (1.5B)"),
           llvm::cl::init("tiny"));
static llvm::cl::opt<int64_t>
    numRanks("ranks", llvm::cl::desc("number of CPU ranks"), llvm::cl::init(4));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "ZeroSBP GPT-2 capture\n");
  auto config = zerosbp::Gpt2Config::preset(preset);
  if (!config) {
    llvm::errs() << "gpt2: unknown preset '" << preset
                 << "' (expected tiny, small, medium, large or xl)\n";
    return 1;
  }
  if (numRanks < 1) {
    llvm::errs() << "gpt2: --ranks must be positive\n";
    return 1;
  }
  MLIRContext context;
  zerosbp::GraphBuilder builder(
      context, "gpt2", zerosbp::GraphBuilder::cpuPlacement(context, numRanks));
  auto module = builder.finish({zerosbp::buildGpt2(builder, *config)});
  if (failed(module)) {
    llvm::errs() << "gpt2: " << builder.error() << "\n";
    return 1;
  }
  llvm::outs() << "// GPT-2 " << preset << ": " << config->layers
               << " layers, width " << config->embed << ", "
               << config->numParameters() << " parameters, " << numRanks
               << " CPU ranks: captured forward graph\n";
  (*module)->print(llvm::outs());
  return 0;
}
