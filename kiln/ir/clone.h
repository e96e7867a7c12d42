// Copying computations between modules: a backend compiles a while's body or a branch as a
// program of its own by extracting it into a fresh module.
#pragma once

#include <memory>
#include <string>

#include "kiln/ir/module.h"

namespace kiln::ir {

/// A module whose entry is a copy of `computation` (its parameters, reachable instructions and
/// outputs, with names and sources) and that owns copies of the computations it calls.
std::unique_ptr<Module> extract_module(const Computation& computation, std::string name);

}  // namespace kiln::ir
