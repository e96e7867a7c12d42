// ScratchFile: bytes written to a file of their own in the temporary directory and removed
// when it goes, for libraries that read only paths (libhdf5 reading a .keras archive's
// model.weights.h5 member).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "kiln/io/atomic_file.h"

namespace kiln::io {

class ScratchFile {
 public:
  /// Writes `bytes` to <temp dir>/<stem><host-pid-random><suffix>.
  ScratchFile(std::string_view bytes, std::string_view stem, std::string_view suffix)
      : path_((std::filesystem::temp_directory_path() / unique_name(stem)).string() + std::string(suffix)) {
    write_file_atomically(path_, bytes);
  }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kiln::io
