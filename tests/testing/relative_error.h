// relative_l2_error: ||a - b||_2 / ||b||_2, how the replica-equivalence tests compare weights
// trained two ways (elementwise relative error blows up on weights near zero).
#pragma once

#include <algorithm>
#include <cmath>
#include <span>

#include "kiln/core/host_tensor.h"

namespace kiln::testing {

inline double relative_l2_error(std::span<const float> a, std::span<const float> b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

inline double relative_l2_error(const HostTensor& a, const HostTensor& b) {
  return relative_l2_error(a.data<float>(), b.data<float>());
}

}  // namespace kiln::testing
