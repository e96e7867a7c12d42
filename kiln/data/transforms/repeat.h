// repeat: runs its input again when it ends.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::repeat (see there).
NodePtr make_repeat_node(NodePtr input, int64_t count);

}  // namespace kiln::data
