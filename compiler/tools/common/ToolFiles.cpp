//===- ToolFiles.cpp - the compiler tools' flags and files ----------------===//

#include "compiler/tools/common/ToolFiles.h"

#include "runtime/core/Error.h"
#include "runtime/io/InputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

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

/// Whether two paths name one file: the same inode where both exist, else
/// the same absolute path with `.` and `..` removed.
static bool sameFile(llvm::StringRef a, llvm::StringRef b) {
  bool equivalent = false;
  if (!llvm::sys::fs::equivalent(a, b, equivalent))
    return equivalent;
  auto normalized = [](llvm::StringRef path) {
    llvm::SmallString<256> absolute(path);
    llvm::sys::fs::make_absolute(absolute);
    llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
    return std::string(absolute);
  };
  return normalized(a) == normalized(b);
}

static bool namesAFile(const NamedFile &file) {
  return !file.path.empty() && file.path != "-";
}

llvm::Error checkOutputsAreDistinct(llvm::ArrayRef<NamedFile> inputs,
                                    llvm::ArrayRef<NamedFile> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedFile &output = outputs[i];
    if (!namesAFile(output))
      continue;
    for (const NamedFile &input : inputs)
      if (namesAFile(input) && sameFile(output.path, input.path))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       output.flag + " " + output.path +
                                           " is " + input.flag +
                                           "; give another output");
    for (const NamedFile &other : outputs.take_front(i))
      if (namesAFile(other) && sameFile(output.path, other.path))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            other.flag + " " + other.path + " and " + output.flag + " " +
                output.path + " are the same file; give each its own");
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
