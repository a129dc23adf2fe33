//===- InputFile.cpp - reading the files a tool is given ------------------===//

#include "runtime/io/InputFile.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zerosbp::runtime {
namespace {

std::string kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

} // namespace

std::string describeNonRegularFile(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode))
    return "";
  return kindOf(info.st_mode);
}

int openRegularFile(const std::string &path, int64_t maxBytes,
                    const std::string &what) {
  // O_NONBLOCK so that opening a FIFO with no writer returns at once; it
  // is refused below like any other file that is not regular.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw RuntimeError(path + ": cannot open " + what + " (" +
                       std::strerror(errno) + ")");
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    throw RuntimeError(path + ": cannot read " + what + " (" +
                       std::strerror(error) + ")");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw RuntimeError(path + ": is " + kindOf(info.st_mode) + ", not " +
                       what);
  }
  if (info.st_size > maxBytes) {
    ::close(fd);
    throw RuntimeError(path + ": " + what + " is " +
                       std::to_string(info.st_size) + " bytes, more than the " +
                       std::to_string(maxBytes) + " it may have");
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::string readRegularFile(const std::string &path, int64_t maxBytes,
                            const std::string &what) {
  int fd = openRegularFile(path, maxBytes, what);
  std::string contents;
  char chunk[1 << 16];
  while (true) {
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int error = errno;
      ::close(fd);
      throw RuntimeError(path + ": cannot read " + what + " (" +
                         std::strerror(error) + ")");
    }
    if (got == 0)
      break;
    contents.append(chunk, static_cast<size_t>(got));
    if (static_cast<int64_t>(contents.size()) > maxBytes) {
      ::close(fd);
      throw RuntimeError(path + ": " + what + " grew past the " +
                         std::to_string(maxBytes) +
                         " bytes it may have while it was read");
    }
  }
  ::close(fd);
  return contents;
}

} // namespace zerosbp::runtime
