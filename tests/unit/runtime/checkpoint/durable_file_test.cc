//===- durable_file_test.cc - whole-or-absent files, CRC-32, the lock -----===//
//
// CRCs against a bitwise CRC-32 written here (not zlib), files that are
// whole or absent, the exact messages of failed system calls, and the
// directory lock within a process and across processes.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/io/DurableFile.h"

#include "test_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <random>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace zerosbp::runtime;
using namespace zerosbp::testing;

namespace {

std::string randomBytes(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::string bytes(count, '\0');
  for (char &byte : bytes)
    byte = static_cast<char>(generator() & 0xff);
  return bytes;
}

TEST(Crc32, MatchesTheBitwiseDefinition) {
  // The check value of CRC-32 (ISO-HDLC) for "123456789".
  EXPECT_EQ(bitwiseCrc32(std::string("123456789")), 0xCBF43926u);
  EXPECT_EQ(updateCrc32(0, "123456789", 9), 0xCBF43926u);
  EXPECT_EQ(updateCrc32(0, "", 0), 0u);
  std::string bytes = randomBytes(100003, 1);
  EXPECT_EQ(updateCrc32(0, bytes.data(), static_cast<int64_t>(bytes.size())),
            bitwiseCrc32(bytes));
  // Continuing from a CRC is the CRC of the concatenation.
  uint32_t crc = 0;
  for (size_t at = 0; at < bytes.size(); at += 7919)
    crc = updateCrc32(
        crc, bytes.data() + at,
        static_cast<int64_t>(std::min<size_t>(7919, bytes.size() - at)));
  EXPECT_EQ(crc, bitwiseCrc32(bytes));
}

TEST(FileWriter, CountsBytesAndCrcOfWhatItWrote) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/data.bin";
  std::string bytes = randomBytes(3 << 20, 2);
  {
    FileWriter writer(path);
    EXPECT_EQ(writer.path(), path);
    writer.write(bytes.data(), 5);
    writer.write(bytes.data() + 5, 0);
    writer.write(bytes.data() + 5, static_cast<int64_t>(bytes.size() - 5));
    EXPECT_EQ(writer.bytesWritten(), static_cast<int64_t>(bytes.size()));
    EXPECT_EQ(writer.crc32(), bitwiseCrc32(bytes));
    writer.finish();
    // Still readable after finish.
    EXPECT_EQ(writer.bytesWritten(), static_cast<int64_t>(bytes.size()));
  }
  // Finished: the destructor keeps the file.
  EXPECT_EQ(readFile(path), bytes);
}

TEST(FileWriter, RemovesAnUnfinishedFile) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/partial.bin";
  {
    FileWriter writer(path);
    writer.write("abc", 3);
    EXPECT_TRUE(fileExists(path));
  }
  EXPECT_FALSE(fileExists(path));
  EXPECT_TRUE(listDirectory(directory).empty());
  // Also when an exception unwinds through it.
  EXPECT_THROW(
      {
        FileWriter writer(path);
        writer.write("abc", 3);
        throw RuntimeError("interrupted");
      },
      RuntimeError);
  EXPECT_FALSE(fileExists(path));
  // An existing file of that name is truncated by the writer, then removed.
  writeFile(path, "old contents");
  { FileWriter writer(path); }
  EXPECT_FALSE(fileExists(path));
}

TEST(FileWriter, NamesTheFileAndReasonItCannotCreate) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/missing/data.bin";
  EXPECT_EQ(errorOf([&] { FileWriter writer(path); }),
            path + ": cannot create (No such file or directory)");
}

TEST(WriteFileAtomically, ReplacesTheFileAndLeavesNoTemporary) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/latest";
  writeFileAtomically(path, "step-00000001\n");
  EXPECT_EQ(readFile(path), "step-00000001\n");
  writeFileAtomically(path, "step-00000002\n");
  EXPECT_EQ(readFile(path), "step-00000002\n");
  writeFileAtomically(path, "");
  EXPECT_EQ(readFile(path), "");
  EXPECT_EQ(listDirectory(directory), std::vector<std::string>{"latest"});
  // Into a directory that does not exist: nothing is left anywhere.
  std::string missing = directory + "/no/such/latest";
  std::string temporary =
      missing + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  EXPECT_EQ(errorOf([&] { writeFileAtomically(missing, "x"); }),
            temporary + ": cannot create (No such file or directory)");
  EXPECT_EQ(listDirectory(directory), std::vector<std::string>{"latest"});
}

TEST(WriteFileAtomically, RemovesTheTemporaryWhenTheRenameFails) {
  std::string directory = makeTestDirectory();
  // A non-empty directory under the target name: rename(2) refuses.
  std::string path = directory + "/target";
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  writeFile(path + "/inside", "x");
  std::string temporary =
      path + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  std::string message = errorOf([&] { writeFileAtomically(path, "x"); });
  EXPECT_THAT(message, ::testing::StartsWith(path + ": cannot rename " +
                                             temporary + " to it ("));
  EXPECT_EQ(listDirectory(directory), std::vector<std::string>{"target"});
}

