// AtomicFileWriter over POSIX file descriptors: open(O_EXCL) a unique sibling name, write,
// fsync, rename(2) over the target, fsync the directory so the rename itself is durable; and
// the cleaning of temporary files whose writer died.
#include "kiln/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <random>

#include "kiln/core/check.h"
#include "kiln/core/host_name.h"

namespace kiln::io {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempMarker = ".tmp-";
constexpr size_t kRandomDigits = 12;

[[noreturn]] void fail_errno(const std::string& path, const char* what, int err) {
  KILN_THROW(IOError, "[", path, "] ", what, ": ", std::strerror(err),
             ". Hint: check that the directory exists, is writable and has free space.");
}

std::string random_suffix() {
  std::random_device rd;
  std::mt19937_64 gen((uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(::getpid()));
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(kRandomDigits, '0');
  for (char& c : s) c = kDigits[gen() % 16];
  return s;
}

// The host name with '-' (the separator of temporary names) and anything unusual as '_'.
std::string host_token() {
  std::string host = host_name().substr(0, 64);
  for (char& c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_') c = '_';
  return host;
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

}  // namespace

std::string writer_tag() {
  return str_cat(host_token(), "-", ::getpid());
}

std::string unique_name(std::string_view stem) {
  return str_cat(stem, writer_tag(), "-", random_suffix());
}

bool is_dead_writers_name(std::string_view name) {
  // "...-<host>-<pid>-<random>", parsed from the end.
  if (name.size() < kRandomDigits + 1 || !is_hex(name.substr(name.size() - kRandomDigits)) ||
      name[name.size() - kRandomDigits - 1] != '-')
    return false;
  name.remove_suffix(kRandomDigits + 1);
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos) return false;
  const std::string_view pid_text = name.substr(dash + 1);
  long long pid = 0;
  auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (ec != std::errc() || end != pid_text.data() + pid_text.size() || pid <= 0 || pid > INT32_MAX) return false;
  name = name.substr(0, dash);
  const std::string host = host_token();
  if (!name.ends_with(host) || name.size() == host.size() || name[name.size() - host.size() - 1] != '-')
    return false;
  return pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

std::vector<std::string> remove_stale_temp_files(const std::string& dir, std::string_view stem_prefix) {
  std::vector<std::string> removed;
  std::error_code ec, entry_ec;
  // increment(ec), not ++: a directory that vanishes midway must not throw.
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    const size_t marker = name.rfind(kTempMarker);
    if (marker == std::string::npos || !name.starts_with(stem_prefix) || marker < stem_prefix.size() ||
        !entry.is_regular_file(entry_ec) || entry.is_symlink(entry_ec) || !is_dead_writers_name(name))
      continue;
    if (fs::remove(entry.path(), entry_ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

void sync_directory(const std::string& dir_path) {
  // Some file systems refuse fsync on a directory (EINVAL): they have no separate directory
  // durability to offer.
  const std::string dir = dir_path.empty() ? "." : dir_path;
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail_errno(dir, "cannot open directory to flush it", errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL && err != EROFS) fail_errno(dir, "cannot flush directory", err);
}

void throw_write_error(const std::string& path, std::string_view what, int err) {
  if (err == EACCES || err == EPERM || err == EROFS) {
    const fs::path parent = fs::path(path).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    KILN_THROW(IOError, "[", dir, "] the directory is not writable (", std::strerror(err), "), so ", path,
               " cannot be saved. Hint: save to a writable directory, or fix its permissions or mount.");
  }
  fail_errno(path, std::string(what).c_str(), err);
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (path_.empty()) KILN_THROW(IOError, "[AtomicFileWriter] empty path. Hint: name a file.");
  const fs::path target(path_);
  remove_stale_temp_files(target.parent_path().string(), target.filename().string());
  // O_EXCL with a random name never clobbers another writer's temporary file.
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_path_ = unique_name(str_cat(path_, kTempMarker));
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) throw_write_error(path_, "cannot create temporary file", errno);
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
      throw_write_error(path_, "cannot write", err);
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
  sync_directory(fs::path(path_).parent_path().string());
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
