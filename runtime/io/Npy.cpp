//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "runtime/io/Npy.h"

#include "runtime/core/Error.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/InputFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace zerosbp::runtime {

int64_t NpyArray::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";

/// The value of `'key': value` in the header dictionary, up to the next
/// top-level comma or closing brace.
std::string headerField(const std::string &header, const std::string &key,
                        const std::string &source) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    throw RuntimeError(source + ": .npy header has no '" + key + "'");
  size_t colon = header.find(':', at);
  if (colon == std::string::npos)
    throw RuntimeError(source + ": malformed .npy header");
  size_t begin = header.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos)
    throw RuntimeError(source + ": malformed .npy header");
  size_t end = begin;
  if (header[begin] == '(') {
    end = header.find(')', begin);
    if (end == std::string::npos)
      throw RuntimeError(source + ": malformed .npy shape");
    return header.substr(begin, end - begin + 1);
  }
  end = header.find_first_of(",}", begin);
  if (end == std::string::npos)
    throw RuntimeError(source + ": malformed .npy header");
  return header.substr(begin, end - begin);
}

DType parseDescr(std::string descr, const std::string &source) {
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"'))
    descr = descr.substr(1, descr.size() - 2);
  if (descr == "<f4")
    return DType::F32;
  if (descr == "<f8")
    return DType::F64;
  if (descr == "<f2")
    return DType::F16;
  if (descr == "<i8")
    return DType::I64;
  if (descr == "<i4")
    return DType::I32;
  if (descr == "|b1")
    return DType::I1;
  if (descr == "|i1")
    return DType::I8;
  throw RuntimeError(source + ": unsupported .npy dtype '" + descr + "'" +
                     " (expected little-endian f4, f8, f2, i8, i4, i1 or b1)");
}

const char *descrOf(DType type) {
  switch (type) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::I1:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::BF16:
    break;
  }
  throw RuntimeError("bf16 has no .npy type; widen it to f32");
}

std::vector<int64_t> parseShape(const std::string &text,
                                const std::string &source) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw RuntimeError(source + ": malformed .npy shape " + text);
  std::vector<int64_t> shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream stream(inner);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t begin = item.find_first_not_of(' ');
    if (begin == std::string::npos)
      continue; // The trailing comma of a 1-tuple.
    size_t end = item.find_last_not_of(' ');
    std::string digits = item.substr(begin, end - begin + 1);
    if (digits.empty() || digits.size() > 15 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw RuntimeError(source + ": malformed .npy shape " + text);
    shape.push_back(std::stoll(digits));
  }
  return shape;
}

/// Where the header starts and how long it is, from the file's first bytes
/// (10 of them for version 1, 12 for versions 2 and 3).
std::pair<size_t, size_t> headerSpan(const std::string &bytes,
                                     const std::string &source) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    throw RuntimeError(source + ": not a .npy file");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  if (major == 1)
    return {10, static_cast<unsigned char>(bytes[8]) |
                    (static_cast<unsigned char>(bytes[9]) << 8)};
  if (major != 2 && major != 3)
    throw RuntimeError(source + ": unsupported .npy version " +
                       std::to_string(major));
  if (bytes.size() < 12)
    throw RuntimeError(source + ": truncated .npy header");
  size_t length = 0;
  for (int i = 3; i >= 0; --i)
    length = (length << 8) | static_cast<unsigned char>(bytes[8 + i]);
  return {12, length};
}

/// The dtype and shape the header states; no data yet.
NpyArray parseHeader(const std::string &header, const std::string &source) {
  NpyArray array;
  array.dtype = parseDescr(headerField(header, "descr", source), source);
  std::string fortran = headerField(header, "fortran_order", source);
  if (fortran.find("True") != std::string::npos)
    throw RuntimeError(source + ": Fortran-order .npy arrays are not "
                                "supported (save with np.ascontiguousarray)");
  array.shape = parseShape(headerField(header, "shape", source), source);
  int64_t count = 1;
  for (int64_t dim : array.shape) {
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / 16 / dim)
      throw RuntimeError(source + ": .npy shape too large");
    count *= dim;
  }
  return array;
}

