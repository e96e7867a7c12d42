// map: applies a function to each element, inline or on a ParallelRunner.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::map (see there for the arguments).
NodePtr make_map_node(NodePtr input, MapFn fn, int num_parallel_calls, bool deterministic);

}  // namespace kiln::data
