//===- test_files.h - scratch directories and files for the tests -*- C++ -*-=//
//
// A fresh directory under $TEST_TMPDIR per test, whole-file reads and
// writes, the message of a thrown RuntimeError, a directory listing, and a
// bitwise CRC-32 (the reflected 0xEDB88320 polynomial, as zlib and PNG define
// it) that does not go through zlib, to check the runtime's CRCs against.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_TESTS_UNIT_RUNTIME_CHECKPOINT_TEST_FILES_H
#define ZEROSBP_TESTS_UNIT_RUNTIME_CHECKPOINT_TEST_FILES_H

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace zerosbp::testing {

/// The message of the RuntimeError `body` throws, or "(no error)".
template <typename Body> std::string errorOf(Body body) {
  try {
    body();
  } catch (const zerosbp::runtime::RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

/// A new empty directory for the running test.
inline std::string makeTestDirectory() {
  const char *root = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(root ? root : "/tmp") + "/ckptXXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data()))
    ADD_FAILURE() << "mkdtemp failed for " << pattern;
  return name.data();
}

inline std::string readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

inline void writeFile(const std::string &path, const std::string &contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << contents;
}

inline bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

/// Names in `directory`, sorted, without "." and "..".
inline std::vector<std::string> listDirectory(const std::string &directory) {
  std::vector<std::string> names;
  if (DIR *dir = ::opendir(directory.c_str())) {
    while (dirent *entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// CRC-32 one bit at a time, continuing from a finished CRC `crc`.
inline uint32_t bitwiseCrc32(const void *data, size_t bytes, uint32_t crc = 0) {
  const auto *at = static_cast<const unsigned char *>(data);
  crc = ~crc;
  for (size_t i = 0; i < bytes; ++i) {
    crc ^= at[i];
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline uint32_t bitwiseCrc32(const std::string &bytes, uint32_t crc = 0) {
  return bitwiseCrc32(bytes.data(), bytes.size(), crc);
}

} // namespace zerosbp::testing

#endif // ZEROSBP_TESTS_UNIT_RUNTIME_CHECKPOINT_TEST_FILES_H
