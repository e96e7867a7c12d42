// AtomicFileWriter: writes a file so that readers see either the old contents or the complete
// new ones, never a torn file: temp file in the same directory, fsync, rename, fsync directory.
// Temporary names carry the writer's host and pid, so the next save can delete what a killed
// writer left behind without ever touching the temporary file of one still running.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::io {

/// Streams bytes into a temporary sibling of `path` and renames it over `path` on commit().
/// Destroying the writer without commit() removes the temporary file and leaves any existing
/// file at `path` untouched, so a failed or interrupted save never damages the previous one.
/// Every failure is an IOError naming the path and the system's error text.
class AtomicFileWriter {
 public:
  /// Creates the temporary file `<path>.tmp-<host>-<pid>-<random>` next to `path`, after
  /// deleting the temporary files of `path` that dead writers on this host left (see
  /// remove_stale_temp_files). Throws IOError if the directory does not exist or is not
  /// writable (the message then says so).
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

/// "<host>-<pid>" of this process, as temporary names carry it.
std::string writer_tag();

/// A name ending in "<writer_tag()>-<random>" of this process.
std::string unique_name(std::string_view stem);

/// True if `name` ends in "<host>-<pid>-<random>" (as unique_name makes them) with this host
/// and a pid no process has now (kill(pid, 0) fails with ESRCH): its writer is dead. A name
/// from another host, or whose pid lives (even if reused), is never called dead.
bool is_dead_writers_name(std::string_view name);

/// Deletes the files in `dir` named "<stem>.tmp-<host>-<pid>-<random>" (AtomicFileWriter) or
/// "<stem>.tmp-h5-<pid>" (older .h5 saves) whose stem starts with `stem_prefix` and whose
/// writer is dead (is_dead_writers_name). Returns the deleted paths. Never throws: cleaning is
/// best effort and must not fail a save.
std::vector<std::string> remove_stale_temp_files(const std::string& dir, std::string_view stem_prefix);

/// fsync(2) on a directory, so renames and creations inside it survive a crash. IOError if
/// it cannot be opened; file systems that cannot sync directories are accepted.
void sync_directory(const std::string& dir);

/// Throws IOError for a failed write to `path`: errno values that mean the directory refuses
/// writes (EACCES, EPERM, EROFS) say that `path`'s directory is not writable; others name
/// `what` and the system's text.
[[noreturn]] void throw_write_error(const std::string& path, std::string_view what, int err);

}  // namespace kiln::io