TEST(RenameAndSync, NameThePathsInTheirErrors) {
  std::string directory = makeTestDirectory();
  std::string from = directory + "/a";
  std::string to = directory + "/b";
  EXPECT_EQ(errorOf([&] { renamePath(from, to); }),
            to + ": cannot rename " + from +
                " to it (No such file or directory)");
  writeFile(from, "x");
  renamePath(from, to);
  EXPECT_FALSE(fileExists(from));
  EXPECT_EQ(readFile(to), "x");
  EXPECT_NO_THROW(syncDirectory(directory));
  EXPECT_EQ(errorOf([&] { syncDirectory(directory + "/none"); }),
            directory + "/none: cannot open directory (No such file or "
                        "directory)");
  EXPECT_EQ(errorOf([&] { syncDirectory(to); }),
            to + ": cannot open directory (Not a directory)");
}

TEST(DigestFile, IsZlibsCrcOfTheWholeFile) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/data.bin";
  // Over two 1 MiB read chunks and a ragged tail.
  for (size_t size :
       {size_t(0), size_t(1), size_t(1) << 20, (size_t(5) << 19) + 3}) {
    std::string bytes = randomBytes(size, static_cast<uint32_t>(size));
    writeFile(path, bytes);
    FileDigest digest = digestFile(path);
    EXPECT_EQ(digest.bytes, static_cast<int64_t>(size));
    EXPECT_EQ(digest.crc32, bitwiseCrc32(bytes)) << size << " bytes";
  }
  EXPECT_EQ(errorOf([&] { digestFile(directory + "/none"); }),
            directory + "/none: cannot open (No such file or directory)");
}

TEST(ReadAt, ReadsExactlyOrSaysTruncated) {
  std::string directory = makeTestDirectory();
  std::string path = directory + "/data.bin";
  writeFile(path, "0123456789");
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  char out[16] = {};
  readAt(fd, path, 3, out, 4);
  EXPECT_EQ(std::string(out, 4), "3456");
  readAt(fd, path, 0, out, 10);
  EXPECT_EQ(std::string(out, 10), "0123456789");
  readAt(fd, path, 10, out, 0);
  EXPECT_EQ(errorOf([&] { readAt(fd, path, 4, out, 10); }),
            path + ": truncated: ends at byte 10, 4 more bytes expected");
  EXPECT_EQ(errorOf([&] { readAt(fd, path, 12, out, 1); }),
            path + ": truncated: ends at byte 12, 1 more bytes expected");
  ::close(fd);
}

std::string pidText(long pid) { return " (pid " + std::to_string(pid) + ")"; }

TEST(DirectoryLock, KeepsOutASecondWriterInTheSameProcess) {
  std::string directory = makeTestDirectory();
  {
    DirectoryLock lock(directory);
    EXPECT_EQ(readFile(directory + "/lock"),
              std::to_string(static_cast<long>(::getpid())) + "\n");
    EXPECT_EQ(errorOf([&] { DirectoryLock second(directory); }),
              directory + " is locked by another writer" +
                  pidText(static_cast<long>(::getpid())));
    // The refused attempt does not release the first lock.
    EXPECT_EQ(errorOf([&] { DirectoryLock third(directory); }),
              directory + " is locked by another writer" +
                  pidText(static_cast<long>(::getpid())));
  }
  // Released on destruction; the lock file stays.
  { DirectoryLock again(directory); }
  EXPECT_TRUE(fileExists(directory + "/lock"));
  EXPECT_EQ(errorOf([&] { DirectoryLock lock(directory + "/none"); }),
            directory + "/none/lock: cannot open the lock file (No such file "
                        "or directory)");
}

TEST(DirectoryLock, NamesTheOtherProcessAndIsNeverStale) {
  std::string directory = makeTestDirectory();
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 0;
    try {
      DirectoryLock lock(directory);
      char byte = 'x';
      if (::write(ready[1], &byte, 1) != 1)
        status = 2;
      // Held until the parent says so, or until killed.
      if (::read(release[0], &byte, 1) < 0)
        status = 3;
    } catch (...) {
      status = 1;
    }
    ::_exit(status);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_EQ(errorOf([&] { DirectoryLock lock(directory); }),
            directory + " is locked by another writer" +
                pidText(static_cast<long>(child)));
  // A writer killed while holding the lock leaves no stale lock behind.
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_NO_THROW({ DirectoryLock lock(directory); });
  for (int fd : {ready[0], ready[1], release[0], release[1]})
    ::close(fd);
}

} // namespace
