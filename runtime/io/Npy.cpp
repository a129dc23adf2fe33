//===- Npy.cpp - NumPy .npy files
//------------------------------------------===//

#include "runtime/io/Npy.h"

#include "runtime/core/Error.h"
#include "runtime/io/DurableFile.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

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
  throw RuntimeError(source + ": unsupported .npy dtype '" + descr + "'" +
                     " (expected little-endian f4, f8, f2, i8, i4 or b1)");
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

} // namespace

NpyArray parseNpy(const std::string &bytes, const std::string &source) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    throw RuntimeError(source + ": not a .npy file");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(bytes[8]) |
                   (static_cast<unsigned char>(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw RuntimeError(source + ": truncated .npy header");
    headerLength = 0;
    for (int i = 3; i >= 0; --i)
      headerLength =
          (headerLength << 8) | static_cast<unsigned char>(bytes[8 + i]);
    headerStart = 12;
  } else {
    throw RuntimeError(source + ": unsupported .npy version " +
                       std::to_string(major));
  }
  if (headerStart + headerLength > bytes.size())
    throw RuntimeError(source + ": truncated .npy header");
  std::string header = bytes.substr(headerStart, headerLength);
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
  size_t dataBytes = static_cast<size_t>(count) * dtypeBytes(array.dtype);
  size_t dataStart = headerStart + headerLength;
  if (bytes.size() - dataStart < dataBytes)
    throw RuntimeError(source + ": truncated .npy data (" +
                       std::to_string(bytes.size() - dataStart) +
                       " bytes, expected " + std::to_string(dataBytes) + ")");
  array.data.assign(bytes.begin() + dataStart,
                    bytes.begin() + dataStart + dataBytes);
  return array;
}

NpyArray readNpy(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw RuntimeError(path + ": cannot open");
  std::stringstream bytes;
  bytes << file.rdbuf();
  return parseNpy(bytes.str(), path);
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
  }
  return 0;
}

} // namespace zerosbp::runtime
