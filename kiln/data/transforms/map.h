// map: applies a function to each element, inline or on a ParallelRunner.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::map (see there for the arguments).
NodePtr make_map_node(NodePtr input, MapFn fn, MapOptions options);

/// `make_stage(node)`, except when `node` is a stateless map: then the same map over
/// `make_stage(map's input)`. For stages that only reorder or repeat elements (shuffle,
/// repeat), which then see the map's inputs and give the same elements in the same order.
NodePtr apply_before_stateless_map(const NodePtr& node, const std::function<NodePtr(NodePtr)>& make_stage);

}  // namespace kiln::data
