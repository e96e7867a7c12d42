// cache: keeps the elements in memory after the first complete pass.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::cache (see there).
NodePtr make_cache_node(NodePtr input);

}  // namespace kiln::data
