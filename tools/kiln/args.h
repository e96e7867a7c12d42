// The arguments of one `kiln` command: its positionals and its --name options, checked against
// what the command takes, so a typo is an error that says what the command accepts.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::cli {

/// What a command takes: options followed by a value, bare flags, and how many positionals.
struct ArgSpec {
  std::set<std::string> value_options;  // "--x" takes the next argument as its value
  std::set<std::string> repeatable;     // value options that may be given more than once ("--y")
  std::set<std::string> flags;          // "--mnist" stands alone
  size_t min_positional = 0;
  size_t max_positional = 0;
};

/// Positionals in order and the options given (a flag's value is "").
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // the last value of each
  std::map<std::string, std::vector<std::string>> all_values;  // every value of a repeatable option, in order

  bool has(const std::string& name) const { return options.contains(name); }
  /// The option's value, or `fallback` when it was not given.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  /// Every value of a repeatable option, in the order given (empty when not given).
  std::vector<std::string> get_all(const std::string& name) const;
  /// The option's value as a positive integer, or `fallback` when it was not given.
  /// ValueError naming the option and the text otherwise.
  int64_t get_positive(const std::string& name, int64_t fallback) const;
};

/// Splits `argv` (the arguments after the command's name) by `spec`. ValueError naming the
/// command and the argument for an unknown option, a missing value or a wrong positional count.
Args parse_args(const std::string& command, const std::vector<std::string>& argv, const ArgSpec& spec);

}  // namespace kiln::cli
