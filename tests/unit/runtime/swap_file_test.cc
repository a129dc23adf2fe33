//===- swap_file_test.cc - an NVMe arena's file ---------------------------===//
//
// SwapFile round-trips bytes at unaligned offsets through requests in
// flight (io_uring where the kernel allows it) and one at a time, reads
// what the other way wrote, and names a read past its end.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/io/SwapFile.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace zerosbp::runtime {
namespace {

std::string tempDirectory() {
  const char *tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

std::vector<unsigned char> randomBytes(size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::vector<unsigned char> bytes(count);
  for (unsigned char &byte : bytes)
    byte = static_cast<unsigned char>(engine());
  return bytes;
}

TEST(SwapFile, SaysHowItReadsAndWrites) {
  SwapFile queued(tempDirectory(), 1 << 20, "test arena");
  EXPECT_TRUE(queued.method() == "io_uring, 8 requests of 1 MiB in flight" ||
              queued.method().rfind("pread/pwrite, one request at a time "
                                    "(io_uring unavailable: ",
                                    0) == 0)
      << queued.method();
  SwapFile single(tempDirectory(), 1 << 20, "test arena", 1);
  EXPECT_EQ(single.method(), "pread/pwrite, one request at a time");
}

TEST(SwapFile, RoundTripsManyRequestsAtUnalignedOffsets) {
  // 5.5 MiB plus a few bytes: six requests, the last short, at an offset
  // that is not a multiple of any block.
  const int64_t size = 16 << 20, offset = 12345;
  const size_t count = (11u << 19) + 7;
  std::vector<unsigned char> data = randomBytes(count, 1);
  for (int depth : {SwapFile::kQueueDepth, 1}) {
    SCOPED_TRACE("queue depth " + std::to_string(depth));
    SwapFile file(tempDirectory(), size, "test arena", depth);
    file.write(offset, data.data(), static_cast<int64_t>(count));
    std::vector<unsigned char> back(count);
    file.read(offset, back.data(), static_cast<int64_t>(count));
    EXPECT_EQ(back, data);
    // What one way wrote, the other way reads.
    std::vector<unsigned char> part(3 << 20);
    file.read(offset + 1000, part.data(), static_cast<int64_t>(part.size()));
    EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 1000));
  }
}

TEST(SwapFile, ReadPastTheEndIsNamed) {
  for (int depth : {SwapFile::kQueueDepth, 1}) {
    SwapFile file(tempDirectory(), 3 << 20, "test arena", depth);
    std::vector<unsigned char> out(4 << 20);
    try {
      file.read(0, out.data(), static_cast<int64_t>(out.size()));
      FAIL() << "read past the end";
    } catch (const RuntimeError &error) {
      std::string message = error.what();
      EXPECT_EQ(message.rfind("reading ", 0), 0u) << message;
      EXPECT_NE(message.find("of test arena in '"), std::string::npos)
          << message;
      EXPECT_NE(message.find("end of file"), std::string::npos) << message;
    }
  }
}

} // namespace
} // namespace zerosbp::runtime
