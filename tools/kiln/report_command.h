// `kiln report <log_dir> [-o report.html]`: one self-contained HTML page from a TensorBoard log
// directory (the event files' scalars, and the Profiler's step trace when there is one).
#pragma once

#include <iosfwd>

#include "tools/kiln/args.h"

namespace kiln::cli {

/// Writes the page (default <log_dir>/report.html) and prints its path and what it holds.
int report(const Args& args, std::ostream& out);

}  // namespace kiln::cli
