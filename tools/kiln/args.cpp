// Argument splitting for the `kiln` commands.
#include "tools/kiln/args.h"

#include <stdexcept>

#include "kiln/core/check.h"

namespace kiln::cli {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = all_values.find(name);
  return it == all_values.end() ? std::vector<std::string>{} : it->second;
}

int64_t Args::get_positive(const std::string& name, int64_t fallback) const {
  if (!has(name)) return fallback;
  const std::string text = get(name);
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value <= 0)
    KILN_THROW(ValueError, "[kiln] ", name, " expects a positive integer, received '", text, "'.");
  return value;
}

Args parse_args(const std::string& command, const std::vector<std::string>& argv, const ArgSpec& spec) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-') {
      args.positional.push_back(a);
    } else if (spec.flags.contains(a)) {
      args.options[a] = "";
    } else if (spec.value_options.contains(a)) {
      if (i + 1 == argv.size())
        KILN_THROW(ValueError, "[kiln ", command, "] ", a, " needs a value. Hint: kiln ", command, " --help.");
      if (args.has(a) && !spec.repeatable.contains(a))
        KILN_THROW(ValueError, "[kiln ", command, "] ", a, " was given twice. Hint: kiln ", command, " --help.");
      args.options[a] = argv[++i];
      args.all_values[a].push_back(args.options[a]);
    } else {
      KILN_THROW(ValueError, "[kiln ", command, "] unknown option ", a, ". Hint: kiln ", command,
                 " --help lists the options it takes.");
    }
  }
  if (args.positional.size() < spec.min_positional || args.positional.size() > spec.max_positional)
    KILN_THROW(ValueError, "[kiln ", command, "] expected ",
               spec.min_positional == spec.max_positional ? str_cat(spec.min_positional)
                                                          : str_cat(spec.min_positional, " to ", spec.max_positional),
               " path argument(s), received ", args.positional.size(), ". Hint: kiln ", command, " --help.");
  return args;
}

}  // namespace kiln::cli
