//===- safetensors_test.cc - safetensors files, written and read ----------===//
//
// A round trip over every dtype with exact bytes, the file's layout checked
// byte by byte against the format as the Python safetensors reader expects
// it (8-byte little-endian length, a JSON header padded with spaces to an
// 8-byte boundary, data_offsets sorted by (begin, end) starting at 0,
// contiguous and ending at the end of the file), and one exact message per
// check the header parser and the reader make.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/Safetensors.h"

#include "test_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace zerosbp::runtime;
using namespace zerosbp::testing;
using Json = nlohmann::json;

namespace {

std::string headerError(const std::string &json, int64_t dataBytes) {
  return errorOf([&] { parseSafetensorsHeader(json, dataBytes, "f.st"); });
}

struct Expected {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// A tensor that writes `bytes` through the sink in pieces of `piece`.
SafetensorsTensor tensorOf(const Expected &expected, size_t piece = 3) {
  SafetensorsTensor tensor;
  tensor.name = expected.name;
  tensor.dtype = expected.dtype;
  tensor.shape = expected.shape;
  std::string bytes = expected.bytes;
  tensor.produce = [bytes, piece](const SafetensorsTensor::Sink &sink) {
    for (size_t at = 0; at < bytes.size(); at += piece)
      sink(bytes.data() + at,
           static_cast<int64_t>(std::min(piece, bytes.size() - at)));
  };
  return tensor;
}

std::vector<Expected> everyDType() {
  std::mt19937 generator(3);
  auto bytesOf = [&](size_t count) {
    std::string bytes(count, '\0');
    for (char &byte : bytes)
      byte = static_cast<char>(generator() & 0xff);
    return bytes;
  };
  return {
      {"w.f32", DType::F32, {2, 3}, bytesOf(24)},
      {"b.bf16", DType::BF16, {5}, bytesOf(10)},
      {"h.f16", DType::F16, {1, 1, 3}, bytesOf(6)},
      {"d.f64", DType::F64, {2}, bytesOf(16)},
      {"empty", DType::F32, {0, 3}, ""},
      {"i.i64", DType::I64, {3}, bytesOf(24)},
      {"j.i32", DType::I32, {2, 2}, bytesOf(16)},
      {"mask", DType::I1, {5}, std::string("\1\0\1\1\0", 5)},
      {"scalar", DType::F32, {}, bytesOf(4)},
  };
}

uint64_t littleEndian64(const std::string &bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = value << 8 | static_cast<unsigned char>(bytes[i]);
  return value;
}

TEST(Safetensors, RoundTripsEveryDTypeWithExactBytes) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/every.safetensors";
  std::vector<Expected> expected = everyDType();
  std::vector<SafetensorsTensor> tensors;
  for (const Expected &tensor : expected)
    tensors.push_back(tensorOf(tensor));
  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "a \"quoted\" value"}};
  FileDigest digest = writeSafetensors(path, tensors, metadata);

  std::string file = readFile(path);
  EXPECT_EQ(digest.bytes, static_cast<int64_t>(file.size()));
  EXPECT_EQ(digest.crc32, bitwiseCrc32(file));

  // The layout, read without the runtime's reader.
  ASSERT_GE(file.size(), 8u);
  uint64_t headerBytes = littleEndian64(file);
  ASSERT_LE(8 + headerBytes, file.size());
  EXPECT_EQ((8 + headerBytes) % 8, 0u) << "data is not 8-byte aligned";
  std::string headerText = file.substr(8, headerBytes);
  EXPECT_EQ(headerText.front(), '{');
  size_t end = headerText.find_last_not_of(' ');
  EXPECT_EQ(headerText[end], '}');
  EXPECT_LT(headerBytes - (end + 1), 8u) << "more padding than alignment";
  Json header = Json::parse(headerText);
  ASSERT_TRUE(header.is_object());
  EXPECT_EQ(header["__metadata__"],
            Json({{"format", "pt"}, {"note", "a \"quoted\" value"}}));
  std::string data = file.substr(8 + headerBytes);
  // As safetensors' Metadata::validate: sorted by data_offsets, each starts
  // where the previous ended, from 0 to the end of the file.
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> offsets;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    const Json &entry = it.value();
    EXPECT_EQ(entry.size(), 3u) << it.key();
    offsets.emplace_back(entry["data_offsets"][0].get<uint64_t>(),
                         entry["data_offsets"][1].get<uint64_t>(), it.key());
  }
  std::sort(offsets.begin(), offsets.end());
  uint64_t at = 0;
  for (const auto &[begin, finish, name] : offsets) {
    EXPECT_EQ(begin, at) << name;
    at = finish;
  }
  EXPECT_EQ(at, data.size());
  // Each tensor's bytes are where its offsets say, in the order written.
  std::string concatenated;
  for (const Expected &tensor : expected) {
    const Json &entry = header[tensor.name];
    EXPECT_EQ(entry["dtype"], safetensorsDTypeName(tensor.dtype));
    EXPECT_EQ(entry["shape"].get<std::vector<int64_t>>(), tensor.shape);
    uint64_t begin = entry["data_offsets"][0].get<uint64_t>();
    EXPECT_EQ(data.substr(begin, tensor.bytes.size()), tensor.bytes)
        << tensor.name;
    EXPECT_EQ(begin, concatenated.size()) << tensor.name;
    concatenated += tensor.bytes;
  }
  EXPECT_EQ(data, concatenated);

  // And through the reader.
  SafetensorsReader reader(path);
  EXPECT_EQ(reader.path(), path);
  EXPECT_EQ(reader.header().dataOffset, static_cast<int64_t>(8 + headerBytes));
  EXPECT_EQ(reader.header().metadata, metadata);
  EXPECT_EQ(reader.header().tensors.size(), expected.size());
  EXPECT_EQ(reader.header().find("no such tensor"), nullptr);
  for (const Expected &tensor : expected) {
    const SafetensorsEntry *entry = reader.header().find(tensor.name);
    ASSERT_NE(entry, nullptr) << tensor.name;
    EXPECT_EQ(entry->dtype, tensor.dtype);
    EXPECT_EQ(entry->shape, tensor.shape);
    EXPECT_EQ(entry->bytes(), static_cast<int64_t>(tensor.bytes.size()));
    std::string whole(tensor.bytes.size(), '\0');
    reader.read(*entry, 0, whole.data(), entry->bytes());
    EXPECT_EQ(whole, tensor.bytes) << tensor.name;
    // Every range of it.
    for (int64_t offset = 0; offset <= entry->bytes(); offset += 5)
      for (int64_t size = 0; offset + size <= entry->bytes(); size += 7) {
        std::string part(static_cast<size_t>(size), '\0');
        reader.read(*entry, offset, part.data(), size);
        EXPECT_EQ(part, tensor.bytes.substr(offset, size));
      }
  }
}

