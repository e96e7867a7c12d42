// map: applies a function to each element, inline or on a ParallelRunner.
#pragma once

#include <optional>

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::map (see there for the arguments).
NodePtr make_map_node(NodePtr input, MapFunction fn, MapOptions options);

/// A map's parts, when `node` is a map whose function was declared stateless.
struct StatelessMap {
  NodePtr input;
  MapFunction fn;
  MapOptions options;
};
std::optional<StatelessMap> as_stateless_map(const NodePtr& node);

/// `fn` applied to a copy of `input`'s sample element (as tf.data traces a map function once to
/// learn its output); nullopt when there is no sample or `fn` fails on it (the pipeline then
/// reports the failure where it happens).
std::optional<Element> sample_output(const MapFunction& fn, const DatasetNode& input);

/// `make_stage(node)`, except when `node` is a stateless map: then the same map over
/// `make_stage(map's input)`. For stages that only reorder or repeat elements (shuffle,
/// repeat), which then see the map's inputs and give the same elements in the same order.
NodePtr apply_before_stateless_map(const NodePtr& node, const std::function<NodePtr(NodePtr)>& make_stage);

}  // namespace kiln::data
