// batch and unbatch: stack consecutive elements along a new leading axis, and split them again.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::batch (see there).
NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder);
/// The recipe step of Dataset::unbatch (see there).
NodePtr make_unbatch_node(NodePtr input);

}  // namespace kiln::data