TEST(Safetensors, WritesAnEmptyFile) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/empty.safetensors";
  writeSafetensors(path, {}, {});
  std::string file = readFile(path);
  // "{}" padded to 8 bytes.
  EXPECT_EQ(file, std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  SafetensorsReader reader(path);
  EXPECT_TRUE(reader.header().tensors.empty());
  EXPECT_TRUE(reader.header().metadata.empty());
}

// A tensor of no elements shares its offset with the tensor after it; the
// reader must not take that for an overlap, whatever the names' order.
TEST(Safetensors, ReadsAnEmptyTensorAtTheOffsetOfTheNext) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/order.safetensors";
  writeSafetensors(path,
                   {tensorOf({"z.empty", DType::F32, {0}, ""}),
                    tensorOf({"a.full", DType::F32, {2}, "12345678"}),
                    tensorOf({"m.empty", DType::F16, {3, 0}, ""})},
                   {});
  SafetensorsReader reader(path);
  const SafetensorsEntry *full = reader.header().find("a.full");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->begin, 0);
  std::string bytes(8, '\0');
  reader.read(*full, 0, bytes.data(), 8);
  EXPECT_EQ(bytes, "12345678");
  EXPECT_EQ(reader.header().find("z.empty")->begin, 0);
  EXPECT_EQ(reader.header().find("m.empty")->begin, 8);
  // Given directly: an empty tensor at the start or inside of another.
  EXPECT_NO_THROW(parseSafetensorsHeader(
      R"({"b": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
          "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
      8, "f.st"));
}

