// AtomicFileWriter over POSIX file descriptors: open(O_EXCL) a random sibling name, write,
// fsync, rename(2) over the target, fsync the directory so the rename itself is durable.
#include "kiln/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "kiln/core/check.h"

namespace kiln::io {
namespace {

constexpr std::string_view kTempMarker = ".tmp-";

[[noreturn]] void fail_errno(const std::string& path, const char* what, int err) {
  KILN_THROW(IOError, "[", path, "] ", what, ": ", std::strerror(err),
             ". Hint: check that the directory exists, is writable and has free space.");
}

std::string random_suffix() {
  std::random_device rd;
  std::mt19937_64 gen((uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(::getpid()));
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(12, '0');
  for (char& c : s) c = kDigits[gen() % 16];
  return s;
}

// fsync on the directory makes the rename durable; some file systems refuse it (EINVAL),
// which is harmless because they have no separate directory durability to offer.
void sync_directory(const std::string& file_path) {
  std::filesystem::path dir = std::filesystem::path(file_path).parent_path();
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail_errno(dir.string(), "cannot open directory to flush the rename", errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL && err != EROFS)
    fail_errno(dir.string(), "cannot flush directory after rename", err);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (path_.empty()) KILN_THROW(IOError, "[AtomicFileWriter] empty path. Hint: name a file.");
  // O_EXCL with a random name never clobbers another writer's temporary file.
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_path_ = str_cat(path_, kTempMarker, random_suffix());
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) fail_errno(path_, "cannot create temporary file", errno);
  }
  if (fd_ < 0) fail_errno(path_, "cannot create a unique temporary file", EEXIST);
}

AtomicFileWriter::~AtomicFileWriter() {
  discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!committed_ && !temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

void AtomicFileWriter::write(const void* data, size_t n) {
  if (fd_ < 0)
    KILN_THROW(ValueError, "[", path_, "] write after commit or failure. Hint: use a new writer.");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      discard();
      fail_errno(path_, "cannot write", err);
    }
    p += w;
    n -= static_cast<size_t>(w);
    bytes_written_ += static_cast<uint64_t>(w);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0)
    KILN_THROW(ValueError, "[", path_,
               "] commit twice or after a failure. Hint: use a new writer.");
  if (::fsync(fd_) != 0) {
    int err = errno;
    discard();
    fail_errno(path_, "cannot flush file to disk", err);
  }
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    int err = errno;
    discard();
    fail_errno(path_, "cannot close file", err);
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    discard();
    fail_errno(path_, "cannot rename temporary file over target", err);
  }
  committed_ = true;
  temp_path_.clear();
  sync_directory(path_);
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes);
  writer.commit();
}

bool is_atomic_temp_file_name(std::string_view file_name) {
  return file_name.find(kTempMarker) != std::string_view::npos;
}

}  // namespace kiln::io
