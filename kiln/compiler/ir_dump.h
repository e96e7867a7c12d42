// dump_text: writes one KILN_DUMP_IR file (the folder is created if needed); used by the pass
// pipeline for each pass and by backends for their lowered programs.
#pragma once

#include <string>

namespace kiln::compiler {

/// Writes `text` to `dir`/`file`; throws IOError naming the path and a hint on failure.
void dump_text(const std::string& dir, const std::string& file, const std::string& text);

}  // namespace kiln::compiler
