//===- SwapFile.h - an NVMe arena: a rank's anonymous file ------*- C++ -*-===//
//
// The bytes of a plan's NVMe arena (docs/plan-format.md#arenas): a file of
// the arena's size in a directory the user names (offload_optimizer's
// nvme_path), read and written at offsets with pread/pwrite. The file is
// unlinked as soon as it is open, so nothing is left on the disk however
// the process ends, a SIGKILL included; the space returns when the
// descriptor closes.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_IO_SWAPFILE_H
#define ZEROSBP_RUNTIME_IO_SWAPFILE_H

#include <cstdint>
#include <string>

namespace zerosbp::runtime {

class SwapFile {
public:
  /// Creates a file of `bytes` (sparse) in `directory`; `label` names it in
  /// messages (e.g. "rank 2's NVMe arena"). Throws RuntimeError naming the
  /// directory and the system's reason.
  SwapFile(const std::string &directory, int64_t bytes,
           const std::string &label);
  ~SwapFile();
  SwapFile(const SwapFile &) = delete;
  SwapFile &operator=(const SwapFile &) = delete;

  /// Copies `bytes` at `offset` of the file into `out`; throws on a short
  /// read or an error.
  void read(int64_t offset, void *out, int64_t bytes) const;
  /// Copies `bytes` of `data` to `offset` of the file.
  void write(int64_t offset, const void *data, int64_t bytes);

  int64_t size() const { return fileBytes; }

private:
  std::string where; // For messages: the label and the directory.
  int fd = -1;
  int64_t fileBytes = 0;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_IO_SWAPFILE_H
