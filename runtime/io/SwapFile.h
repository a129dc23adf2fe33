//===- SwapFile.h - an NVMe arena: a rank's anonymous file ------*- C++ -*-===//
//
// The bytes of a plan's NVMe arena (docs/plan-format.md#arenas): a file of
// the arena's size in a directory the user names (offload_optimizer's
// nvme_path). The file is unlinked as soon as it is open, so nothing is
// left on the disk however the process ends, a SIGKILL included; the space
// returns when the descriptor closes.
//
// A read or write is split into requests of kRequestBytes, up to
// `queueDepth` of them in flight at once through io_uring (liburing), as an
// NVMe drive needs to reach its bandwidth. Where the kernel refuses
// io_uring (some containers forbid it), requests go one at a time with
// pread/pwrite, and method() says why.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_IO_SWAPFILE_H
#define ZEROSBP_RUNTIME_IO_SWAPFILE_H

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace zerosbp::runtime {

class SwapFile {
public:
  /// Bytes per request.
  static constexpr int64_t kRequestBytes = int64_t(1) << 20;
  /// Requests in flight by default.
  static constexpr int kQueueDepth = 8;

  /// Creates a file of `bytes` (sparse) in `directory`; `label` names it in
  /// messages (e.g. "rank 2's NVMe arena"). `queueDepth` 1 reads and writes
  /// one request at a time. Throws RuntimeError naming the directory and
  /// the system's reason.
  SwapFile(const std::string &directory, int64_t bytes,
           const std::string &label, int queueDepth = kQueueDepth);
  ~SwapFile();
  SwapFile(const SwapFile &) = delete;
  SwapFile &operator=(const SwapFile &) = delete;

  /// Copies `bytes` at `offset` of the file into `out`; throws on a short
  /// read or an error, once no request is in flight.
  void read(int64_t offset, void *out, int64_t bytes) const;
  /// Copies `bytes` of `data` to `offset` of the file.
  void write(int64_t offset, const void *data, int64_t bytes);

  int64_t size() const { return fileBytes; }
  /// How requests go: "io_uring, 8 requests of 1 MiB in flight", or
  /// "pread/pwrite, one request at a time" and why.
  const std::string &method() const { return how; }

private:
  struct Ring;
  void transfer(bool reading, int64_t offset, char *buffer,
                int64_t bytes) const;
  void oneAtATime(bool reading, int64_t offset, char *buffer,
                  int64_t bytes) const;

  std::string where; // For messages: the label and the directory.
  int fd = -1;
  int64_t fileBytes = 0;
  int depth = 1;
  std::string how;
  std::unique_ptr<Ring> ring; // Null: one request at a time.
  /// A ring serves one caller at a time (the copy stream; a checkpoint
  /// between steps).
  mutable std::mutex ringMutex;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_IO_SWAPFILE_H
