// KILN_DUMP_IR file writing.
#include "kiln/compiler/ir_dump.h"

#include <filesystem>
#include <fstream>

#include "kiln/core/check.h"

namespace kiln::compiler {

void dump_text(const std::string& dir, const std::string& file, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::path path = std::filesystem::path(dir) / file;
  std::ofstream out(path);
  out << text;
  if (!out)
    KILN_THROW(IOError, "[KILN_DUMP_IR] cannot write ", path.string(),
               ". Hint: point KILN_DUMP_IR at a writable directory.");
}

}  // namespace kiln::compiler
