// str_cat: builds messages from mixed values with ostream formatting (libstdc++ 12 has no
// <format>).
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace kiln {

/// Concatenates the stream forms of all arguments.
template <typename... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

/// Joins the stream forms of a range's elements with `sep`.
template <typename Range>
std::string str_join(const Range& range, const char* sep = ",") {
  std::ostringstream os;
  bool first = true;
  for (const auto& v : range) {
    if (!first) os << sep;
    os << v;
    first = false;
  }
  return os.str();
}

}  // namespace kiln
