//===- SwapFile.cpp - an NVMe arena: a rank's anonymous file --------------===//

#include "runtime/io/SwapFile.h"

#include "runtime/core/Error.h"

#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <iostream>
#include <mutex>
#include <unistd.h>
#include <vector>

namespace zerosbp::runtime {

struct SwapFile::Ring {
  io_uring ring;
};

namespace {
/// A request: `bytes` at `offset` of the file, from or into `buffer`.
struct Request {
  int64_t offset;
  char *buffer;
  int64_t bytes;
};
} // namespace

SwapFile::SwapFile(const std::string &directory, int64_t bytes,
                   const std::string &label, int queueDepth)
    : where(label + " in '" + directory + "'"), fileBytes(bytes),
      depth(std::max(queueDepth, 1)) {
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
  how = "pread/pwrite, one request at a time";
  if (depth == 1)
    return;
  auto made = std::make_unique<Ring>();
  int status =
      io_uring_queue_init(static_cast<unsigned>(depth), &made->ring, 0);
  if (status < 0) {
    how +=
        " (io_uring unavailable: " + std::string(std::strerror(-status)) + ")";
    depth = 1;
    // Said once per process: every rank's file falls back alike.
    static std::once_flag said;
    std::call_once(said, [&] { std::cerr << "NVMe arena: " << how << "\n"; });
    return;
  }
  ring = std::move(made);
  how = "io_uring, " + std::to_string(depth) + " requests of " +
        std::to_string(kRequestBytes >> 20) + " MiB in flight";
}

SwapFile::~SwapFile() {
  if (ring)
    io_uring_queue_exit(&ring->ring);
  if (fd >= 0)
    ::close(fd);
}

void SwapFile::read(int64_t offset, void *out, int64_t bytes) const {
  transfer(/*reading=*/true, offset, static_cast<char *>(out), bytes);
}

void SwapFile::write(int64_t offset, const void *data, int64_t bytes) {
  // The buffer is only read: io_uring's and pwrite's signatures differ.
  transfer(/*reading=*/false, offset,
           const_cast<char *>(static_cast<const char *>(data)), bytes);
}

void SwapFile::oneAtATime(bool reading, int64_t offset, char *buffer,
                          int64_t bytes) const {
  while (bytes > 0) {
    ssize_t done = reading ? ::pread(fd, buffer, static_cast<size_t>(bytes),
                                     static_cast<off_t>(offset))
                           : ::pwrite(fd, buffer, static_cast<size_t>(bytes),
                                      static_cast<off_t>(offset));
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      throw RuntimeError(std::string(reading ? "reading " : "writing ") +
                         std::to_string(bytes) + " bytes at " +
                         std::to_string(offset) + " of " + where + ": " +
                         (done < 0  ? std::strerror(errno)
                          : reading ? "end of file"
                                    : "no progress"));
    buffer += done;
    offset += done;
    bytes -= done;
  }
}

void SwapFile::transfer(bool reading, int64_t offset, char *buffer,
                        int64_t bytes) const {
  std::lock_guard<std::mutex> lock(ringMutex);
  if (!ring || bytes <= kRequestBytes) {
    oneAtATime(reading, offset, buffer, bytes);
    return;
  }
  io_uring &uring = ring->ring;
  std::deque<Request> todo;
  for (int64_t at = 0; at < bytes; at += kRequestBytes)
    todo.push_back(
        {offset + at, buffer + at, std::min(kRequestBytes, bytes - at)});
  // Each request in flight sits in a slot that its completion names.
  std::vector<Request> slots(depth);
  std::vector<int> freeSlots;
  for (int slot = depth - 1; slot >= 0; --slot)
    freeSlots.push_back(slot);
  int inFlight = 0;
  std::string failure;
  while ((failure.empty() && !todo.empty()) || inFlight > 0) {
    bool queued = false;
    while (failure.empty() && !todo.empty() && !freeSlots.empty()) {
      io_uring_sqe *sqe = io_uring_get_sqe(&uring);
      if (!sqe)
        break;
      int slot = freeSlots.back();
      freeSlots.pop_back();
      slots[slot] = todo.front();
      todo.pop_front();
      const Request &request = slots[slot];
      if (reading)
        io_uring_prep_read(sqe, fd, request.buffer,
                           static_cast<unsigned>(request.bytes),
                           static_cast<uint64_t>(request.offset));
      else
        io_uring_prep_write(sqe, fd, request.buffer,
                            static_cast<unsigned>(request.bytes),
                            static_cast<uint64_t>(request.offset));
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
      ++inFlight;
      queued = true;
    }
    if (queued) {
      int submitted = io_uring_submit(&uring);
      if (submitted < 0 && submitted != -EINTR && submitted != -EAGAIN &&
          failure.empty())
        failure = std::strerror(-submitted);
    }
    io_uring_cqe *cqe = nullptr;
    int status = io_uring_wait_cqe(&uring, &cqe);
    if (status == -EINTR || status == -EAGAIN)
      continue;
    if (status < 0) {
      // The ring itself failed: nothing more completes.
      throw RuntimeError(std::string(reading ? "reading " : "writing ") +
                         where + ": io_uring: " + std::strerror(-status));
    }
    int slot = static_cast<int>(io_uring_cqe_get_data64(cqe));
    int result = cqe->res;
    io_uring_cqe_seen(&uring, cqe);
    --inFlight;
    Request request = slots[slot];
    freeSlots.push_back(slot);
    if (result == -EINTR || result == -EAGAIN) {
      todo.push_front(request);
    } else if (result <= 0) {
      if (failure.empty())
        failure = std::to_string(request.bytes) + " bytes at " +
                  std::to_string(request.offset) + ": " +
                  (result < 0 ? std::strerror(-result)
                   : reading  ? "end of file"
                              : "no progress");
    } else if (result < request.bytes) {
      // Short: the rest goes again first.
      todo.push_front({request.offset + result, request.buffer + result,
                       request.bytes - result});
    }
  }
  if (!failure.empty())
    throw RuntimeError(std::string(reading ? "reading " : "writing ") +
                       std::to_string(bytes) + " bytes at " +
                       std::to_string(offset) + " of " + where + ": " +
                       failure);
}

} // namespace zerosbp::runtime
