//===- ToolFiles.cpp - the compiler tools' flags and files ----------------===//

#include "compiler/tools/common/ToolFiles.h"

#include "runtime/core/Error.h"
#include "runtime/io/InputFile.h"
#include "runtime/tools/common/OutputPaths.h"

#include "llvm/ADT/Twine.h"

namespace zerosbp {

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readToolInput(llvm::StringRef path, int64_t maxBytes, llvm::StringRef what) {
  if (path == "-") {
    auto buffer = llvm::MemoryBuffer::getSTDIN();
    if (!buffer)
      return llvm::createStringError(buffer.getError(),
                                     "cannot read standard input: " +
                                         buffer.getError().message());
    return std::move(*buffer);
  }
  try {
    std::string contents =
        runtime::readRegularFile(path.str(), maxBytes, what.str());
    return llvm::MemoryBuffer::getMemBufferCopy(contents, path);
  } catch (const runtime::RuntimeError &error) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   error.what());
  }
}

llvm::Error checkOutputsAreDistinct(llvm::ArrayRef<NamedFile> inputs,
                                    llvm::ArrayRef<NamedFile> outputs) {
  auto named = [](llvm::ArrayRef<NamedFile> files) {
    std::vector<runtime::tools::CommandPath> paths;
    for (const NamedFile &file : files)
      if (!file.path.empty() && file.path != "-")
        paths.push_back({file.flag.str(), file.path.str()});
    return paths;
  };
  try {
    runtime::tools::checkOutputsApart(named(outputs), named(inputs));
  } catch (const runtime::RuntimeError &error) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   error.what());
  }
  return llvm::Error::success();
}

} // namespace zerosbp

namespace llvm::cl {

bool parser<zerosbp::DecimalInt>::parse(Option &option, StringRef argName,
                                        StringRef arg,
                                        zerosbp::DecimalInt &value) {
  if (arg.getAsInteger(10, value.value))
    return option.error("expected a decimal integer, got '" + arg + "'");
  return false;
}

void parser<zerosbp::DecimalInt>::printOptionDiff(const Option &option,
                                                  zerosbp::DecimalInt value,
                                                  const OptVal &defaultValue,
                                                  size_t globalWidth) const {
  printOptionName(option, globalWidth);
  outs() << "= " << value.value << "\n";
}

} // namespace llvm::cl
