// from_generator: elements produced by user code.
#pragma once

#include "kiln/data/dataset.h"

namespace kiln::data {

/// The recipe step of Dataset::from_generator (see there).
NodePtr make_generator_node(GeneratorFactory factory);

}  // namespace kiln::data
