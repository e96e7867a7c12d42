// prefetch: a background thread keeps a bounded queue of elements ahead of the consumer.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::prefetch (see there for the arguments).
NodePtr make_prefetch_node(NodePtr input, int buffer_size);

}  // namespace kiln::data
