// Runs the `kiln` executable the tests were built with (or another command), as a user runs it.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>

namespace kiln::testing {

/// stdout and stderr of the shell command `command`, and its exit status.
inline std::pair<std::string, int> run_command(const std::string& command) {
  std::string out;
  std::FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = pclose(p);
  return {out, WEXITSTATUS(status)};
}

/// stdout and stderr of `kiln <args>`, and its exit status.
inline std::pair<std::string, int> run_kiln(const std::string& args) { return run_command(std::string(KILN_CLI) + " " + args); }

}  // namespace kiln::testing
