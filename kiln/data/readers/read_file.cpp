// read_file/write_file over stdio; the storage deleter carries the path (contents_source).
#include "kiln/data/readers/read_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <sys/stat.h>

#include "kiln/core/check.h"
#include "kiln/data/element.h"
#include "kiln/data/readers/tfrecord_reader.h"

namespace kiln::data {
namespace {

// Frees a file's bytes and remembers which file they are.
struct FileStorage {
  std::string path;
  void operator()(std::byte* p) const { std::free(p); }
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

HostTensor read_file(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) KILN_THROW(DataError, "[read_file] ", path, ": cannot open: ", std::strerror(errno), ".");
  // A directory opens fine on Linux and "seeks" to LONG_MAX: ask what the file is first.
  struct stat info{};
  if (fstat(fileno(file.get()), &info) != 0)
    KILN_THROW(DataError, "[read_file] ", path, ": cannot stat: ", std::strerror(errno), ".");
  if (!S_ISREG(info.st_mode))
    KILN_THROW(DataError, "[read_file] ", path, ": not a regular file (", S_ISDIR(info.st_mode) ? "a directory" : "a device or pipe",
               ").");
  const auto length = static_cast<size_t>(info.st_size);
  // Aligned and padded as HostTensor's own storage.
  const size_t bytes = (std::max<size_t>(length, 1) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  auto* block = static_cast<std::byte*>(std::aligned_alloc(kHostAlignment, bytes));
  if (block == nullptr)
    KILN_THROW(OutOfMemoryError, "[read_file] ", path, ": cannot allocate ", length, " bytes.");
  HostTensor contents = HostTensor::from_storage(Shape(DType::kU8, {static_cast<int64_t>(length)}),
                                                 std::shared_ptr<std::byte>(block, FileStorage{path}));
  if (std::fread(contents.raw_data(), 1, length, file.get()) != length)
    KILN_THROW(DataError, "[read_file] ", path, ": read failed after ", std::ftell(file.get()), " of ", length,
               " bytes (the file shrank, or a device error).");
  return contents;
}

HostTensor read_file(const HostTensor& filename) {
  const bool string_scalar = filename.is_string() && filename.rank() == 0;
  if (!string_scalar && (filename.dtype() != DType::kU8 || filename.rank() != 1))
    KILN_THROW(DTypeError, "[read_file] expected a file name as a string[] or u8[n] tensor, received ",
               filename.shape(), ". Hint: string_tensor(\"path\") makes one; list_files yields them.");
  return read_file(tensor_string(filename));
}

void write_file(const std::string& path, const HostTensor& contents) {
  if (contents.dtype() != DType::kU8)
    KILN_THROW(DTypeError, "[write_file] ", path, ": expected u8 contents, received ", contents.shape(), ".");
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) KILN_THROW(IOError, "[write_file] ", path, ": cannot create: ", std::strerror(errno), ".");
  const auto length = static_cast<size_t>(contents.byte_size());
  if (std::fwrite(contents.raw_data(), 1, length, file.get()) != length)
    KILN_THROW(IOError, "[write_file] ", path, ": write failed: ", std::strerror(errno), ".");
  if (std::fclose(file.release()) != 0)
    KILN_THROW(IOError, "[write_file] ", path, ": close failed: ", std::strerror(errno), ".");
}

std::string contents_source(const HostTensor& contents) {
  if (const FileStorage* s = std::get_deleter<FileStorage>(contents.storage())) return s->path;
  if (auto record = record_source(contents)) return record->describe();
  return str_cat(contents.shape(), " contents");
}

}  // namespace kiln::data
