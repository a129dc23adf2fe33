//===- DurableFile.cpp - files that are whole or absent -------------------===//

#include "runtime/io/DurableFile.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
#include <zlib.h>

namespace zerosbp::runtime {

namespace {

std::string systemReason() { return std::strerror(errno); }

std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

FileWriter::FileWriter(const std::string &path) : filePath(path) {
  fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw RuntimeError(path + ": cannot create (" + systemReason() + ")");
  crc = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
}

FileWriter::~FileWriter() {
  if (fd >= 0) {
    ::close(fd);
    ::unlink(filePath.c_str());
  }
}

void FileWriter::write(const void *data, int64_t bytes) {
  const char *at = static_cast<const char *>(data);
  int64_t left = bytes;
  while (left > 0) {
    ssize_t done = ::write(
        fd, at, static_cast<size_t>(std::min<int64_t>(left, int64_t(1) << 30)));
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      throw RuntimeError(
          filePath + ": cannot write (" +
          (done == 0 ? std::string("no progress") : systemReason()) + ")");
    at += done;
    left -= done;
  }
  crc = updateCrc32(crc, data, bytes);
  written += bytes;
}

void FileWriter::finish() {
  if (::fsync(fd) != 0)
    throw RuntimeError(filePath + ": cannot flush to disk (" + systemReason() +
                       ")");
  int result = ::close(fd);
  fd = -1;
  if (result != 0) {
    std::string reason = systemReason();
    ::unlink(filePath.c_str());
    throw RuntimeError(filePath + ": cannot close (" + reason + ")");
  }
}

void syncDirectory(const std::string &path) {
  int dir = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    throw RuntimeError(path + ": cannot open directory (" + systemReason() +
                       ")");
  int result = ::fsync(dir);
  std::string reason = systemReason();
  ::close(dir);
  if (result != 0)
    throw RuntimeError(path + ": cannot flush directory (" + reason + ")");
}

void createDirectories(const std::string &path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error)
    throw RuntimeError(path + ": cannot create directory (" + error.message() +
                       ")");
}

void renamePath(const std::string &from, const std::string &to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw RuntimeError(to + ": cannot rename " + from + " to it (" +
                       systemReason() + ")");
}

void writeFileAtomically(const std::string &path, const std::string &contents) {
  std::string temporary =
      path + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  {
    FileWriter writer(temporary);
    writer.write(contents.data(), static_cast<int64_t>(contents.size()));
    writer.finish();
  }
  try {
    renamePath(temporary, path);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  syncDirectory(parentOf(path));
}

void writeOutputFile(const std::string &path, const std::string &contents,
                     const std::string &what) {
  try {
    writeFileAtomically(path, contents);
  } catch (const RuntimeError &error) {
    // The errors above end in "(<reason>)" and may name the temporary; the
    // user named `path`.
    std::string message = error.what();
    size_t open = message.rfind(" (");
    std::string reason =
        open != std::string::npos && message.back() == ')'
            ? message.substr(open + 2, message.size() - open - 3)
            : message;
    throw RuntimeError(path + ": cannot write the " + what + " (" + reason +
                       ")");
  }
}

void removeTree(const std::string &path) {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

void replaceDirectory(const std::string &from, const std::string &to) {
  struct stat info;
  if (::lstat(to.c_str(), &info) != 0) {
    if (errno != ENOENT)
      throw RuntimeError(to + ": cannot replace (" + systemReason() + ")");
    renamePath(from, to);
  } else if (!S_ISDIR(info.st_mode)) {
    throw RuntimeError(to + ": exists and is not a directory");
  } else if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(),
                         RENAME_EXCHANGE) == 0) {
    removeTree(from); // Now the old directory.
  } else if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
    // No exchange on this file system: for a moment `to` is absent, but
    // never partly written.
    std::string aside = from + ".old";
    renamePath(to, aside);
    try {
      renamePath(from, to);
    } catch (...) {
      ::rename(aside.c_str(), to.c_str());
      throw;
    }
    removeTree(aside);
  } else {
    throw RuntimeError(to + ": cannot replace it with " + from + " (" +
                       systemReason() + ")");
  }
  syncDirectory(parentOf(to));
}

