// FileReader over POSIX open/fstat/pread.
#include "kiln/io/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kiln/core/check.h"

namespace kiln::io {

FileReader::FileReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    KILN_THROW(IOError, "[", path_, "] cannot open: ", std::strerror(errno),
               ". Hint: check the path and its permissions.");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    KILN_THROW(IOError, "[", path_, "] cannot open: ",
               S_ISDIR(st.st_mode)
                   ? "is a directory"
                   : (S_ISREG(st.st_mode) ? std::strerror(err) : "not a regular file"),
               ". Hint: pass the path of a file.");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::read_at(uint64_t offset, void* dst, size_t n, const char* what) const {
  if (offset > size_ || n > size_ - offset)
    KILN_THROW(IOError, "[", path_, "] truncated: ", what, " needs bytes [", offset, ", ",
               offset + n, ") but the file has ", size_,
               " bytes. Hint: the file was cut short; write it again.");
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) KILN_THROW(IOError, "[", path_, "] cannot read ", what, ": ", std::strerror(errno));
    if (r == 0)
      KILN_THROW(IOError, "[", path_, "] truncated: the file shrank while reading ", what, ".");
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
}

std::string read_file(const std::string& path) {
  FileReader reader(path);
  std::string bytes(static_cast<size_t>(reader.size()), '\0');
  reader.read_at(0, bytes.data(), bytes.size(), "the file contents");
  return bytes;
}

}  // namespace kiln::io
