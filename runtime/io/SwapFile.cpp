//===- SwapFile.cpp - an NVMe arena: a rank's anonymous file --------------===//

#include "runtime/io/SwapFile.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace zerosbp::runtime {

SwapFile::SwapFile(const std::string &directory, int64_t bytes,
                   const std::string &label)
    : where(label + " in '" + directory + "'"), fileBytes(bytes) {
  if (directory.empty())
    throw RuntimeError(label + ": no NVMe directory given (nvme_path)");
  std::string pattern = directory + "/zerosbp-swap-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0)
    throw RuntimeError("cannot create " + where + ": " + std::strerror(errno));
  // Nameless from here on: the space goes back when fd closes, whatever
  // stops the process.
  ::unlink(name.data());
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int error = errno;
    ::close(fd);
    fd = -1;
    throw RuntimeError("cannot size " + where + " to " + std::to_string(bytes) +
                       " bytes: " + std::strerror(error));
  }
}

SwapFile::~SwapFile() {
  if (fd >= 0)
    ::close(fd);
}

void SwapFile::read(int64_t offset, void *out, int64_t bytes) const {
  auto *to = static_cast<char *>(out);
  while (bytes > 0) {
    ssize_t got =
        ::pread(fd, to, static_cast<size_t>(bytes), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      throw RuntimeError("reading " + std::to_string(bytes) + " bytes at " +
                         std::to_string(offset) + " of " + where + ": " +
                         (got < 0 ? std::strerror(errno) : "end of file"));
    to += got;
    offset += got;
    bytes -= got;
  }
}

void SwapFile::write(int64_t offset, const void *data, int64_t bytes) {
  const auto *from = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t put = ::pwrite(fd, from, static_cast<size_t>(bytes),
                           static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      throw RuntimeError("writing " + std::to_string(bytes) + " bytes at " +
                         std::to_string(offset) + " of " + where + ": " +
                         (put < 0 ? std::strerror(errno) : "no progress"));
    from += put;
    offset += put;
    bytes -= put;
  }
}

} // namespace zerosbp::runtime