/// Throws unless `available` bytes after the header hold the array's data.
size_t checkDataBytes(const NpyArray &array, size_t available,
                      const std::string &source) {
  size_t dataBytes =
      static_cast<size_t>(array.numel()) * dtypeBytes(array.dtype);
  if (available < dataBytes)
    throw RuntimeError(source + ": truncated .npy data (" +
                       std::to_string(available) + " bytes, expected " +
                       std::to_string(dataBytes) + ")");
  return dataBytes;
}

} // namespace

NpyArray parseNpy(const std::string &bytes, const std::string &source) {
  auto [headerStart, headerLength] = headerSpan(bytes, source);
  if (headerStart + headerLength > bytes.size())
    throw RuntimeError(source + ": truncated .npy header");
  NpyArray array = parseHeader(bytes.substr(headerStart, headerLength), source);
  size_t dataStart = headerStart + headerLength;
  size_t dataBytes = checkDataBytes(array, bytes.size() - dataStart, source);
  array.data.assign(bytes.begin() + dataStart,
                    bytes.begin() + dataStart + dataBytes);
  return array;
}

NpyArray readNpy(const std::string &path) {
  // Read as the header states, never to the end of the file: the data are
  // as many bytes as the shape needs, which the file's size must hold.
  int fd =
      openRegularFile(path, std::numeric_limits<int64_t>::max(), "a .npy file");
  try {
    struct stat info;
    if (::fstat(fd, &info) != 0)
      throw RuntimeError(path + ": cannot read (" + std::strerror(errno) + ")");
    size_t size = static_cast<size_t>(info.st_size);
    std::string start(std::min<size_t>(size, 12), '\0');
    readAt(fd, path, 0, start.data(), static_cast<int64_t>(start.size()));
    auto [headerStart, headerLength] = headerSpan(start, path);
    if (headerStart + headerLength > size)
      throw RuntimeError(path + ": truncated .npy header");
    std::string header(headerLength, '\0');
    readAt(fd, path, static_cast<int64_t>(headerStart), header.data(),
           static_cast<int64_t>(headerLength));
    NpyArray array = parseHeader(header, path);
    size_t dataStart = headerStart + headerLength;
    array.data.resize(checkDataBytes(array, size - dataStart, path));
    readAt(fd, path, static_cast<int64_t>(dataStart), array.data.data(),
           static_cast<int64_t>(array.data.size()));
    ::close(fd);
    return array;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string npyShapeText(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

void writeNpy(const std::string &path, const NpyArray &array) {
  std::string header =
      std::string("{'descr': '") + descrOf(array.dtype) +
      "', 'fortran_order': False, 'shape': " + npyShapeText(array.shape) +
      ", }";
  // Pad so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  // A FileWriter removes a file it did not finish: a failed write (a full
  // disk) leaves no short file behind.
  FileWriter file(path);
  file.write(kMagic, 6);
  char version[2] = {1, 0};
  file.write(version, 2);
  unsigned char length[2] = {static_cast<unsigned char>(header.size() & 0xff),
                             static_cast<unsigned char>(header.size() >> 8)};
  file.write(length, 2);
  file.write(header.data(), static_cast<int64_t>(header.size()));
  file.write(array.data.data(), static_cast<int64_t>(array.data.size()));
  file.finish();
}

double npyElement(const NpyArray &array, int64_t index) {
  const unsigned char *at = array.data.data() + index * dtypeBytes(array.dtype);
  switch (array.dtype) {
  case DType::F32: {
    float value;
    std::memcpy(&value, at, 4);
    return value;
  }
  case DType::F64: {
    double value;
    std::memcpy(&value, at, 8);
    return value;
  }
  case DType::F16: {
    uint16_t bits;
    std::memcpy(&bits, at, 2);
    return halfToFloat(bits);
  }
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, at, 2);
    return bf16ToFloat(bits);
  }
  case DType::I64: {
    int64_t value;
    std::memcpy(&value, at, 8);
    return static_cast<double>(value);
  }
  case DType::I32: {
    int32_t value;
    std::memcpy(&value, at, 4);
    return value;
  }
  case DType::I1:
    return *at ? 1 : 0;
  case DType::I8:
    return static_cast<int8_t>(*at);
  }
  return 0;
}

} // namespace zerosbp::runtime