TEST(Safetensors, RefusesATensorThatWritesTheWrongByteCount) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/short.safetensors";
  EXPECT_EQ(errorOf([&] {
              writeSafetensors(path,
                               {tensorOf({"ok", DType::I32, {1}, "abcd"}),
                                tensorOf({"x", DType::F32, {2}, "abcd"})},
                               {});
            }),
            path + ": tensor 'x' wrote 4 bytes, its shape needs 8");
  EXPECT_FALSE(fileExists(path)) << "a refused file is left behind";
  EXPECT_EQ(errorOf([&] {
              writeSafetensors(
                  path, {tensorOf({"x", DType::BF16, {2}, "abcdef"})}, {});
            }),
            path + ": tensor 'x' wrote 6 bytes, its shape needs 4");
  EXPECT_TRUE(listDirectory(directory).empty());
  EXPECT_EQ(
      errorOf([&] {
        writeSafetensors(
            path,
            {tensorOf({"huge", DType::F64, {int64_t(1) << 40, 1 << 20}, ""})},
            {});
      }),
      path + ": tensor 'huge' is too large");
  EXPECT_TRUE(listDirectory(directory).empty());
}

TEST(SafetensorsReader, SaysWhatIsWrongWithTheFile) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/t.safetensors";
  EXPECT_EQ(errorOf([&] { SafetensorsReader reader(path); }),
            path + ": cannot open (No such file or directory)");
  writeFile(path, "12345");
  EXPECT_EQ(errorOf([&] { SafetensorsReader reader(path); }),
            path + ": truncated: 5 bytes, too short for a safetensors header");
  writeFile(path, std::string("\x40\0\0\0\0\0\0\0{}", 10));
  EXPECT_EQ(errorOf([&] { SafetensorsReader reader(path); }),
            path + ": truncated or corrupt: a header of 64 bytes in a file "
                   "of 10");
  writeFile(path, std::string("\0\0\0\0\0\0\0\x80{}", 10));
  EXPECT_EQ(errorOf([&] { SafetensorsReader reader(path); }),
            path + ": truncated or corrupt: a header of 9223372036854775808 "
                   "bytes in a file of 10");

  writeSafetensors(path, {tensorOf({"a", DType::F32, {4}, "0123456789abcdef"})},
                   {});
  std::string whole = readFile(path);
  {
    SafetensorsReader reader(path);
    const SafetensorsEntry &entry = *reader.header().find("a");
    char out[16];
    EXPECT_EQ(errorOf([&] { reader.read(entry, 4, out, 13); }),
              path + ": tensor 'a': bytes [4, 17) are outside it");
    EXPECT_EQ(errorOf([&] { reader.read(entry, -1, out, 1); }),
              path + ": tensor 'a': bytes [-1, 0) are outside it");
    EXPECT_EQ(errorOf([&] { reader.read(entry, 2, out, -1); }),
              path + ": tensor 'a': bytes [2, 1) are outside it");
  }
  // Cut inside the data: the header no longer fits the file.
  writeFile(path, whole.substr(0, whole.size() - 3));
  EXPECT_EQ(errorOf([&] { SafetensorsReader reader(path); }),
            path + ": tensor 'a': data_offsets [0, 16] do not fit shape [4] "
                   "of F32 in 13 data bytes");
}

