// The IR verifier: structural and type invariants every pass must keep. It runs between passes
// (KILN_VERIFY_IR) and in every backend's compile(); a failure is a bug in Kiln, not the user's.
#pragma once

#include "kiln/ir/module.h"

namespace kiln::ir {

/// Checks `module` and throws InternalError listing every broken invariant at once:
/// operands live in the same computation and users lists mirror operands; every shape equals
/// infer_shape() of its operands; parameter indices are 0..n-1; outputs are non-empty and
/// owned; aliases name an existing output and parameter of equal shape, each at most once;
/// there are no cycles; fusion bodies belong to the module, take parameters matching the
/// fusion's operands and have one output of the fusion's shape (bodies are verified too);
/// while/conditional computations match their operands (shape inference checks them), their
/// placeholder value is read only by get_tuple_element, and no computation calls itself.
void verify(const Module& module);

}  // namespace kiln::ir
