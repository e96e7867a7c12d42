// dump_text: writes one KILN_DUMP_IR file (the folder is created if needed).
#pragma once

#include <string>

namespace kiln::runtime {

/// Writes `text` to `dir`/`file`; throws IOError naming the path on failure.
void dump_text(const std::string& dir, const std::string& file, const std::string& text);

}  // namespace kiln::runtime
