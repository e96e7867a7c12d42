// FileReader: positioned, bounds-checked reads from a file, so loaders never read past the
// end and every short read becomes an IOError naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::io {

/// A read-only file opened once, read at explicit offsets (pread), closed on destruction.
class FileReader {
 public:
  /// Opens `path`. Throws IOError "[path] cannot open: <errno text>" (missing, unreadable,
  /// a directory).
  explicit FileReader(std::string path);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  const std::string& path() const { return path_; }
  /// File size in bytes when it was opened.
  uint64_t size() const { return size_; }

  /// Reads exactly `n` bytes at `offset` into `dst`. Throws IOError "[path] truncated: ..."
  /// naming `what` (e.g. "tensor 'dense/kernel'") if the file ends first.
  void read_at(uint64_t offset, void* dst, size_t n, const char* what) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Reads the whole file into a string. Throws IOError naming the path.
std::string read_file(const std::string& path);

}  // namespace kiln::io
