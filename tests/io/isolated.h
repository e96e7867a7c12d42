// run_isolated: runs a statement in a forked child with a time limit, so a test can show that
// a loader neither crashes nor hangs on a hostile file without crashing or hanging itself.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "kiln/core/error.h"

namespace kiln::io::testing {

/// How `load` ended in the child: "returned", "IOError: <message>", "<kind>: <message>" for
/// other exceptions, "crashed (signal N)" or "hung (over N s)".
inline std::string run_isolated(const std::function<void()>& load, unsigned timeout_s = 20) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(timeout_s);
    std::string result = "returned";
    try {
      load();
    } catch (const Error& e) {
      result = std::string(e.kind()) + ": " + e.what();
    } catch (const std::exception& e) {
      result = std::string("std::exception: ") + e.what();
    }
    (void)!::write(fds[1], result.data(), result.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return WTERMSIG(status) == SIGALRM ? "hung (over " + std::to_string(timeout_s) + " s)"
                                       : "crashed (signal " + std::to_string(WTERMSIG(status)) + ")";
  return out;
}

}  // namespace kiln::io::testing
