//===- Safetensors.cpp - safetensors files, read piece by piece -----------===//

#include "runtime/io/Safetensors.h"

#include "runtime/core/Error.h"
#include "runtime/io/InputFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

namespace zerosbp::runtime {

namespace {

using Json = nlohmann::json;

/// Headers larger than this are refused before reading (as safetensors'
/// own reader does), so a corrupt length cannot allocate gigabytes.
constexpr int64_t kMaxHeaderBytes = int64_t(100) << 20;
/// Tensors stay far below 2^62 bytes, so sizes never overflow int64.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 62;

struct DTypeName {
  DType type;
  const char *name;
};
constexpr DTypeName kDTypeNames[] = {{DType::F32, "F32"},   {DType::F16, "F16"},
                                     {DType::BF16, "BF16"}, {DType::F64, "F64"},
                                     {DType::I64, "I64"},   {DType::I32, "I32"},
                                     {DType::I1, "BOOL"},   {DType::I8, "I8"}};

/// Elements times element size, or -1 past kMaxTensorBytes.
int64_t checkedBytes(const std::vector<int64_t> &shape, DType type) {
  int64_t bytes = static_cast<int64_t>(dtypeBytes(type));
  for (int64_t dim : shape) {
    if (dim < 0)
      return -1;
    if (dim != 0 && bytes > kMaxTensorBytes / dim)
      return -1;
    bytes *= dim;
  }
  return bytes;
}

} // namespace

const char *safetensorsDTypeName(DType type) {
  for (const DTypeName &entry : kDTypeNames)
    if (entry.type == type)
      return entry.name;
  return "?";
}

std::optional<DType> parseSafetensorsDType(const std::string &name) {
  for (const DTypeName &entry : kDTypeNames)
    if (name == entry.name)
      return entry.type;
  return std::nullopt;
}

const SafetensorsEntry *SafetensorsHeader::find(const std::string &name) const {
  for (const SafetensorsEntry &entry : tensors)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

SafetensorsHeader parseSafetensorsHeader(const std::string &text,
                                         int64_t dataBytes,
                                         const std::string &source) {
  auto fail = [&](const std::string &what) -> RuntimeError {
    return RuntimeError(source + ": " + what);
  };
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    throw fail("the safetensors header is not JSON");
  if (!json.is_object())
    throw fail("the safetensors header is not a JSON object");
  SafetensorsHeader header;
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string &name = it.key();
    const Json &value = it.value();
    if (name == "__metadata__") {
      if (!value.is_object())
        throw fail("__metadata__ is not an object of strings");
      for (auto meta = value.begin(); meta != value.end(); ++meta) {
        if (!meta.value().is_string())
          throw fail("__metadata__['" + meta.key() + "'] is not a string");
        header.metadata[meta.key()] = meta.value().get<std::string>();
      }
      continue;
    }
    std::string where = "tensor '" + name + "'";
    if (!value.is_object() || !value.contains("dtype") ||
        !value.contains("shape") || !value.contains("data_offsets"))
      throw fail(where + ": needs dtype, shape and data_offsets");
    const Json &dtype = value["dtype"];
    const Json &shape = value["shape"];
    const Json &offsets = value["data_offsets"];
    SafetensorsEntry entry;
    entry.name = name;
    std::optional<DType> type =
        dtype.is_string() ? parseSafetensorsDType(dtype.get<std::string>())
                          : std::nullopt;
    if (!type)
      throw fail(where + ": unsupported dtype " + dtype.dump());
    entry.dtype = *type;
    if (!shape.is_array())
      throw fail(where + ": shape is not an array");
    for (const Json &dim : shape) {
      if (!dim.is_number_unsigned())
        throw fail(where + ": shape " + shape.dump() +
                   " has a dimension that is not a non-negative integer");
      uint64_t size = dim.get<uint64_t>();
      if (size > static_cast<uint64_t>(kMaxTensorBytes))
        throw fail(where + ": shape " + shape.dump() + " is too large");
      entry.shape.push_back(static_cast<int64_t>(size));
    }
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw fail(where + ": data_offsets is not [begin, end]");
    uint64_t begin = offsets[0].get<uint64_t>();
    uint64_t end = offsets[1].get<uint64_t>();
    int64_t expected = checkedBytes(entry.shape, entry.dtype);
    if (expected < 0)
      throw fail(where + ": shape " + shape.dump() + " is too large");
    if (begin > end || end > static_cast<uint64_t>(dataBytes) ||
        static_cast<int64_t>(end - begin) != expected)
      throw fail(where + ": data_offsets [" + std::to_string(begin) + ", " +
                 std::to_string(end) + "] do not fit shape " + shape.dump() +
                 " of " + safetensorsDTypeName(entry.dtype) + " in " +
                 std::to_string(dataBytes) + " data bytes");
    entry.begin = static_cast<int64_t>(begin);
    entry.end = static_cast<int64_t>(end);
    header.tensors.push_back(std::move(entry));
  }
  std::vector<const SafetensorsEntry *> byOffset;
  for (const SafetensorsEntry &entry : header.tensors)
    byOffset.push_back(&entry);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SafetensorsEntry *a, const SafetensorsEntry *b) {
              // A tensor of no bytes first: it shares its begin with the
              // tensor after it, which it does not overlap.
              return a->begin != b->begin ? a->begin < b->begin
                                          : a->end < b->end;
            });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->begin < byOffset[i - 1]->end)
      throw fail("tensors '" + byOffset[i - 1]->name + "' and '" +
                 byOffset[i]->name + "' overlap");
  return header;
}

