// Batching a traced program (JAX's vmap, tf.data's map vectorization): the module a function
// was traced into for one element becomes the module for a batch of elements stacked along a
// new leading axis, so a dataset map runs once per batch instead of once per row.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kiln/ir/module.h"

namespace kiln::trace {

/// The module for `batch_size` elements: every parameter and output of `element`'s entry gains
/// a leading dimension of `batch_size`, and each instruction computes per row what it computed
/// for one element (values that depend on no parameter stay unbatched and are broadcast where
/// they meet batched ones). Returns null and says why in `*why_not` when an instruction on a
/// batched value has no batching rule (dot_general, convolution, gather, ...): the caller then
/// runs the element program row by row. `element` must have no output aliases (no variables).
std::unique_ptr<ir::Module> batch_module(const ir::Module& element, int64_t batch_size, std::string* why_not);

}  // namespace kiln::trace
