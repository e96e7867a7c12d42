// from_tensor_slices: the rows of in-memory tensors, one element per row.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::from_tensor_slices (see there).
NodePtr make_tensor_slices_node(std::vector<HostTensor> components);

}  // namespace kiln::data
