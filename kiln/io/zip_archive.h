// ZipReader and write_zip_atomically: Kiln's face over libzip (Debian libzip-dev) for the zip
// containers of Keras 3's .keras files. Members are read whole (CRC-32 checked by libzip) and
// written whole; every failure is an IOError naming the archive and, where there is one, the
// member.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace kiln::io {

/// One member of an archive to write: its name inside the archive and its bytes.
struct ZipMember {
  std::string name;
  std::string data;
};

/// An open zip archive, read-only. Move-only; closes on destruction.
class ZipReader {
 public:
  /// Opens `path` with libzip's consistency checks. IOError "[path] is not a zip archive ..."
  /// for a missing file, a file that is not a zip, or a truncated or inconsistent one.
  static ZipReader open(const std::string& path);

  ZipReader(ZipReader&&) noexcept;
  ZipReader& operator=(ZipReader&&) noexcept;
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;
  ~ZipReader();

  const std::string& path() const { return path_; }
  /// Member names in archive order.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  /// The whole member. IOError "[path] member 'name' ..." when it is absent, or its data is
  /// damaged (CRC mismatch, bad compressed data, truncated).
  std::string read(const std::string& name) const;

 private:
  struct State;
  ZipReader(std::string path, std::unique_ptr<State> state);

  std::string path_;
  std::unique_ptr<State> state_;
};

/// Writes a new archive holding `members` in order, stored uncompressed (as Python's
/// zipfile does by default, so Keras writes), and replaces `path` with it atomically
/// (AtomicFileWriter): a failed write leaves an existing file at `path` untouched.
void write_zip_atomically(const std::string& path, const std::vector<ZipMember>& members);

}  // namespace kiln::io
