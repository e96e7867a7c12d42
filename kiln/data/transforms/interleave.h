// interleave: maps elements to datasets and mixes their elements block by block.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::interleave (see there).
NodePtr make_interleave_node(NodePtr input, InterleaveFn fn, int cycle_length, int block_length,
                             int num_parallel_calls);

}  // namespace kiln::data