TEST(SafetensorsHeader, RejectsEachMalformedHeaderWithItsMessage) {
  EXPECT_EQ(headerError("{\"a\": ", 0),
            "f.st: the safetensors header is not JSON");
  EXPECT_EQ(headerError("", 0), "f.st: the safetensors header is not JSON");
  EXPECT_EQ(headerError("[1, 2]", 0),
            "f.st: the safetensors header is not a JSON object");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [2],
                                  "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [2],
                                  "data_offsets": [4, 12]}})",
                        16),
            "f.st: tensors 'a' and 'b' overlap");
  EXPECT_EQ(headerError(R"({"b": {"dtype": "F32", "shape": [4],
                                  "data_offsets": [0, 16]},
                            "a": {"dtype": "I64", "shape": [1],
                                  "data_offsets": [8, 16]}})",
                        16),
            "f.st: tensors 'b' and 'a' overlap");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [2],
                                  "data_offsets": [0, 8]}})",
                        4),
            "f.st: tensor 'a': data_offsets [0, 8] do not fit shape [2] of "
            "F32 in 4 data bytes");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "BF16", "shape": [3],
                                  "data_offsets": [0, 8]}})",
                        8),
            "f.st: tensor 'a': data_offsets [0, 8] do not fit shape [3] of "
            "BF16 in 8 data bytes");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [0],
                                  "data_offsets": [8, 4]}})",
                        8),
            "f.st: tensor 'a': data_offsets [8, 4] do not fit shape [0] of "
            "F32 in 8 data bytes");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "Q8", "shape": [2],
                                  "data_offsets": [0, 2]}})",
                        2),
            "f.st: tensor 'a': unsupported dtype \"Q8\"");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "f32", "shape": [2],
                                  "data_offsets": [0, 8]}})",
                        8),
            "f.st: tensor 'a': unsupported dtype \"f32\"");
  EXPECT_EQ(headerError(R"({"a": {"dtype": 4, "shape": [2],
                                  "data_offsets": [0, 8]}})",
                        8),
            "f.st: tensor 'a': unsupported dtype 4");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [-1],
                                  "data_offsets": [0, 0]}})",
                        8),
            "f.st: tensor 'a': shape [-1] has a dimension that is not a "
            "non-negative integer");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [2.0],
                                  "data_offsets": [0, 8]}})",
                        8),
            "f.st: tensor 'a': shape [2.0] has a dimension that is not a "
            "non-negative integer");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32",
                                  "shape": [4611686018427387905],
                                  "data_offsets": [0, 0]}})",
                        8),
            "f.st: tensor 'a': shape [4611686018427387905] is too large");
  // Each dimension is fine, their product in bytes is not.
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32",
                                  "shape": [4294967296, 4294967296],
                                  "data_offsets": [0, 0]}})",
                        8),
            "f.st: tensor 'a': shape [4294967296,4294967296] is too large");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32",
                                  "shape": [18446744073709551615],
                                  "data_offsets": [0, 0]}})",
                        8),
            "f.st: tensor 'a': shape [18446744073709551615] is too large");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": 2,
                                  "data_offsets": [0, 8]}})",
                        8),
            "f.st: tensor 'a': shape is not an array");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [2]}})", 8),
            "f.st: tensor 'a': needs dtype, shape and data_offsets");
  EXPECT_EQ(headerError(R"({"a": [1, 2]})", 8),
            "f.st: tensor 'a': needs dtype, shape and data_offsets");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [2],
                                  "data_offsets": [8]}})",
                        8),
            "f.st: tensor 'a': data_offsets is not [begin, end]");
  EXPECT_EQ(headerError(R"({"a": {"dtype": "F32", "shape": [2],
                                  "data_offsets": [-8, 0]}})",
                        8),
            "f.st: tensor 'a': data_offsets is not [begin, end]");
  EXPECT_EQ(headerError(R"({"__metadata__": [1]})", 8),
            "f.st: __metadata__ is not an object of strings");
  EXPECT_EQ(headerError(R"({"__metadata__": {"k": 1}})", 8),
            "f.st: __metadata__['k'] is not a string");
}

TEST(SafetensorsHeader, AcceptsWellFormedHeaders) {
  SafetensorsHeader header = parseSafetensorsHeader("{}", 0, "f.st");
  EXPECT_TRUE(header.tensors.empty());
  // Gaps between tensors and unused data at the end are tolerated.
  header = parseSafetensorsHeader(
      R"({"__metadata__": {"format": "pt"},
          "b": {"dtype": "BOOL", "shape": [3], "data_offsets": [16, 19]},
          "a": {"dtype": "F64", "shape": [1, 1], "data_offsets": [0, 8]}})",
      32, "f.st");
  ASSERT_EQ(header.tensors.size(), 2u);
  const SafetensorsEntry *b = header.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::I1);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(b->begin, 16);
  EXPECT_EQ(b->bytes(), 3);
  EXPECT_EQ(header.metadata.at("format"), "pt");
}

TEST(SafetensorsDType, NamesRoundTrip) {
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::F64,
                     DType::I64, DType::I32, DType::I1}) {
    std::optional<DType> parsed =
        parseSafetensorsDType(safetensorsDTypeName(type));
    ASSERT_TRUE(parsed.has_value()) << safetensorsDTypeName(type);
    EXPECT_EQ(*parsed, type);
  }
  EXPECT_STREQ(safetensorsDTypeName(DType::I1), "BOOL");
  EXPECT_STREQ(safetensorsDTypeName(DType::BF16), "BF16");
  EXPECT_FALSE(parseSafetensorsDType("bool").has_value());
  EXPECT_FALSE(parseSafetensorsDType("U8").has_value());
}

} // namespace
