// Helpers for pipeline tests: integer datasets and collecting what an iterator yields.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::data::testing {

/// 0, 1, ..., n-1 as i64 scalar elements.
inline Dataset range(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return Dataset::from_tensor_slices({HostTensor::from_vector<int64_t>({n}, v)});
}

/// The scalar of component `c` of an element, as i64.
inline int64_t scalar(const Element& e, size_t c = 0) { return e.at(c).to_vector<int64_t>().at(0); }

/// Pulls up to `limit` elements and returns their first components' scalars.
inline std::vector<int64_t> drain(Iterator& it, int64_t limit = INT64_MAX) {
  std::vector<int64_t> out;
  while (static_cast<int64_t>(out.size()) < limit) {
    std::optional<Element> e = it.next();
    if (!e) break;
    out.push_back(scalar(*e));
  }
  return out;
}

inline std::vector<int64_t> collect(const Dataset& d, int64_t limit = INT64_MAX) {
  Iterator it = d.iterator();
  return drain(it, limit);
}

inline std::vector<int64_t> iota(int64_t begin, int64_t end) {
  std::vector<int64_t> v(static_cast<size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

/// Element x -> x * factor (i64 scalars).
inline MapFn times(int64_t factor) {
  return [factor](Element e) -> Element {
    return HostTensor::scalar<int64_t>(scalar(e) * factor);
  };
}

}  // namespace kiln::data::testing
