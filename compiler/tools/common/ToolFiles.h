//===- ToolFiles.h - the compiler tools' flags and files --------*- C++ -*-===//
//
// What zero-compile and zero-opt share about their command lines: integer
// flags read in decimal only, inputs read through the runtime's bounded
// reader (docs/runtime.md#input-files), and outputs that may be neither an
// input nor one another (docs/compiler.md#outputs).
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_COMPILER_TOOLS_COMMON_TOOLFILES_H
#define ZEROSBP_COMPILER_TOOLS_COMMON_TOOLFILES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace zerosbp {

/// An integer flag's value, read in decimal only. cl::opt's own integer
/// parser takes a leading 0 for octal and 0x for hex, so `--world=010`
/// would mean 8 where `zero-run --ranks 010` means 10. It converts to and
/// from int64_t: cl::opt<DecimalInt> reads as an int64_t flag does.
struct DecimalInt {
  DecimalInt(int64_t value = 0) : value(value) {}
  operator int64_t() const { return value; }
  int64_t value;
};

/// A decimal int64_t flag.
using DecimalOpt = llvm::cl::opt<DecimalInt>;

/// The whole of `path` ("-": standard input), as readRegularFile reads it:
/// a directory, a device or a file over `maxBytes` is an error naming the
/// path and `what`.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readToolInput(llvm::StringRef path, int64_t maxBytes, llvm::StringRef what);

/// A file named on the command line: the flag that names it ("-o", "the
/// input") and the path ("" or "-" for none or a standard stream).
struct NamedFile {
  llvm::StringRef flag;
  llvm::StringRef path;
};

/// Refuses an output that is an input or another output, or lies inside
/// or holds one, by runtime/tools/common/OutputPaths.h's rule, which the
/// runtime's tools follow too:
///   "-o in.mlir and the input graph in.mlir are the same path"
llvm::Error checkOutputsAreDistinct(llvm::ArrayRef<NamedFile> inputs,
                                    llvm::ArrayRef<NamedFile> outputs);

} // namespace zerosbp

namespace llvm::cl {
/// Reads a DecimalInt: an optional '-' and decimal digits.
template <>
class parser<zerosbp::DecimalInt> : public basic_parser<zerosbp::DecimalInt> {
public:
  parser(Option &option) : basic_parser(option) {}
  bool parse(Option &option, StringRef argName, StringRef arg,
             zerosbp::DecimalInt &value);
  StringRef getValueName() const override { return "int"; }
  void printOptionDiff(const Option &option, zerosbp::DecimalInt value,
                       const OptVal &defaultValue, size_t globalWidth) const;
};
} // namespace llvm::cl

#endif // ZEROSBP_COMPILER_TOOLS_COMMON_TOOLFILES_H
