// filter: keeps the elements a predicate accepts.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::filter (see there).
NodePtr make_filter_node(NodePtr input, Predicate predicate);

}  // namespace kiln::data
