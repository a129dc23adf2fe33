//===- Safetensors.h - safetensors files, read piece by piece ---*- C++ -*-===//
//
// The safetensors format (8-byte little-endian header length, a JSON header
// of tensors with dtype, shape and data_offsets, then the data) that
// checkpoints, `zero-checkpoint to-fp32` and `zs.save` use. Writing streams
// each tensor's bytes through a callback and reading gives byte ranges of a
// tensor, so neither ever holds more than the caller's chunk.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_IO_SAFETENSORS_H
#define ZEROSBP_RUNTIME_IO_SAFETENSORS_H

#include "runtime/core/DType.h"
#include "runtime/io/DurableFile.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zerosbp::runtime {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// [begin, end) in bytes, from the start of the data section.
  int64_t begin = 0;
  int64_t end = 0;
  int64_t bytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
  /// File offset of the data section (8 + header length).
  int64_t dataOffset = 0;
  const SafetensorsEntry *find(const std::string &name) const;
};

/// The safetensors dtype name of `type` ("F32", "BF16", ...).
const char *safetensorsDTypeName(DType type);
std::optional<DType> parseSafetensorsDType(const std::string &name);

/// Parses a header's JSON text. `dataBytes` is the size of the data
/// section: every tensor must lie inside it, with bytes equal to its shape's
/// elements times its dtype's size, and tensors must not overlap. Throws
/// RuntimeError("<source>: ...") on anything else.
SafetensorsHeader parseSafetensorsHeader(const std::string &json,
                                         int64_t dataBytes,
                                         const std::string &source);

/// A safetensors file opened for reading ranges of its tensors.
class SafetensorsReader {
public:
  explicit SafetensorsReader(const std::string &path);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader &) = delete;
  SafetensorsReader &operator=(const SafetensorsReader &) = delete;

  const SafetensorsHeader &header() const { return parsed; }
  const std::string &path() const { return filePath; }
  /// Reads bytes [offset, offset + bytes) of `entry`'s data.
  void read(const SafetensorsEntry &entry, int64_t offset, void *out,
            int64_t bytes) const;

private:
  std::string filePath;
  int fd = -1;
  SafetensorsHeader parsed;
};

/// A tensor to write: its name, dtype, shape, and a function that writes
/// its bytes, in order, through `sink` (called any number of times).
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  using Sink = std::function<void(const void *, int64_t)>;
  std::function<void(const Sink &)> produce;
};

/// Writes a safetensors file at `path` (under that name: callers that need
/// atomicity write into a temporary directory or name) and flushes it to
/// disk. Throws if a tensor produces a byte count other than its shape's.
FileDigest writeSafetensors(const std::string &path,
                            const std::vector<SafetensorsTensor> &tensors,
                            const std::map<std::string, std::string> &metadata);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_IO_SAFETENSORS_H
