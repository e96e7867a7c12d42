// File lists: glob matching for Dataset::list_files, and a source of file-name elements.
#pragma once

#include <string>
#include <vector>

#include "kiln/data/iterator_base.h"

namespace kiln::data {

/// The files matching `pattern`, sorted. Wildcards (`*`, `?`, `[...]`, as fnmatch) may appear
/// in the file-name part only. Throws DataError naming the pattern if nothing matches.
std::vector<std::string> match_files(const std::string& pattern);

/// A source yielding each name as a u8[n] string element (see string_tensor).
NodePtr make_file_list_node(std::vector<std::string> files);

}  // namespace kiln::data
