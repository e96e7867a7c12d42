// libzip behind ZipReader and write_zip_atomically. An archive is built in a libzip memory
// source and then written through AtomicFileWriter, so libzip never renames files itself.
#include "kiln/io/zip_archive.h"

#include <zip.h>

#include <filesystem>

#include "kiln/core/check.h"
#include "kiln/io/atomic_file.h"

namespace kiln::io {
namespace {

std::string error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string text = zip_error_strerror(&e);
  zip_error_fini(&e);
  return text;
}

}  // namespace

struct ZipReader::State {
  zip_t* archive = nullptr;
  ~State() {
    if (archive != nullptr) zip_discard(archive);  // read-only: nothing to write back
  }
};

ZipReader::ZipReader(std::string path, std::unique_ptr<State> state)
    : path_(std::move(path)), state_(std::move(state)) {}
ZipReader::ZipReader(ZipReader&&) noexcept = default;
ZipReader& ZipReader::operator=(ZipReader&&) noexcept = default;
ZipReader::~ZipReader() = default;

ZipReader ZipReader::open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    KILN_THROW(IOError, "[", path, "] ", std::filesystem::exists(path, ec) ? "is not a file" : "does not exist",
               ". Hint: pass the path of a .keras file.");
  int code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (archive == nullptr)
    KILN_THROW(IOError, "[", path, "] is not a readable zip archive (", error_text(code),
               "): the file is truncated, damaged or not a .keras file. Hint: save the model again.");
  auto state = std::make_unique<State>();
  state->archive = archive;
  return ZipReader(path, std::move(state));
}

std::vector<std::string> ZipReader::names() const {
  std::vector<std::string> out;
  const zip_int64_t n = zip_get_num_entries(state_->archive, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(state_->archive, static_cast<zip_uint64_t>(i), 0);
    if (name != nullptr) out.emplace_back(name);
  }
  return out;
}

bool ZipReader::contains(const std::string& name) const {
  return zip_name_locate(state_->archive, name.c_str(), 0) >= 0;
}

std::string ZipReader::read(const std::string& name) const {
  const zip_int64_t index = zip_name_locate(state_->archive, name.c_str(), 0);
  if (index < 0)
    KILN_THROW(IOError, "[", path_, "] has no member '", name, "'. Hint: the archive is incomplete or not "
               "a .keras file; save the model again.");
  zip_file_t* file = zip_fopen_index(state_->archive, static_cast<zip_uint64_t>(index), 0);
  if (file == nullptr)
    KILN_THROW(IOError, "[", path_, "] member '", name, "' cannot be opened: ", zip_strerror(state_->archive),
               ". Hint: the archive is damaged; save the model again.");
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    const zip_int64_t n = zip_fread(file, buffer, sizeof(buffer));
    if (n < 0) {
      const std::string why = zip_file_strerror(file);
      zip_fclose(file);
      KILN_THROW(IOError, "[", path_, "] member '", name, "' is damaged: ", why,
                 ". Hint: the archive is corrupt or truncated; save the model again.");
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  zip_fclose(file);
  return out;
}

void write_zip_atomically(const std::string& path, const std::vector<ZipMember>& members) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  KILN_CHECK(buffer != nullptr, "libzip memory source: ", zip_error_strerror(&error));
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  if (archive == nullptr) {
    zip_source_free(buffer);
    KILN_THROW(IOError, "[", path, "] cannot start a zip archive: ", zip_error_strerror(&error), ".");
  }
  zip_source_keep(buffer);  // the bytes outlive zip_close
  auto fail = [&](const std::string& what) {
    const std::string why = zip_strerror(archive);
    zip_discard(archive);
    zip_source_free(buffer);
    KILN_THROW(IOError, "[", path, "] cannot write the zip archive (", what, "): ", why, ".");
  };
  for (const ZipMember& m : members) {
    zip_source_t* data = zip_source_buffer(archive, m.data.data(), m.data.size(), 0);
    if (data == nullptr) fail("member '" + m.name + "'");
    const zip_int64_t index = zip_file_add(archive, m.name.c_str(), data, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(data);
      fail("member '" + m.name + "'");
    }
    if (zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) != 0)
      fail("member '" + m.name + "'");
  }
  if (zip_close(archive) != 0) fail("closing");
  std::string bytes;
  if (zip_source_open(buffer) == 0) {
    char chunk[1 << 16];
    for (zip_int64_t n; (n = zip_source_read(buffer, chunk, sizeof(chunk))) > 0;)
      bytes.append(chunk, static_cast<size_t>(n));
    zip_source_close(buffer);
  }
  zip_source_free(buffer);
  KILN_CHECK(!bytes.empty(), "libzip produced an empty archive for ", path);
  write_file_atomically(path, bytes);
}

}  // namespace kiln::io
