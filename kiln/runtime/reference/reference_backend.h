// The reference backend: runs modules with ir::evaluate, op by op on the host. Slow and
// obviously correct; it serves tests, f64 gradient checks, and as the oracle other backends
// are compared against.
#pragma once

#include <memory>
#include <set>

#include "kiln/ir/opcode.h"
#include "kiln/runtime/backend.h"

namespace kiln::runtime {

/// Makes a backend named "reference" that supports every op except those in `unsupported`
/// (tests use that to prove the "unsupported op" compile error). compile() verifies the module
/// and checks legality; it runs no optimization passes, so it executes the IR exactly as given.
std::unique_ptr<Backend> make_reference_backend(std::set<ir::Opcode> unsupported = {});

}  // namespace kiln::runtime
