// Bench helpers: one JSON line per figure on stdout, so runs can be collected and compared.
// Benches are never run as timed tests.
#pragma once

#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

namespace kiln::bench {

/// Builds `{"key": value, ...}` and prints it as one line.
class JsonLine {
 public:
  JsonLine& add(std::string_view key, double value) {
    std::ostringstream v;
    v.precision(6);
    v << value;
    return raw(key, v.str());
  }
  JsonLine& add(std::string_view key, int64_t value) { return raw(key, std::to_string(value)); }
  JsonLine& add(std::string_view key, std::string_view value) {
    std::ostringstream quoted;
    quoted << '"';
    for (char c : value) {
      if (c == '"' || c == '\\') quoted << '\\';
      quoted << c;
    }
    quoted << '"';
    return raw(key, quoted.str());
  }
  void print() const { std::cout << "{" << body_.str() << "}" << std::endl; }

 private:
  JsonLine& raw(std::string_view key, const std::string& value) {
    if (!first_) body_ << ", ";
    first_ = false;
    body_ << '"' << key << "\": " << value;
    return *this;
  }
  std::ostringstream body_;
  bool first_ = true;
};

/// Seconds since construction.
class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace kiln::bench
