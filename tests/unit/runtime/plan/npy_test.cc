//===- npy_test.cc - .npy reading and writing -----------------------------===//

#include "runtime/core/Error.h"
#include "runtime/io/Npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace zerosbp::runtime;
using ::testing::HasSubstr;

namespace {

std::string tempPath(const std::string &name) {
  const char *dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::string fileBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

std::string errorOf(const std::string &bytes) {
  try {
    parseNpy(bytes, "x.npy");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Npy, RoundTripsEveryShape) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}}) {
    NpyArray array;
    array.dtype = DType::F32;
    array.shape = shape;
    array.data.resize(array.numel() * 4);
    for (int64_t i = 0; i < array.numel(); ++i) {
      float value = 0.5f * i - 1;
      std::memcpy(array.data.data() + 4 * i, &value, 4);
    }
    std::string path = tempPath("round_trip.npy");
    writeNpy(path, array);
    std::string bytes = fileBytes(path);
    EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
    size_t headerLength = static_cast<unsigned char>(bytes[8]) |
                          (static_cast<unsigned char>(bytes[9]) << 8);
    EXPECT_EQ((10 + headerLength) % 64, 0u) << "data must start aligned";
    NpyArray back = readNpy(path);
    EXPECT_EQ(back.shape, shape);
    EXPECT_EQ(back.dtype, DType::F32);
    EXPECT_EQ(back.data, array.data);
  }
}

TEST(Npy, ReadsWhatNumpyWrites) {
  // np.save of np.arange(6, dtype=np.int64).reshape(2, 3), header by hand
  // as NumPy 1.24 writes it.
  std::string header =
      "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(118 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  for (int64_t i = 0; i < 6; ++i)
    bytes.append(reinterpret_cast<const char *>(&i), 8);
  NpyArray array = parseNpy(bytes, "x.npy");
  EXPECT_EQ(array.dtype, DType::I64);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(npyElement(array, 5), 5.0);
}

TEST(Npy, RejectsBadFiles) {
  EXPECT_THAT(errorOf("hello"), HasSubstr("x.npy: not a .npy file"));
  std::string header =
      "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n";
  std::string big = std::string("\x93NUMPY\x01\x00", 8) +
                    static_cast<char>(header.size()) + '\0' + header;
  EXPECT_THAT(errorOf(big), HasSubstr("unsupported .npy dtype '>f4'"));
  std::string fortranHeader =
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n";
  EXPECT_THAT(errorOf(std::string("\x93NUMPY\x01\x00", 8) +
                      static_cast<char>(fortranHeader.size()) + '\0' +
                      fortranHeader),
              HasSubstr("Fortran-order"));
  std::string okHeader =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n";
  EXPECT_THAT(errorOf(std::string("\x93NUMPY\x01\x00", 8) +
                      static_cast<char>(okHeader.size()) + '\0' + okHeader +
                      "abcd"),
              HasSubstr("truncated .npy data (4 bytes, expected 16)"));
  EXPECT_THAT(errorOf(std::string("\x93NUMPY\x01\x00\xff\x00", 10)),
              HasSubstr("truncated .npy header"));
  EXPECT_THROW(readNpy(tempPath("does_not_exist.npy")), RuntimeError);
}

} // namespace