SafetensorsReader::SafetensorsReader(const std::string &path) : filePath(path) {
  // What is read is bounded by the header and the file's size, which a
  // FIFO or a device does not have; O_NONBLOCK keeps a FIFO that appears
  // after this check from blocking the open.
  if (std::string kind = describeNonRegularFile(path); !kind.empty())
    throw RuntimeError(path + ": is " + kind + ", not a safetensors file");
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw RuntimeError(path + ": cannot open (" + std::strerror(errno) + ")");
  try {
    struct stat info;
    if (::fstat(fd, &info) != 0)
      throw RuntimeError(path + ": cannot stat (" + std::strerror(errno) + ")");
    int64_t size = info.st_size;
    if (size < 8)
      throw RuntimeError(path + ": truncated: " + std::to_string(size) +
                         " bytes, too short for a safetensors header");
    unsigned char length[8];
    readAt(fd, path, 0, length, 8);
    uint64_t headerBytes = 0;
    for (int i = 7; i >= 0; --i)
      headerBytes = headerBytes << 8 | length[i];
    if (headerBytes > static_cast<uint64_t>(kMaxHeaderBytes) ||
        static_cast<int64_t>(headerBytes) > size - 8)
      throw RuntimeError(path + ": truncated or corrupt: a header of " +
                         std::to_string(headerBytes) + " bytes in a file of " +
                         std::to_string(size));
    std::string text(headerBytes, '\0');
    readAt(fd, path, 8, text.data(), static_cast<int64_t>(headerBytes));
    int64_t dataOffset = 8 + static_cast<int64_t>(headerBytes);
    parsed = parseSafetensorsHeader(text, size - dataOffset, path);
    parsed.dataOffset = dataOffset;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

SafetensorsReader::~SafetensorsReader() { ::close(fd); }

void SafetensorsReader::read(const SafetensorsEntry &entry, int64_t offset,
                             void *out, int64_t bytes) const {
  if (offset < 0 || bytes < 0 || offset > entry.bytes() - bytes)
    throw RuntimeError(filePath + ": tensor '" + entry.name + "': bytes [" +
                       std::to_string(offset) + ", " +
                       std::to_string(offset + bytes) + ") are outside it");
  readAt(fd, filePath, parsed.dataOffset + entry.begin + offset, out, bytes);
}

FileDigest
writeSafetensors(const std::string &path,
                 const std::vector<SafetensorsTensor> &tensors,
                 const std::map<std::string, std::string> &metadata) {
  Json header = Json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  int64_t offset = 0;
  std::vector<int64_t> sizes;
  for (const SafetensorsTensor &tensor : tensors) {
    int64_t bytes = checkedBytes(tensor.shape, tensor.dtype);
    if (bytes < 0)
      throw RuntimeError(path + ": tensor '" + tensor.name + "' is too large");
    header[tensor.name] = {{"dtype", safetensorsDTypeName(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    sizes.push_back(bytes);
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // Data starts 8-byte aligned.
  unsigned char length[8];
  uint64_t headerBytes = text.size();
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(headerBytes >> (8 * i));
  FileWriter writer(path);
  writer.write(length, 8);
  writer.write(text.data(), static_cast<int64_t>(text.size()));
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t before = writer.bytesWritten();
    tensors[i].produce(
        [&](const void *data, int64_t bytes) { writer.write(data, bytes); });
    if (writer.bytesWritten() - before != sizes[i])
      throw RuntimeError(path + ": tensor '" + tensors[i].name + "' wrote " +
                         std::to_string(writer.bytesWritten() - before) +
                         " bytes, its shape needs " + std::to_string(sizes[i]));
  }
  writer.finish();
  return {writer.bytesWritten(), writer.crc32()};
}

} // namespace zerosbp::runtime