uint32_t updateCrc32(uint32_t crc, const void *data, int64_t bytes) {
  const auto *at = static_cast<const Bytef *>(data);
  while (bytes > 0) {
    uInt chunk = static_cast<uInt>(std::min<int64_t>(bytes, 1 << 30));
    crc = static_cast<uint32_t>(::crc32(crc, at, chunk));
    at += chunk;
    bytes -= chunk;
  }
  return crc;
}

void readAt(int fd, const std::string &path, int64_t offset, void *out,
            int64_t bytes) {
  char *at = static_cast<char *>(out);
  while (bytes > 0) {
    ssize_t done = ::pread(
        fd, at, static_cast<size_t>(std::min<int64_t>(bytes, int64_t(1) << 30)),
        offset);
    if (done < 0 && errno == EINTR)
      continue;
    if (done < 0)
      throw RuntimeError(path + ": cannot read (" + systemReason() + ")");
    if (done == 0)
      throw RuntimeError(path + ": truncated: ends at byte " +
                         std::to_string(offset) + ", " + std::to_string(bytes) +
                         " more bytes expected");
    at += done;
    offset += done;
    bytes -= done;
  }
}

FileDigest digestFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw RuntimeError(path + ": cannot open (" + systemReason() + ")");
  FileDigest digest;
  digest.crc32 = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
  std::vector<char> chunk(1 << 20);
  while (true) {
    ssize_t done = ::read(fd, chunk.data(), chunk.size());
    if (done < 0 && errno == EINTR)
      continue;
    if (done < 0) {
      std::string reason = systemReason();
      ::close(fd);
      throw RuntimeError(path + ": cannot read (" + reason + ")");
    }
    if (done == 0)
      break;
    digest.crc32 = updateCrc32(digest.crc32, chunk.data(), done);
    digest.bytes += done;
  }
  ::close(fd);
  return digest;
}

namespace {

/// Opens `lockFile` and takes its flock without waiting, or throws
/// "<what> is locked by another writer (pid P)" with the pid the holder
/// wrote into it.
int lockExclusively(const std::string &lockFile, const std::string &what) {
  int fd = ::open(lockFile.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw RuntimeError(lockFile + ": cannot open the lock file (" +
                       systemReason() + ")");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    char text[32] = {};
    if (::pread(fd, text, sizeof(text) - 1, 0) > 0)
      holder = std::string(" (pid ") + std::to_string(std::atol(text)) + ")";
    ::close(fd);
    throw RuntimeError(what + " is locked by another writer" + holder);
  }
  return fd;
}

/// Records this process as the holder, for the message a second writer
/// gets; the flock is what excludes, so a failed write changes nothing.
void writeHolderPid(int fd) {
  std::string pid = std::to_string(static_cast<long>(::getpid())) + "\n";
  if (::ftruncate(fd, 0) == 0)
    (void)::pwrite(fd, pid.data(), pid.size(), 0);
}

} // namespace

DirectoryLock::DirectoryLock(const std::string &directory)
    : fd(lockExclusively(directory + "/lock", directory)) {
  writeHolderPid(fd);
}

DirectoryLock::~DirectoryLock() {
  if (fd >= 0)
    ::close(fd);
}

std::string PathLock::lockFileOf(const std::string &path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/')
    trimmed.pop_back();
  size_t slash = trimmed.find_last_of('/');
  if (slash == std::string::npos)
    return "." + trimmed + ".lock";
  return trimmed.substr(0, slash + 1) + "." + trimmed.substr(slash + 1) +
         ".lock";
}

PathLock::PathLock(const std::string &path) : lockFile(lockFileOf(path)) {
  while (true) {
    fd = lockExclusively(lockFile, path);
    // The previous holder removes the file as it releases it: a lock taken
    // on the removed file excludes nobody, so take the one under the name.
    struct stat held, named;
    if (::fstat(fd, &held) == 0 && ::stat(lockFile.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino)
      break;
    ::close(fd);
    fd = -1;
  }
  writeHolderPid(fd);
}

PathLock::~PathLock() {
  if (fd >= 0) {
    ::unlink(lockFile.c_str()); // While still held: see the constructor.
    ::close(fd);
  }
}

} // namespace zerosbp::runtime
