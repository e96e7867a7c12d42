// AtomicFileWriter: writes a file so that readers see either the old contents or the complete
// new ones, never a torn file: temp file in the same directory, fsync, rename, fsync directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::io {

/// Streams bytes into a temporary sibling of `path` and renames it over `path` on commit().
/// Destroying the writer without commit() removes the temporary file and leaves any existing
/// file at `path` untouched, so a failed or interrupted save never damages the previous one.
/// Every failure is an IOError naming the path and the system's error text.
class AtomicFileWriter {
 public:
  /// Creates the temporary file `<path>.tmp-<random>` next to `path`. Throws IOError if the
  /// directory does not exist or is not writable.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Appends `n` bytes. Throws IOError (for example, disk full) or ValueError after commit().
  void write(const void* data, size_t n);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }

  /// Flushes the data to disk, renames the temporary file over the target and flushes the
  /// directory entry. After it returns the new contents survive a crash.
  void commit();

  /// The final path the writer commits to.
  const std::string& path() const { return path_; }
  /// The temporary file being written (empty after commit()).
  const std::string& temp_path() const { return temp_path_; }
  /// Bytes written so far.
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
  bool committed_ = false;
};

/// Replaces the file at `path` with `bytes` atomically (see AtomicFileWriter).
void write_file_atomically(const std::string& path, std::string_view bytes);

/// True for names AtomicFileWriter uses for its temporary files (`*.tmp-*`), so directory
/// listings can skip the leftovers of a process killed mid-write.
bool is_atomic_temp_file_name(std::string_view file_name);

}  // namespace kiln::io
