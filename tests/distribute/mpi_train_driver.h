// What the MPI driver trains, shared with the test that checks it.
#pragma once

#include <cstdint>

namespace kiln::testing {

inline constexpr int64_t kDriverSteps = 20, kDriverGlobalBatch = 64;

}  // namespace kiln::testing
