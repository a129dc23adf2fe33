//===- DurableFile.h - files that are whole or absent -----------*- C++ -*-===//
//
// What every file the runtime writes goes through, so that a crash, a kill
// or a full disk never leaves a half-written file under its final name:
// data goes to a temporary name, is flushed to disk (fsync) and renamed; the
// directory is flushed after the rename. Errors are RuntimeErrors naming the
// file and the system's reason. Also the lock that keeps a second writer out
// of a directory, and the CRC-32 (zlib) that checkpoints carry per file.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_IO_DURABLEFILE_H
#define ZEROSBP_RUNTIME_IO_DURABLEFILE_H

#include <cstdint>
#include <string>

namespace zerosbp::runtime {

/// A file opened for writing under its own name, written in order, with a
/// running CRC-32 and byte count. finish() flushes it to disk and closes
/// it; a writer destroyed before finish() removes the file.
class FileWriter {
public:
  explicit FileWriter(const std::string &path);
  ~FileWriter();
  FileWriter(const FileWriter &) = delete;
  FileWriter &operator=(const FileWriter &) = delete;

  void write(const void *data, int64_t bytes);
  /// fsync and close; throws on any error the system reports.
  void finish();

  const std::string &path() const { return filePath; }
  int64_t bytesWritten() const { return written; }
  uint32_t crc32() const { return crc; }

private:
  std::string filePath;
  int fd = -1;
  int64_t written = 0;
  uint32_t crc = 0;
};

/// Writes `contents` to `path` atomically: a temporary name in the same
/// directory, fsync, rename, fsync of the directory.
void writeFileAtomically(const std::string &path, const std::string &contents);

/// writeFileAtomically for a command's output (a report, a trace): the
/// error is one line naming `path`, what it is and the system's reason,
/// "<path>: cannot write the <what> (<reason>)".
void writeOutputFile(const std::string &path, const std::string &contents,
                     const std::string &what);

/// Creates `path` and its missing parents; throws naming the path.
void createDirectories(const std::string &path);

/// rename(2) that throws naming both paths.
void renamePath(const std::string &from, const std::string &to);

/// Puts the directory `from` (complete and flushed) in place of `to`, which
/// may exist: swapped in one step where the file system can
/// (renameat2 RENAME_EXCHANGE), else the old one is renamed aside first.
/// The old directory is then removed, and the parent flushed. Throws
/// naming `to`; `from` is left for the caller to remove.
void replaceDirectory(const std::string &from, const std::string &to);

/// Removes a directory tree; errors are ignored (for clean-up paths).
void removeTree(const std::string &path);

/// Flushes a directory's entries (after a rename or a create in it).
void syncDirectory(const std::string &path);

/// CRC-32 (zlib's) of `bytes` bytes, continuing from `crc`.
uint32_t updateCrc32(uint32_t crc, const void *data, int64_t bytes);

/// CRC-32 and size of a whole file, read in bounded chunks.
struct FileDigest {
  int64_t bytes = 0;
  uint32_t crc32 = 0;
};
FileDigest digestFile(const std::string &path);

/// Reads exactly `bytes` bytes at `offset`; throws naming the file on a
/// short read ("truncated").
void readAt(int fd, const std::string &path, int64_t offset, void *out,
            int64_t bytes);

/// An exclusive advisory lock (flock) on `directory`/lock, held until
/// destruction or until the process dies, so it is never stale. A second
/// writer gets "<directory> is locked by another writer (pid P)".
class DirectoryLock {
public:
  explicit DirectoryLock(const std::string &directory);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock &) = delete;
  DirectoryLock &operator=(const DirectoryLock &) = delete;

private:
  int fd = -1;
};

/// An exclusive lock (flock) on writing `path`, a file or directory that
/// is replaced as a whole, so it cannot hold its own lock: the lock file is
/// the hidden sibling `.<name>.lock`, removed on release. A second writer
/// gets "<path> is locked by another writer (pid P)".
class PathLock {
public:
  explicit PathLock(const std::string &path);
  ~PathLock();
  PathLock(const PathLock &) = delete;
  PathLock &operator=(const PathLock &) = delete;

  /// `.<name>.lock` next to `path`.
  static std::string lockFileOf(const std::string &path);

private:
  std::string lockFile;
  int fd = -1;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_IO_DURABLEFILE_H
