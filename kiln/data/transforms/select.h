// take, skip and shard: keep elements by their index in the input.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::take (see there).
NodePtr make_take_node(NodePtr input, int64_t count);
/// The recipe step of Dataset::skip (see there).
NodePtr make_skip_node(NodePtr input, int64_t count);
/// The recipe step of Dataset::shard (see there).
NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index);

}  // namespace kiln::data
