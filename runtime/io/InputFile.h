//===- InputFile.h - reading the files a tool is given ----------*- C++ -*-===//
//
// Every file a tool reads whole (a plan, a config, a hostfile, a device
// model, a checkpoint manifest) is read through here, so that a character
// device, a FIFO or a directory given where a file is meant is refused in
// one line instead of read forever, and a file larger than its kind can be
// is refused before it is read. docs/runtime.md#input-files.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_IO_INPUTFILE_H
#define ZEROSBP_RUNTIME_IO_INPUTFILE_H

#include <cstdint>
#include <string>

namespace zerosbp::runtime {

/// The most bytes each kind of text input may have. A plan of a thousand
/// layers is far below its bound; the others are small by nature.
constexpr int64_t kMaxPlanFileBytes = int64_t(1) << 30;
constexpr int64_t kMaxGraphFileBytes = int64_t(1) << 30;
constexpr int64_t kMaxConfigFileBytes = int64_t(16) << 20;
constexpr int64_t kMaxHostfileBytes = int64_t(1) << 20;
constexpr int64_t kMaxDeviceFileBytes = int64_t(1) << 20;
constexpr int64_t kMaxManifestBytes = int64_t(256) << 20;

/// Opens `path` for reading and checks that it is a regular file (a
/// symbolic link is followed) of at most `maxBytes` bytes. Returns the
/// open descriptor, which the caller closes. Throws a RuntimeError naming
/// the path and `what` ("the plan", "the config"):
///   "<path>: is a directory, not <what>"
///   "<path>: is a character device, not <what>"
///   "<path>: <what> is N bytes, more than the M it may have"
/// Opening never blocks on a FIFO.
int openRegularFile(const std::string &path, int64_t maxBytes,
                    const std::string &what);

/// The whole contents of `path`, checked as openRegularFile checks it. A
/// file that grows while it is read stops at `maxBytes` and is refused.
std::string readRegularFile(const std::string &path, int64_t maxBytes,
                            const std::string &what);

/// The kind of a file that is not regular, in words ("a directory", "a
/// FIFO"); "" for a regular file or one that does not exist.
std::string describeNonRegularFile(const std::string &path);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_IO_INPUTFILE_H
