// host_name(): this machine's name, as file names that say where they were written carry it
// (TensorBoard event files, profiler traces, atomic writers' temporary files).
#pragma once

#include <string>

namespace kiln {

/// gethostname(), or "localhost" when it has none.
std::string host_name();

}  // namespace kiln
