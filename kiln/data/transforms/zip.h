// zip: several datasets side by side.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::zip (see there).
NodePtr make_zip_node(std::vector<NodePtr> inputs);

}  // namespace kiln::data
