// Explicit backend creation (no self-registering statics): the one place that knows which
// backends this build has.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/runtime/backend.h"

namespace kiln::runtime {

/// Names of the backends this build can make ("cpu", "reference", and "cuda" when built).
std::vector<std::string> available_backends();
/// Makes a backend by name ("cuda" is "cuda:0"; "cuda:N" the GPU of ordinal N); throws
/// ConfigError naming the available ones (and how to build the missing one, for "cuda";
/// "cuda" without a driver or GPU says which is missing).
std::shared_ptr<Backend> make_backend(std::string_view name);
/// The backend programs run on when none is chosen: "cpu".
std::shared_ptr<Backend> default_backend();

}  // namespace kiln::runtime
